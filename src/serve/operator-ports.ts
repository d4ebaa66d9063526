import type { Config } from '../config.js';
import { startHttpEndpoints, type HttpEndpoints, type MetricsExposition, type Readiness } from '../observe/http-endpoints.js';

/** METRICS_PORT, and PROBE_PORT when set: there no scrape or stranger's connection comes before kubelet's probes. */
export async function startOperatorPorts(
  config: Config,
  readiness: () => Readiness,
  metrics: MetricsExposition,
): Promise<HttpEndpoints & { readonly probePort: number | undefined }> {
  const operator = await startHttpEndpoints({ bindAddress: config.bindAddress, port: config.metricsPort, readiness, metrics });
  let probes: HttpEndpoints | undefined;
  try {
    if (config.probePort !== undefined) probes = await startHttpEndpoints({ bindAddress: config.bindAddress, port: config.probePort, readiness });
  } catch (error) {
    await operator.close();
    throw error;
  }
  return {
    port: operator.port,
    probePort: probes?.port,
    close: async () => {
      await Promise.all([operator.close(), probes?.close()]);
    },
  };
}

import type { Config } from '../config.js';
import { startHttpEndpoints, type HttpEndpoints, type MetricsExposition, type Readiness } from '../observe/http-endpoints.js';

export interface OperatorPorts extends HttpEndpoints {
  /** PROBE_PORT as listened on; undefined when it is unset. */
  readonly probePort: number | undefined;
}

/**
 * METRICS_PORT, and PROBE_PORT when set: /healthz and /readyz again on a listener of their own, so that
 * neither scrapes nor a stranger's connections on METRICS_PORT (in its accept queue or its places)
 * ever come before kubelet's probes.
 */
export async function startOperatorPorts(config: Config, readiness: () => Readiness, metrics: MetricsExposition): Promise<OperatorPorts> {
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

import type { Config } from './config.js';

/** `sitekey-authz serve`: starts the service and resolves once it has shut down. Being written now. */
export async function runServer(config: Config): Promise<void> {
  throw new Error(`serve is not wired yet (grpc port ${config.grpcPort})`);
}

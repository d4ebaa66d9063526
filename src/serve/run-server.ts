import cluster from 'node:cluster';
import { adminConsole } from '../admin/console/console-factory.js';
import { startAdmin } from '../admin/admin-server.js';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../observe/logger.js';
import { startCheckService } from './check-service.js';
import { drainChecks, openServeDatabase, stopRequested } from './lifecycle.js';
import { Resources } from './resources.js';
import { startOperatorPorts } from './operator-ports.js';
import { runCheckWorker, runWorkerPool } from './worker-pool.js';

/**
 * `sitekey-authz serve`: credential snapshot from PostgreSQL, ext_authz over gRPC, operator endpoints
 * over HTTP. Resolves once a SIGTERM or SIGINT has drained and closed everything.
 *
 * With WORKERS above 1 this process is the primary: it holds the database, the operator endpoints and
 * the admin port, and forks the workers that answer checks on the shared gRPC port (serve/worker-pool.ts).
 */
export async function runServer(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<void> {
  if (cluster.isWorker) return runCheckWorker(config, logger);
  if (config.workers > 1) return runWorkerPool(config, logger);

  const stopping = stopRequested(logger);
  const resources = new Resources(logger);
  try {
    const database = resources.add(await openServeDatabase(config, logger), (opened) => opened.close());
    const checks = resources.add(await startCheckService(config, database.url, logger), (service) => service.close());
    const http = resources.add(await startOperatorPorts(config, checks.readiness, checks.metrics), (endpoints) => endpoints.close());
    logger.info({ port: http.port, probePort: http.probePort }, 'operator endpoints listening (/healthz, /readyz, /metrics)');
    if (config.admin !== undefined) resources.add(await startAdmin(config, config.admin, database.url, logger, { console: adminConsole }), (admin) => admin.close());
    checks.followSnapshot();
    // The operator endpoints stay up while the checks drain, so probes and scrapes see it happen.
    await drainChecks(checks, config, await stopping, logger);
  } finally {
    await resources.close();
  }
  logger.info('stopped');
}

import { setTimeout as sleep } from 'node:timers/promises';
import { adminConsole } from '../admin/console/console-factory.js';
import { startAdmin } from '../admin/admin-server.js';
import type { Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { openDatabase, type Database } from '../store/database.js';
import { migrate } from '../store/migrate.js';
import type { CheckService } from './check-service.js';
import type { Resources } from './resources.js';

/** The first SIGTERM or SIGINT, or what `also` resolves with (a worker's stop message from its primary). */
export function stopRequested(logger: Logger, also?: Promise<string>): Promise<string> {
  return new Promise((resolveStop) => {
    let stopped = false;
    const stop = (reason: string) => {
      if (stopped) return;
      stopped = true;
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      logger.info({ signal: reason }, 'shutting down: health NOT_SERVING, finishing in-flight checks');
      resolveStop(reason);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    void also?.then(stop);
  });
}

export async function openServeDatabase(config: Config, logger: Logger): Promise<Database> {
  const database = await openDatabase(config, logger);
  if (config.migrateOnStart) {
    try {
      const applied = await migrate(database.url, logger);
      logger.info({ applied }, applied.length ? 'database migrated' : 'database schema is up to date');
    } catch (error) {
      await database.close();
      throw error;
    }
  }
  return database;
}

/** With ADMIN_ISSUER set: the admin API and console, closed with the process's other resources. */
export async function startAdminPort(
  config: Config,
  databaseUrl: string,
  logger: Logger,
  resources: Resources,
): Promise<void> {
  if (config.admin === undefined) return;
  resources.add(await startAdmin(config, config.admin, databaseUrl, logger, { console: adminConsole }), (admin) => admin.close());
}

/** Answering on for SHUTDOWN_DELAY_SECONDS while Envoy notices NOT_SERVING: refusing sooner would fail requests. */
export async function drainChecks(checks: CheckService, config: Config, signal: string, logger: Logger): Promise<void> {
  checks.beginShutdown();
  if (config.shutdownDelaySeconds > 0) {
    logger.info({ signal, delaySeconds: config.shutdownDelaySeconds }, 'NOT_SERVING; still answering checks until the delay ends');
    await sleep(config.shutdownDelaySeconds * 1000);
  }
  logger.info({ signal }, 'stopping');
  await checks.close();
}

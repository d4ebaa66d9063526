import type pg from 'pg';
import type { AdminSettings, Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { connectionPool } from '../store/database.js';
import { IssuerKeys } from '../token/issuer-keys.js';
import { ADMIN_ROUTES } from './admin-routes.js';
import { startAdminServer, type AdminLimits, type AdminServer } from './admin-server.js';
import { AdminTokenVerifier, BearerAuthenticator } from './admin-token.js';
import type { ConsoleHandler, RequestAuthenticator } from './principal.js';

/** Every wait on the database for one admin request: a change takes its locks, or gives up. */
const ADMIN_QUERY_TIMEOUT_MS = 10_000;
const ADMIN_POOL_SIZE = 4;

/** What the console adds to the admin port: its pages and sign-in, and its session as a way to authenticate. */
export interface ConsoleParts {
  readonly console?: ConsoleHandler;
  readonly authenticator?: RequestAuthenticator;
  close?(): Promise<void>;
}

/** Builds the console from what the API has: the one token verifier (roles and expiry), the settings, the database. */
export type ConsoleFactory = (parts: {
  readonly settings: AdminSettings;
  readonly verifier: AdminTokenVerifier;
  readonly pool: pg.Pool;
  readonly logger: Logger;
}) => Promise<ConsoleParts>;

/**
 * The admin port when ADMIN_ISSUER is set: the issuer's keys (found through its discovery document,
 * fetched in the background: until they are, tokens get 401), a small pool of its own, and the server.
 * Resolves to its closer; the primary process alone runs it.
 */
export async function startAdmin(
  config: Config,
  settings: AdminSettings,
  databaseUrl: string,
  logger: Logger,
  options: { readonly console?: ConsoleFactory; readonly limits?: Partial<AdminLimits> } = {},
): Promise<AdminServer> {
  const adminLogger = logger.child({ component: 'admin' });
  const keys = new IssuerKeys({ issuer: settings.issuer, setting: 'ADMIN_ISSUER', logger: adminLogger });
  void keys.start();
  const pool = connectionPool(databaseUrl, { applicationName: 'sitekey-authz-admin', max: ADMIN_POOL_SIZE, logger: adminLogger, timeoutMs: ADMIN_QUERY_TIMEOUT_MS });
  const verifier = new AdminTokenVerifier(settings, keys);
  let consoleParts: ConsoleParts = {};
  let server: AdminServer;
  try {
    consoleParts = (await options.console?.({ settings, verifier, pool, logger: adminLogger })) ?? {};
    server = await startAdminServer({
      bindAddress: config.bindAddress,
      port: settings.port,
      config,
      pool,
      routes: ADMIN_ROUTES,
      authenticators: [new BearerAuthenticator(verifier, settings.xffTrustedHops), ...(consoleParts.authenticator === undefined ? [] : [consoleParts.authenticator])],
      ...(consoleParts.console === undefined ? {} : { console: consoleParts.console }),
      logger: adminLogger,
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    });
  } catch (error) {
    await consoleParts.close?.();
    await keys.stop();
    await pool.end();
    throw error;
  }
  adminLogger.info({ port: server.port, issuer: settings.issuer, console: consoleParts.console !== undefined }, 'admin API listening (/api/v1)');
  return {
    port: server.port,
    close: async () => {
      await server.close();
      await consoleParts.close?.();
      await keys.stop();
      await pool.end();
    },
  };
}

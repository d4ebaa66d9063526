import type { Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { openServeDatabase, stopRequested } from '../serve/lifecycle.js';
import { Resources } from '../serve/resources.js';
import { AUTHORIZATION_SERVER_METADATA_PATH } from './issuer-http.js';
import type { IssuerSettings } from './issuer-config.js';
import { startIssuer, type RunningIssuer } from './issuer.js';

/**
 * `sitekey-authz issuer`: the database as serve opens it (DATABASE_URL, or the embedded one in
 * DATA_DIR, migrated when MIGRATE_ON_START says so), the issuer on ISSUER_PORT, until SIGTERM or SIGINT.
 */

/** What an operator needs on start: where it is, and what to give serve. Never the registration token, unless made here for trying out. */
export function startBanner(issuer: RunningIssuer, settings: IssuerSettings): string {
  const registrationToken = settings.registrationTokenGenerated ? settings.registrationToken : '<the value of ISSUER_REGISTRATION_TOKEN>';
  const lines = [
    'sitekey-authz issuer: OAuth 2.0 client credentials, RFC 9068 JWT access tokens',
    `  issuer identifier  ${issuer.url}`,
    `  discovery          ${issuer.url}${AUTHORIZATION_SERVER_METADATA_PATH}`,
    `  token endpoint     ${issuer.tokenEndpoint}`,
    `  registration       ${issuer.registrationEndpoint} (RFC 7591, with the initial access token)`,
    `  tokens for         ${settings.resource}, valid ${settings.tokenTtlSeconds} s`,
    '',
    'Give serve (and the token-client commands):',
    `  TOKEN_ISSUER=${issuer.url} TOKEN_AUDIENCE=${settings.resource} TOKEN_REGISTRATION_TOKEN=${registrationToken}`,
  ];
  if (settings.registrationTokenGenerated) {
    lines.push(
      '',
      'FOR TRYING OUT ONLY: ISSUER_REGISTRATION_TOKEN is unset, so the registration token above was made for this run',
      'and changes at the next start. Set ISSUER_REGISTRATION_TOKEN (or _FILE) to keep one.',
    );
  }
  return `${lines.join('\n')}\n`;
}

export async function runIssuer(config: Config, settings: IssuerSettings, logger: Logger): Promise<void> {
  const stopping = stopRequested(logger);
  const resources = new Resources(logger);
  try {
    const database = resources.add(await openServeDatabase(config, logger), (opened) => opened.close());
    const issuer = resources.add(
      await startIssuer({
        databaseUrl: database.url,
        port: settings.port,
        bindAddress: config.bindAddress,
        issuerUrl: settings.url,
        resource: settings.resource,
        registrationToken: settings.registrationToken,
        tokenTtlSeconds: settings.tokenTtlSeconds,
        clientIpSource: config.clientIpSource,
        logger,
      }),
      (running) => running.close(),
    );
    logger.info({ issuer: issuer.url, resource: settings.resource, port: settings.port }, 'issuer listening');
    process.stdout.write(startBanner(issuer, settings));
    await stopping;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`port ${settings.port} is in use: stop what holds it, or pick another with ISSUER_PORT=<port>`);
    }
    throw error;
  } finally {
    await resources.close();
  }
  logger.info('stopped');
}

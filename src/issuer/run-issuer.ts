import type { Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { connectionPool } from '../store/database.js';
import { openServeDatabase, stopRequested } from '../serve/lifecycle.js';
import { Resources } from '../serve/resources.js';
import { AUTHORIZATION_SERVER_METADATA_PATH } from './issuer-http.js';
import type { IssuerSettings } from './issuer-config.js';
import { startIssuer, type RunningIssuer } from './issuer.js';
import { trialRegistrationToken, type TrialRegistrationToken } from './trial-registration-token.js';

/** The trial token is printed if made now or asked for. */
export type BannerToken = { readonly kind: 'set' } | ({ readonly kind: 'trial'; readonly show: boolean } & TrialRegistrationToken);

/** What an operator needs on start: where it is, and what to give serve. */
export function startBanner(issuer: RunningIssuer, settings: IssuerSettings, token: BannerToken): string {
  const shown = token.kind === 'trial' && (token.madeNow || token.show);
  const registrationToken =
    token.kind === 'set' ? '<the value of ISSUER_REGISTRATION_TOKEN>' : shown ? token.token : '<the one printed at the first start on this database>';
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
  if (token.kind === 'trial') {
    lines.push(
      '',
      'FOR TRYING OUT ONLY: ISSUER_REGISTRATION_TOKEN is unset, so the registration token was made at the first start',
      'on this database and is kept in it: every start on the same database takes the same one.',
      shown
        ? 'It is printed only now; `sitekey-authz issuer --show-registration-token` prints it again.'
        : 'To see it again: `sitekey-authz issuer --show-registration-token`. Set ISSUER_REGISTRATION_TOKEN (or _FILE) to choose one.',
    );
  }
  return `${lines.join('\n')}\n`;
}

async function keptTrialToken(databaseUrl: string, logger: Logger): Promise<TrialRegistrationToken> {
  const pool = connectionPool(databaseUrl, { applicationName: 'sitekey-authz-issuer', max: 1, logger, timeoutMs: 5_000 });
  try {
    return await trialRegistrationToken(pool);
  } finally {
    await pool.end();
  }
}

/** `sitekey-authz issuer`: the database as serve opens it, the issuer on ISSUER_PORT, until SIGTERM or SIGINT. */
export async function runIssuer(config: Config, settings: IssuerSettings, logger: Logger, options: { readonly showRegistrationToken: boolean }): Promise<void> {
  const stopping = stopRequested(logger);
  const resources = new Resources(logger);
  try {
    const database = resources.add(await openServeDatabase(config, logger), (opened) => opened.close());
    let registrationToken = settings.registrationToken;
    let bannerToken: BannerToken = { kind: 'set' };
    if (registrationToken === undefined) {
      const trial = await keptTrialToken(database.url, logger);
      registrationToken = trial.token;
      bannerToken = { kind: 'trial', show: options.showRegistrationToken, ...trial };
    }
    const issuer = resources.add(
      await startIssuer({
        databaseUrl: database.url,
        port: settings.port,
        bindAddress: config.bindAddress,
        issuerUrl: settings.url,
        resource: settings.resource,
        registrationToken,
        tokenTtlSeconds: settings.tokenTtlSeconds,
        clientIpSource: config.clientIpSource,
        logger,
      }),
      (running) => running.close(),
    );
    logger.info({ issuer: issuer.url, resource: settings.resource, port: settings.port }, 'issuer listening');
    process.stdout.write(startBanner(issuer, settings, bannerToken));
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

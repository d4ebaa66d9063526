import type pg from 'pg';
import type { AdminSettings } from '../../config.js';
import type { Logger } from '../../observe/logger.js';
import type { ConsoleHandler, RequestAuthenticator } from '../principal.js';
import { ConsoleRoutes } from './console-handler.js';
import { ConsoleSessions, SessionAuthenticator, type AccessTokenVerifier } from './console-sessions.js';
import { RelyingParty } from './relying-party.js';
import { SessionStore } from './session-store.js';
import { SignInCookies } from './sign-in-cookie.js';
import { loadStaticAssets } from './static-assets.js';

export interface ConsoleOptions {
  readonly settings: AdminSettings;
  /** The console client at the provider: ADMIN_OIDC_CLIENT_ID (the console is off without it). */
  readonly clientId: string;
  readonly pool: pg.Pool;
  readonly verifyAccessToken: AccessTokenVerifier;
  readonly logger: Logger;
}

export interface AdminConsole {
  /** The pages, sign-in and assets (every path outside /api/). */
  readonly handler: ConsoleHandler;
  /** The session cookie as a way to call the API; after the Bearer header. */
  readonly authenticator: RequestAuthenticator;
}

const PROVIDER_TIMEOUT_SECONDS = 10;

/** The admin console on the admin port: OpenID Connect sign-in, sessions in PostgreSQL, the pages. */
export async function createConsole(options: ConsoleOptions): Promise<AdminConsole> {
  const { settings } = options;
  const publicUrl = settings.publicUrl.replace(/\/+$/, '');
  const relyingParty = new RelyingParty({
    issuer: new URL(settings.issuer),
    clientId: options.clientId,
    clientSecret: settings.oidcClientSecret,
    redirectUri: `${publicUrl}/auth/callback`,
    postLogoutRedirectUri: `${publicUrl}/auth/signed-out`,
    audience: settings.audience,
    timeoutSeconds: PROVIDER_TIMEOUT_SECONDS,
  });
  const store = new SessionStore(options.pool);
  // ADMIN_PUBLIC_URL is https, or http on loopback only (loadConfig): Secure cookies unless http.
  const cookies = { secure: new URL(publicUrl).protocol === 'https:' };
  const sessions = new ConsoleSessions(store, relyingParty, options.verifyAccessToken, cookies);
  const logger = options.logger.child({ component: 'admin-console' });
  const signIns = new SignInCookies(cookies, () => store.signInKeyMaterial());
  // The key is made now, if this is the first console on the database, so that no sign-in writes it;
  // a database not yet reachable leaves it to the first sign-in.
  await signIns.ready().catch((error: unknown) => logger.warn({ err: error }, 'console sign-in key not read at start; read again at the first sign-in'));
  const handler = new ConsoleRoutes({ publicUrl, store, sessions, signIns, relyingParty, assets: loadStaticAssets(), logger });
  return { handler, authenticator: new SessionAuthenticator(sessions) };
}


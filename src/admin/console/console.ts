import type { ConsoleFactory } from '../admin-server.js';
import { ConsoleRoutes } from './console-handler.js';
import { ConsoleSessions, SessionAuthenticator } from './console-sessions.js';
import { RelyingParty } from './relying-party.js';
import { SessionStore } from './session-store.js';
import { SignInCookies } from './sign-in-cookie.js';
import { loadStaticAssets } from './static-assets.js';

/** The admin console: OpenID Connect sign-in as ADMIN_OIDC_CLIENT_ID, sessions in PostgreSQL, the pages. */
export async function createConsole(
  clientId: string,
  { settings, verifier, pool, logger: adminLogger }: Parameters<ConsoleFactory>[0],
): ReturnType<ConsoleFactory> {
  const publicUrl = settings.publicUrl.replace(/\/+$/, '');
  const relyingParty = new RelyingParty(settings, clientId, publicUrl);
  const store = new SessionStore(pool);
  // ADMIN_PUBLIC_URL is https, or http on loopback only (loadConfig): Secure cookies unless http.
  const cookies = { secure: new URL(publicUrl).protocol === 'https:' };
  const sessions = new ConsoleSessions(store, relyingParty, (accessToken) => verifier.verify(accessToken), cookies);
  const logger = adminLogger.child({ component: 'admin-console' });
  const signIns = new SignInCookies(cookies, () => store.signInKeyMaterial());
  // Made now on a new database, so that no sign-in writes it; an unreachable database leaves it to the first sign-in.
  await signIns.ready().catch((error: unknown) => logger.warn({ err: error }, 'console sign-in key not read at start; read again at the first sign-in'));
  const handler = new ConsoleRoutes({ publicUrl, store, sessions, signIns, relyingParty, assets: loadStaticAssets(), logger });
  return { console: handler, authenticator: new SessionAuthenticator(sessions) };
}

import type { ConsoleFactory } from '../start-admin.js';

/**
 * What the admin port starts the console with: nothing without ADMIN_OIDC_CLIENT_ID (the API alone).
 * The console and openid-client are loaded only then, so a service without it carries neither.
 */
export const adminConsole: ConsoleFactory = async ({ settings, verifier, pool, logger }) => {
  if (settings.oidcClientId === undefined) return {};
  const { createConsole } = await import('./console.js');
  const { handler, authenticator } = await createConsole({
    settings,
    clientId: settings.oidcClientId,
    pool,
    verifyAccessToken: (accessToken) => verifier.verify(accessToken),
    logger,
  });
  return { console: handler, authenticator };
};

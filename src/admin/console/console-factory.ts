import type { ConsoleFactory } from '../admin-server.js';

/** Without ADMIN_OIDC_CLIENT_ID, no console: then neither it nor openid-client is loaded. */
export const adminConsole: ConsoleFactory = async (parts) => {
  const clientId = parts.settings.oidcClientId;
  if (clientId === undefined) return {};
  const { createConsole } = await import('./console.js');
  return createConsole(clientId, parts);
};

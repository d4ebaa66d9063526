import { ADMIN_PEOPLE, startAdminIssuer, type AdminIssuer } from './admin-issuer.js';

/**
 * `make admin-issuer`: the admin tests' OpenID provider on a fixed loopback port, for trying the admin
 * API and console by hand against `make run`. It prints the settings to give the service and an access
 * token for each person (viewer, manager, admin), and runs until Ctrl-C. Its keys live in memory.
 */
const DEFAULT_PORT = 9471;
const ADMIN_PORT = 9465;
const TOKEN_TTL_SECONDS = 3600;

class UsageError extends Error {}

function portFromEnvironment(): number {
  const raw = process.env.ADMIN_ISSUER_PORT;
  if (raw === undefined || raw === '') return DEFAULT_PORT;
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new UsageError(`ADMIN_ISSUER_PORT must be a port number from 1 to 65535 (default ${DEFAULT_PORT}), not "${raw}"`);
  return port;
}

async function instructions(issuer: AdminIssuer): Promise<string> {
  const settings = `ADMIN_ISSUER=${issuer.issuer} ADMIN_AUDIENCE=${issuer.audience} ADMIN_OIDC_CLIENT_ID=${issuer.clientId}`;
  const lines = [
    `Local OpenID provider (oidc-provider) for the admin API at ${issuer.issuer}; console client ${issuer.clientId} (PKCE, no secret)`,
    '',
    'Start the service with:',
    `  ${settings} make run`,
    '',
    `People (sign-in e-mail and password), and an access token for each (valid ${TOKEN_TTL_SECONDS / 60} min):`,
  ];
  for (const [who, person] of Object.entries(ADMIN_PEOPLE)) {
    lines.push(`  ${who}: ${person.email} / ${person.password}, roles ${person.roles.join(', ')}`);
    lines.push(`    TOKEN=${await issuer.tokenFor(person)}`);
  }
  lines.push('', 'Then, for example:', `  curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:${ADMIN_PORT}/api/v1/sites`, '', 'Stop with Ctrl-C.');
  return lines.join('\n');
}

async function main(): Promise<void> {
  const port = portFromEnvironment();
  let issuer: AdminIssuer;
  try {
    issuer = await startAdminIssuer({ port, accessTokenTtlSeconds: TOKEN_TTL_SECONDS, redirectUris: [`http://127.0.0.1:${ADMIN_PORT}/auth/callback`], postLogoutRedirectUris: [`http://127.0.0.1:${ADMIN_PORT}/auth/signed-out`] });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`port ${port} on 127.0.0.1 is in use: stop what holds it, or pick another with ADMIN_ISSUER_PORT=<port>`);
    throw error;
  }
  console.log(await instructions(issuer));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void issuer.close().then(() => console.log('\nlocal admin provider stopped')));
  }
}

main().catch((error: unknown) => {
  console.error(`local-admin-issuer: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});

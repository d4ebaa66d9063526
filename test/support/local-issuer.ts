import { randomBytes } from 'node:crypto';
import { startTestIssuer, type TestIssuer } from './oidc-issuer.js';

/**
 * `node dist/test/support/local-issuer.js`: the test issuer on a fixed loopback port, for trying token
 * authentication by hand against `make run`. One client, `partner-1001`, with a secret made at start;
 * it prints the settings to give the service and a command that mints a token, and runs until Ctrl-C.
 * Its keys live in memory: after a restart, tokens minted before no longer verify.
 */
const DEFAULT_PORT = 9470;
const CLIENT_ID = 'partner-1001';
const TOKEN_TTL_SECONDS = 3600;

function portFromEnvironment(): number {
  const raw = process.env.ISSUER_PORT;
  if (raw === undefined || raw === '') return DEFAULT_PORT;
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw new UsageError(`ISSUER_PORT must be a port number from 1 to 65535 (default ${DEFAULT_PORT}), not "${raw}"`);
  }
  return port;
}

class UsageError extends Error {}

function instructions(issuer: TestIssuer, clientSecret: string): string {
  const settings = `TOKEN_ISSUER=${issuer.issuer} TOKEN_AUDIENCE=${issuer.audience} TOKEN_JWKS_URL=${issuer.jwksUrl}`;
  const mint = `curl -s -u '${CLIENT_ID}:${clientSecret}' -d grant_type=client_credentials --data-urlencode 'resource=${issuer.audience}' ${issuer.tokenEndpoint}`;
  return [
    `Local OpenID provider (oidc-provider) at ${issuer.issuer}, signing RS256 with key ${issuer.signingKid}`,
    `Client: ${CLIENT_ID}   secret: ${clientSecret}   (tokens valid ${TOKEN_TTL_SECONDS / 60} min)`,
    '',
    'Start the service with:',
    `  ${settings} make run`,
    '',
    'Mint an access token (the JSON answer holds it in access_token):',
    `  ${mint}`,
    '',
    'or into a shell variable:',
    `  TOKEN=$(${mint} | node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).access_token")`,
    '',
    'Stop with Ctrl-C.',
  ].join('\n');
}

async function main(): Promise<void> {
  const port = portFromEnvironment();
  const clientSecret = randomBytes(24).toString('base64url');
  let issuer: TestIssuer;
  try {
    issuer = await startTestIssuer({
      clients: [{ clientId: CLIENT_ID, clientSecret }],
      accessTokenTtlSeconds: TOKEN_TTL_SECONDS,
      port,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new UsageError(`port ${port} on 127.0.0.1 is in use: stop what holds it, or pick another with ISSUER_PORT=<port>`);
    }
    throw error;
  }
  console.log(instructions(issuer, clientSecret));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void issuer.close().then(() => console.log('\nlocal issuer stopped'));
    });
  }
}

main().catch((error: unknown) => {
  console.error(`local-issuer: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});

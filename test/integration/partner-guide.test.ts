import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { JWK } from 'jose';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { startIssuer, type RunningIssuer } from '../../src/issuer/issuer.js';
import { certificateAuthority, type Issued } from '../support/certificates.js';
import { startCheckGateway, type CheckGateway } from '../support/check-gateway.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';
import { startThrottlingProxy } from '../support/throttling-proxy.js';
import { startTlsGateway } from '../support/tls-gateway.js';
import type { Handover } from '../../src/token/client-onboarding.js';

const GUIDE_PATH = join(PACKAGE_ROOT, 'docs', 'partner-migration-guide.md');
const SITE_ID = '1001';
const PARTNER_ADDRESS = '203.0.113.7';
const run = promisify(execFile);

const MARK = /<!-- guide-test: ([a-z-]+) -->/g;
/** The snippets this file has run or skipped, to find a marked snippet that nothing runs. */
const covered = new Set<string>();

/** The snippet marked `<!-- guide-test: <name> -->` right before its fence; a missing mark fails the test. */
function snippet(guide: string, name: string): string {
  covered.add(name);
  const marked = new RegExp(`<!-- guide-test: ${name} -->\\n\`\`\`[a-z]*\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(guide);
  assert.ok(marked?.[1], `docs/partner-migration-guide.md has no snippet marked <!-- guide-test: ${name} --> before its fence`);
  return marked[1];
}

/**
 * The authorization server as a partner meets it, and the partner's hand-overs: one client with a
 * secret, one with keys. `issuer` is the issuer identifier, which the hand-over does not hold: the
 * account manager sends it beside it (docs/token-onboarding.md).
 */
interface GuideIssuer {
  readonly issuer: string;
  /** TOKEN_ISSUER, TOKEN_AUDIENCE, TOKEN_REGISTRATION_TOKEN and the test CA's NODE_EXTRA_CA_CERTS: serve's and the CLI's. */
  readonly tokenSettings: Record<string, string>;
  readonly secretClient: Handover & { readonly client_secret: string };
  readonly keyClient: Handover;
  close(): Promise<void>;
}

const RESOURCE = 'https://partner-api.test';
const GUIDE_URL = 'https://developers.partner-api.test/token-guide';
const REGISTRATION_TOKEN = randomBytes(32).toString('base64url');

/**
 * The one place that starts the authorization server the guide's snippets talk to, and onboards the
 * partner on it as an account manager does. `sitekey-authz issuer` (its startIssuer, on the test's
 * database) serves plain http behind a TLS-terminating gateway whose https URL is its ISSUER_URL, as in
 * production; the partner's two clients are made with `token-client create` through the CLI (one with a
 * secret, one with the public keys the guide's own snippet made), and their hand-over JSON is what the
 * snippets get. `cli` runs the CLI with more of the environment; `caFile` holds the test CA.
 */
async function startGuideIssuer(onboarding: {
  readonly databaseUrl: string;
  readonly siteId: string;
  readonly jwksFile: string;
  readonly certificate: Issued;
  readonly cli: (environment: Record<string, string>, ...args: string[]) => Promise<string>;
  readonly caFile: string;
}): Promise<GuideIssuer> {
  const gateway = await startTlsGateway(onboarding.certificate);
  let issuer: RunningIssuer | undefined;
  try {
    issuer = await startIssuer({ databaseUrl: onboarding.databaseUrl, port: 0, issuerUrl: gateway.url, resource: RESOURCE, registrationToken: REGISTRATION_TOKEN });
    gateway.forwardTo(`http://127.0.0.1:${issuer.port}`);
    const tokenSettings = { TOKEN_ISSUER: issuer.url, TOKEN_AUDIENCE: RESOURCE, TOKEN_REGISTRATION_TOKEN: REGISTRATION_TOKEN, NODE_EXTRA_CA_CERTS: onboarding.caFile };
    const create = async (...options: string[]): Promise<Handover> => {
      const handover = JSON.parse(await onboarding.cli(tokenSettings, 'token-client', 'create', onboarding.siteId, ...options, '--json')) as Handover;
      const names = ['client_id', ...(handover.client_secret === undefined ? [] : ['client_secret']), 'token_endpoint', 'resource', 'guide_url'];
      assert.deepEqual(Object.keys(handover), names, 'token-client create --json prints exactly the hand-over');
      return handover;
    };
    await onboarding.cli({}, 'sunset', 'set', '--guide', GUIDE_URL);
    const secretClient = await create('--note', 'partner guide, secret');
    const keyClient = await create('--note', 'partner guide, keys', '--jwks-file', onboarding.jwksFile);
    assert.ok(secretClient.client_secret !== undefined && keyClient.client_secret === undefined, 'a secret for the first client only');
    const running = issuer;
    return {
      issuer: running.url,
      secretClient: { ...secretClient, client_secret: secretClient.client_secret },
      keyClient,
      tokenSettings,
      close: async () => {
        await running.close();
        await gateway.close();
      },
    };
  } catch (error) {
    await issuer?.close();
    await gateway.close();
    throw error;
  }
}

/**
 * The partner guide's own curl, Node.js and Python code, run as a partner would run it (environment
 * variables from the hand-over, files saved under the names the guide gives), against `sitekey-authz
 * issuer` and a real `serve` behind an Envoy stand-in: every snippet must end in an allowed Check, so the guide cannot rot.
 */
describe('the partner migration guide, run as written', () => {
  let guide: string;
  let workDir: string;
  let database: TestDatabase;
  let issuer: GuideIssuer;
  let service: RunningService;
  let gateway: CheckGateway;
  let checkClient: ReturnType<typeof authorizationClient>;
  let partnerEnv: Record<string, string>;
  let testCa: string;

  const cliWith = async (environment: Record<string, string>, ...args: string[]): Promise<string> => {
    const result = await runCli(database.url, args, undefined, environment);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  const cli = (...args: string[]) => cliWith({}, ...args);
  /** Runs a program in the partner's directory with the hand-over in its environment; its standard output. */
  const partner = async (command: string, args: readonly string[], env: Record<string, string> = {}): Promise<string> =>
    (await run(command, args, { cwd: workDir, env: { ...partnerEnv, ...env }, timeout: 60_000 })).stdout;
  const node = (script: string, env?: Record<string, string>) => partner(process.execPath, ['--input-type=module', '-e', script], env);
  /** What the service answers for this token, sent from the partner's address as Envoy sends a Check. */
  const checkToken = async (token: string) => {
    const response = await check(checkClient, { authorization: `Bearer ${token}`, ip: PARTNER_ADDRESS });
    const clientId = response.dynamic_metadata?.fields.client_id;
    return { verdict: verdict(response), clientId: clientId?.stringValue ?? clientId?.string_value };
  };
  const ALLOWED = JSON.stringify({ accepted: true, siteId: SITE_ID });
  const hasPython = (): Promise<boolean> => run('python3', ['--version']).then(() => true, () => false);

  /** The token a program prints, got through a token endpoint that first answers 429 with Retry-After: 1. */
  async function throughRateLimit(program: () => Promise<string>): Promise<{ token: string; requests: number; waitedMs: number }> {
    const proxy = await startThrottlingProxy(issuer.secretClient.token_endpoint, testCa, { refusals: 1, retryAfterSeconds: 1 });
    const previous = partnerEnv.TOKEN_ENDPOINT;
    partnerEnv = { ...partnerEnv, TOKEN_ENDPOINT: proxy.url };
    try {
      const started = performance.now();
      const token = await program();
      return { token, requests: proxy.requests, waitedMs: performance.now() - started };
    } finally {
      partnerEnv = { ...partnerEnv, TOKEN_ENDPOINT: previous ?? '' };
      await proxy.close();
    }
  }

  before(async () => {
    guide = await readFile(GUIDE_PATH, 'utf8');
    workDir = await mkdtemp(join(tmpdir(), 'partner-guide-'));
    // The partner's project has installed jose and openid-client (the guide says so where it uses them).
    await symlink(join(PACKAGE_ROOT, 'node_modules'), join(workDir, 'node_modules'));
    const authority = await certificateAuthority('partner-guide test CA');
    testCa = authority.cert;
    const caFile = join(workDir, 'ca.pem');
    await writeFile(caFile, authority.cert);
    partnerEnv = { PATH: process.env.PATH ?? '', HOME: workDir, NODE_EXTRA_CA_CERTS: caFile, CURL_CA_BUNDLE: caFile, SSL_CERT_FILE: caFile };

    // The partner makes its key pair with the guide's own code, and sends the public half.
    await writeFile(join(workDir, 'make-keys.mjs'), snippet(guide, 'node-make-keys'));
    await partner(process.execPath, ['make-keys.mjs']);
    const jwksFile = join(workDir, 'jwks.json');
    const jwks = JSON.parse(await readFile(jwksFile, 'utf8')) as { keys: JWK[] };
    assert.ok(jwks.keys.every((key) => key.d === undefined), 'jwks.json holds public keys only');

    database = await freshDatabase();
    await cli('site', 'add', SITE_ID);
    await cli('ip', 'allow', SITE_ID, '203.0.113.0/24');
    issuer = await startGuideIssuer({
      databaseUrl: database.url,
      siteId: SITE_ID,
      jwksFile,
      certificate: await authority.issue('issuer gateway', 'server'),
      cli: cliWith,
      caFile,
    });
    // No TOKEN_JWKS_URL: serve finds the keys from TOKEN_ISSUER's discovery document, over https.
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', ...issuer.tokenSettings });
    checkClient = authorizationClient(service.grpcTarget);
    gateway = await startCheckGateway(service.grpcTarget, PARTNER_ADDRESS);
    // The hand-over, in the environment variables the guide reads it from; ISSUER as the account manager sends it.
    const handover = issuer.secretClient;
    partnerEnv = {
      ...partnerEnv,
      TOKEN_ENDPOINT: handover.token_endpoint,
      CLIENT_ID: handover.client_id,
      CLIENT_SECRET: handover.client_secret,
      RESOURCE: handover.resource,
      ISSUER: issuer.issuer,
      API_URL: gateway.url,
    };
  });

  after(async () => {
    checkClient?.close();
    await gateway?.close();
    await service?.stop();
    await issuer?.close();
    await database?.drop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it('curl: the token command gets a token the service allows, and the request command is let through with it', async () => {
    const script = `${snippet(guide, 'curl-token')}\nprintf '%s' "$TOKEN" > token.txt\n${snippet(guide, 'curl-request')}`;
    const answer = await partner('bash', ['-e', '-o', 'pipefail', '-c', script]);
    assert.equal(answer, ALLOWED);
    const token = await readFile(join(workDir, 'token.txt'), 'utf8');
    assert.deepEqual(await checkToken(token), { verdict: 'allow', clientId: issuer.secretClient.client_id });
  });

  it('lists in "What you receive" each value of the hand-over that token-client create prints, by its name', () => {
    const start = guide.indexOf('## What you receive');
    const received = guide.slice(start, guide.indexOf('\n## ', start + 1));
    const listed = [...received.matchAll(/^\| `([a-z_]+)` \|/gm)].map(([, name]) => name);
    assert.deepEqual(listed, Object.keys(issuer.secretClient));
  });

  it("curl: the issuer identifier's discovery document names it and the hand-over's token endpoint, as the guide says to check", async () => {
    const answer = await partner('bash', ['-e', '-o', 'pipefail', '-c', snippet(guide, 'curl-issuer')]);
    assert.deepEqual(JSON.parse(answer), { issuer: partnerEnv.ISSUER, token_endpoint: partnerEnv.TOKEN_ENDPOINT });
  });

  it('Node.js: token.mjs gets a token the service allows, hands the same one to every caller, and order.mjs is let through', async () => {
    await writeFile(join(workDir, 'token.mjs'), snippet(guide, 'node-token'));
    await writeFile(join(workDir, 'order.mjs'), snippet(guide, 'node-request'));
    assert.equal((await partner(process.execPath, ['order.mjs'])).trim(), ALLOWED);

    const reused = JSON.parse(
      await node(`import { accessToken } from './token.mjs';
        const together = await Promise.all([accessToken(), accessToken(), accessToken()]);
        const later = await accessToken();
        process.stdout.write(JSON.stringify([...together, later]));`),
    ) as string[];
    assert.equal(new Set(reused).size, 1, 'one token for concurrent and later callers, not one per request');
    assert.deepEqual(await checkToken(reused[0]!), { verdict: 'allow', clientId: issuer.secretClient.client_id });
  });

  it('Node.js with openid-client: the token it gets is allowed', async () => {
    await writeFile(join(workDir, 'token-openid-client.mjs'), snippet(guide, 'node-openid-client'));
    const token = await node(`import { accessToken } from './token-openid-client.mjs'; process.stdout.write(await accessToken());`);
    assert.deepEqual(await checkToken(token), { verdict: 'allow', clientId: issuer.secretClient.client_id });
  });

  it('Node.js with private_key_jwt: token.mjs with its clientAuthentication replaced gets a token for the key client, allowed', async () => {
    const secretAuthentication = /async function clientAuthentication\(\) \{[\s\S]*?\n\}\n/;
    const withSecret = snippet(guide, 'node-token');
    assert.match(withSecret, secretAuthentication, 'token.mjs has the clientAuthentication function the guide says to replace');
    await writeFile(join(workDir, 'token-keys.mjs'), withSecret.replace(secretAuthentication, `${snippet(guide, 'node-private-key-jwt')}\n`));
    const token = await node(`import { accessToken } from './token-keys.mjs'; process.stdout.write(await accessToken());`, {
      CLIENT_ID: issuer.keyClient.client_id,
      CLIENT_SECRET: '',
      TOKEN_ENDPOINT: issuer.keyClient.token_endpoint,
      PRIVATE_KEY_FILE: join(workDir, 'private-key.json'),
    });
    assert.deepEqual(await checkToken(token), { verdict: 'allow', clientId: issuer.keyClient.client_id });
  });

  it('Python: partner_token.py gets a token and the request script is let through', async (context) => {
    if (!(await hasPython())) {
      ['python-token', 'python-request'].forEach((name) => covered.add(name));
      return context.skip('python3 is not installed');
    }
    await writeFile(join(workDir, 'partner_token.py'), snippet(guide, 'python-token'));
    await writeFile(join(workDir, 'order.py'), snippet(guide, 'python-request'));
    assert.equal((await partner('python3', ['order.py'])).trim(), ALLOWED);
  });

  it('Node.js: token.mjs waits out a 429 of the token endpoint as Retry-After says, then gets a token that is allowed', async () => {
    await writeFile(join(workDir, 'token.mjs'), snippet(guide, 'node-token'));
    const got = await throughRateLimit(() => node(`import { accessToken } from './token.mjs'; process.stdout.write(await accessToken());`));
    assert.equal(got.requests, 2, 'one refused request, one retry');
    assert.ok(got.waitedMs >= 1_000, `waited ${Math.round(got.waitedMs)} ms, less than the Retry-After of 1 s`);
    assert.deepEqual(await checkToken(got.token), { verdict: 'allow', clientId: issuer.secretClient.client_id });
  });

  it('Python: partner_token.py waits out a 429 of the token endpoint as Retry-After says, then gets a token that is allowed', async (context) => {
    if (!(await hasPython())) return context.skip('python3 is not installed');
    await writeFile(join(workDir, 'partner_token.py'), snippet(guide, 'python-token'));
    const got = await throughRateLimit(() => partner('python3', ['-c', 'import sys; from partner_token import access_token; sys.stdout.write(access_token())']));
    assert.equal(got.requests, 2, 'one refused request, one retry');
    assert.ok(got.waitedMs >= 1_000, `waited ${Math.round(got.waitedMs)} ms, less than the Retry-After of 1 s`);
    assert.deepEqual(await checkToken(got.token), { verdict: 'allow', clientId: issuer.secretClient.client_id });
  });

  it('runs every snippet the guide marks (after the others: it checks what they ran)', () => {
    const marked = [...guide.matchAll(MARK)].map(([, name = '']) => name);
    assert.deepEqual(marked.filter((name) => !covered.has(name)), [], 'marked in the guide, but no test here runs it');
    assert.equal(new Set(marked).size, marked.length, 'each mark names one snippet');
  });
});

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
import { certificateAuthority } from '../support/certificates.js';
import { startCheckGateway, type CheckGateway } from '../support/check-gateway.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { startTestIssuer, type TestIssuerClient, type TestIssuerKeyClient } from '../support/oidc-issuer.js';
import { runCli, startService, type RunningService } from '../support/service.js';
import { startThrottlingProxy } from '../support/throttling-proxy.js';

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

/** The authorization server as a partner meets it, and the partner's hand-overs: one client with a secret, one with keys. */
interface GuideIssuer {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly resource: string;
  readonly jwksUrl: string;
  readonly secretClient: { readonly clientId: string; readonly clientSecret: string };
  readonly keyClientId: string;
  close(): Promise<void>;
}

/**
 * The one place that starts the authorization server the guide's snippets talk to (over https, as a
 * partner's is) and onboards the partner on it: a client_secret_basic client, and a private_key_jwt
 * client with the partner's public keys, both registered to the site with `cli`. Swap it for the
 * product issuer and `token-client create`, and the rest of the test stays as it is.
 */
async function startGuideIssuer(onboarding: {
  readonly siteId: string;
  readonly partnerJwks: { readonly keys: readonly JWK[] };
  readonly tls: { readonly cert: string; readonly key: string; readonly ca: string };
  readonly cli: (...args: string[]) => Promise<void>;
}): Promise<GuideIssuer> {
  const secretClient: TestIssuerClient = { clientId: `partner-${onboarding.siteId}`, clientSecret: randomBytes(24).toString('base64url') };
  const keyClient: TestIssuerKeyClient = { clientId: `partner-${onboarding.siteId}-keys`, jwks: onboarding.partnerJwks };
  const issuer = await startTestIssuer({ clients: [secretClient], keyClients: [keyClient], tls: onboarding.tls, accessTokenTtlSeconds: 600 });
  try {
    await onboarding.cli('token-client', 'add', onboarding.siteId, secretClient.clientId);
    await onboarding.cli('token-client', 'add', onboarding.siteId, keyClient.clientId);
  } catch (error) {
    await issuer.close();
    throw error;
  }
  return {
    issuer: issuer.issuer,
    tokenEndpoint: issuer.tokenEndpoint,
    resource: issuer.audience,
    jwksUrl: issuer.jwksUrl,
    secretClient,
    keyClientId: keyClient.clientId,
    close: () => issuer.close(),
  };
}

/**
 * The partner guide's own curl, Node.js and Python code, run as a partner would run it (environment
 * variables from the hand-over, files saved under the names the guide gives), against a real issuer and
 * a real `serve` behind an Envoy stand-in: every snippet must end in an allowed Check, so the guide cannot rot.
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

  const cli = async (...args: string[]): Promise<void> => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
  };
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
    const proxy = await startThrottlingProxy(issuer.tokenEndpoint, testCa, { refusals: 1, retryAfterSeconds: 1 });
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
    const trustTestCa = { NODE_EXTRA_CA_CERTS: caFile, CURL_CA_BUNDLE: caFile, SSL_CERT_FILE: caFile };
    partnerEnv = { PATH: process.env.PATH ?? '', HOME: workDir, ...trustTestCa };

    // The partner makes its key pair with the guide's own code, and sends the public half.
    await writeFile(join(workDir, 'make-keys.mjs'), snippet(guide, 'node-make-keys'));
    await partner(process.execPath, ['make-keys.mjs']);
    const jwks = JSON.parse(await readFile(join(workDir, 'jwks.json'), 'utf8')) as { keys: JWK[] };
    assert.ok(jwks.keys.every((key) => key.d === undefined), 'jwks.json holds public keys only');

    database = await freshDatabase();
    await cli('site', 'add', SITE_ID);
    await cli('ip', 'allow', SITE_ID, '203.0.113.0/24');
    const tls = { ...(await authority.issue('issuer', 'server')), ca: authority.cert };
    issuer = await startGuideIssuer({ siteId: SITE_ID, partnerJwks: jwks, tls, cli });
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      TOKEN_ISSUER: issuer.issuer,
      TOKEN_AUDIENCE: issuer.resource,
      TOKEN_JWKS_URL: issuer.jwksUrl,
      NODE_EXTRA_CA_CERTS: caFile,
    });
    checkClient = authorizationClient(service.grpcTarget);
    gateway = await startCheckGateway(service.grpcTarget, PARTNER_ADDRESS);
    partnerEnv = {
      ...partnerEnv,
      TOKEN_ENDPOINT: issuer.tokenEndpoint,
      CLIENT_ID: issuer.secretClient.clientId,
      CLIENT_SECRET: issuer.secretClient.clientSecret,
      RESOURCE: issuer.resource,
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
    assert.deepEqual(await checkToken(token), { verdict: 'allow', clientId: issuer.secretClient.clientId });
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
    assert.deepEqual(await checkToken(reused[0]!), { verdict: 'allow', clientId: issuer.secretClient.clientId });
  });

  it('Node.js with openid-client: the token it gets is allowed', async () => {
    await writeFile(join(workDir, 'token-openid-client.mjs'), snippet(guide, 'node-openid-client'));
    const token = await node(`import { accessToken } from './token-openid-client.mjs'; process.stdout.write(await accessToken());`);
    assert.deepEqual(await checkToken(token), { verdict: 'allow', clientId: issuer.secretClient.clientId });
  });

  it('Node.js with private_key_jwt: token.mjs with its clientAuthentication replaced gets a token for the key client, allowed', async () => {
    const secretAuthentication = /async function clientAuthentication\(\) \{[\s\S]*?\n\}\n/;
    const withSecret = snippet(guide, 'node-token');
    assert.match(withSecret, secretAuthentication, 'token.mjs has the clientAuthentication function the guide says to replace');
    await writeFile(join(workDir, 'token-keys.mjs'), withSecret.replace(secretAuthentication, `${snippet(guide, 'node-private-key-jwt')}\n`));
    const token = await node(`import { accessToken } from './token-keys.mjs'; process.stdout.write(await accessToken());`, {
      CLIENT_ID: issuer.keyClientId,
      CLIENT_SECRET: '',
      PRIVATE_KEY_FILE: join(workDir, 'private-key.json'),
    });
    assert.deepEqual(await checkToken(token), { verdict: 'allow', clientId: issuer.keyClientId });
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
    assert.deepEqual(await checkToken(got.token), { verdict: 'allow', clientId: issuer.secretClient.clientId });
  });

  it('Python: partner_token.py waits out a 429 of the token endpoint as Retry-After says, then gets a token that is allowed', async (context) => {
    if (!(await hasPython())) return context.skip('python3 is not installed');
    await writeFile(join(workDir, 'partner_token.py'), snippet(guide, 'python-token'));
    const got = await throughRateLimit(() => partner('python3', ['-c', 'import sys; from partner_token import access_token; sys.stdout.write(access_token())']));
    assert.equal(got.requests, 2, 'one refused request, one retry');
    assert.ok(got.waitedMs >= 1_000, `waited ${Math.round(got.waitedMs)} ms, less than the Retry-After of 1 s`);
    assert.deepEqual(await checkToken(got.token), { verdict: 'allow', clientId: issuer.secretClient.clientId });
  });

  it('runs every snippet the guide marks (after the others: it checks what they ran)', () => {
    const marked = [...guide.matchAll(MARK)].map(([, name = '']) => name);
    assert.deepEqual(marked.filter((name) => !covered.has(name)), [], 'marked in the guide, but no test here runs it');
    assert.equal(new Set(marked).size, marked.length, 'each mark names one snippet');
  });
});

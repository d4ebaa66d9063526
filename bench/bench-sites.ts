import { randomUUID } from 'node:crypto';
import { maskApiKey } from '../src/decision/api-key.js';
import pg from 'pg';
import { runCli } from '../test/support/service.js';
import type { BenchIssuer } from './bench-issuer.js';
import { BENCH_CLIENT_IP, encodeCheckRequest, partnerBody, tokenRequestBody, type BenchRequest } from './check-requests.js';
import { seedFillerSites } from './filler-sites.js';

/** Sites in the bench's database: the filler, the partner the allowed request comes from, and one in a brownout. */
export const BENCH_SITES = 10_000;
const PARTNER_SITE = String(BENCH_SITES - 1);
const BROWNOUT_SITE = String(BENCH_SITES);
/** A filler site: its allowlist does not hold the bench's client address. */
const OTHER_SITE = '17';
const UNKNOWN_SITE = '424242';
/** The partner's OAuth client: its tokens authenticate as the partner site. */
const PARTNER_TOKEN_CLIENT = 'bench-partner';
/** A body of 64 KiB, for the large-body run. */
export const LARGE_BODY_BYTES = 64 * 1024;

export interface BenchCredentials {
  readonly siteId: string;
  readonly keyId: string;
  readonly tokenClient: string;
  /** The masked key the 102 of the wrong-key request quotes. */
  readonly maskedWrongKey: string;
  readonly requests: {
    readonly allow: BenchRequest;
    /** The allowed request with a Bearer token of the partner's client instead of its key. */
    readonly allowToken: BenchRequest;
    readonly allowLargeBody: BenchRequest;
    /** One request per error id, in the precedence order of decide(). */
    readonly denials: readonly BenchRequest[];
  };
}

async function cli(databaseUrl: string, args: readonly string[]): Promise<string> {
  const result = await runCli(databaseUrl, ['--actor', 'bench', ...args]);
  if (result.code !== 0) throw new Error(`sitekey-authz ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return result.stdout;
}

async function issueKey(databaseUrl: string, siteId: string): Promise<{ apiKey: string; keyId: string }> {
  return JSON.parse(await cli(databaseUrl, ['key', 'issue', siteId, '--json'])) as { apiKey: string; keyId: string };
}

/**
 * Seeds the bench's database: BENCH_SITES - 2 filler sites in bulk, then, through the CLI as an operator
 * would, the partner site (allowlisting the bench's client address among others, with a key) and a site
 * of the same kind in a running brownout (for 105), and the partner's token client of `issuer`. Returns
 * the requests the bench sends, each with the verdict it must get.
 */
export async function seedBenchSites(databaseUrl: string, issuer: BenchIssuer): Promise<BenchCredentials> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await seedFillerSites(pool, BENCH_SITES - 2);
  } finally {
    await pool.end();
  }
  await cli(databaseUrl, ['site', 'add', PARTNER_SITE, '--name', 'bench partner']);
  await cli(databaseUrl, ['ip', 'allow', PARTNER_SITE, `${BENCH_CLIENT_IP}/32`, '203.0.113.0/24', '2001:db8:42::/48']);
  const partner = await issueKey(databaseUrl, PARTNER_SITE);
  await cli(databaseUrl, ['token-client', 'add', PARTNER_SITE, PARTNER_TOKEN_CLIENT, '--note', 'bench partner']);
  const token = await issuer.mint(PARTNER_TOKEN_CLIENT);
  await cli(databaseUrl, ['site', 'add', BROWNOUT_SITE, '--name', 'bench partner in a brownout']);
  await cli(databaseUrl, ['ip', 'allow', BROWNOUT_SITE, `${BENCH_CLIENT_IP}/32`]);
  const brownedOut = await issueKey(databaseUrl, BROWNOUT_SITE);
  const from = new Date(Date.now() - 60_000).toISOString();
  const until = new Date(Date.now() + 24 * 3_600_000).toISOString();
  await cli(databaseUrl, ['brownout', 'add', '--from', from, '--until', until, '--site', BROWNOUT_SITE, '--note', 'bench: 105']);

  const request = (name: string, expected: BenchRequest['expected'], authorization: string | undefined, body: string): BenchRequest => ({
    name,
    expected,
    message: encodeCheckRequest({ ...(authorization === undefined ? {} : { authorization }), body }),
  });
  const key = partner.apiKey;
  const stranger = randomUUID();
  return {
    siteId: PARTNER_SITE,
    keyId: partner.keyId,
    tokenClient: PARTNER_TOKEN_CLIENT,
    maskedWrongKey: maskApiKey(stranger),
    requests: {
      allow: request('allow', 'allow', `${PARTNER_SITE}:${key}`, partnerBody(PARTNER_SITE, key)),
      allowToken: request('allow-token', 'allow', `Bearer ${token}`, tokenRequestBody()),
      allowLargeBody: request('allow-64k', 'allow', `${PARTNER_SITE}:${key}`, partnerBody(PARTNER_SITE, key, LARGE_BODY_BYTES)),
      denials: [
        request('deny-108', 108, undefined, partnerBody(PARTNER_SITE, key)),
        request('deny-101', 101, `${UNKNOWN_SITE}:${stranger}`, partnerBody(UNKNOWN_SITE, stranger)),
        request('deny-103', 103, `${OTHER_SITE}:${stranger}`, partnerBody(OTHER_SITE, stranger)),
        request('deny-102', 102, `${PARTNER_SITE}:${stranger}`, partnerBody(PARTNER_SITE, stranger)),
        request('deny-104', 104, `${PARTNER_SITE}:${key}`, partnerBody(BROWNOUT_SITE, key)),
        request('deny-105', 105, `${BROWNOUT_SITE}:${brownedOut.apiKey}`, partnerBody(BROWNOUT_SITE, brownedOut.apiKey)),
      ],
    },
  };
}

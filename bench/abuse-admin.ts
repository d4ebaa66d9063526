import { Agent, get } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePorts } from '../src/embedded/embedded-postgres.js';
import { startAdminIssuer, type AdminIssuer } from '../test/support/admin-issuer.js';
import { PAGE_HEADERS } from '../test/support/console-session.js';
import { getOnNewConnection, newTokenFlood, slowLoris, type Attack } from '../test/support/operator-attacks.js';
import { runCli } from '../test/support/service.js';
import { tableRow, type Row } from './abuse-watch.js';
import type { BenchIssuer } from './bench-issuer.js';
import { startServe, type BenchServer } from './server-process.js';

/*
 * The rows of the abuse benchmark at the admin port, and the serve they share: one with the admin
 * API and console on (a real OpenID provider on loopback, test/support/admin-issuer.ts) and partner
 * tokens on (the bench's issuer), for the forged-token row too.
 */

/** The tables a console sign-in writes: none may gain or lose a row before someone signs in. */
const CONSOLE_TABLES = ['admin_console_sign_ins', 'admin_console_sessions'] as const;
const ADMIN_READY_WITHIN_MS = 30_000;

export interface IssuedServe {
  readonly serve: BenchServer;
  /** http://127.0.0.1:<ADMIN_PORT>, also ADMIN_PUBLIC_URL. */
  readonly adminBase: string;
  readonly admin: AdminIssuer;
  close(): Promise<void>;
}

/** serve with the admin port, its console and partner tokens of `issuer`, once the admin port answers; `clientId` registered to `siteId` first. */
export async function startIssuedServe(options: {
  readonly databaseUrl: string;
  readonly workDir: string;
  readonly nodeArguments: readonly string[];
  readonly issuer: BenchIssuer;
  readonly siteId: string;
  readonly clientId: string;
}): Promise<IssuedServe> {
  const added = await runCli(options.databaseUrl, ['--actor', 'bench', 'token-client', 'add', options.siteId, options.clientId, '--note', 'abuse bench partner']);
  if (added.code !== 0) throw new Error(`token-client add failed (${added.code}): ${added.stderr}`);
  const [adminPort = 0] = await freePorts(1);
  const adminBase = `http://127.0.0.1:${adminPort}`;
  const admin = await startAdminIssuer({ redirectUris: [`${adminBase}/auth/callback`] });
  let serve: BenchServer | undefined;
  try {
    serve = await startServe({
      name: 'serve-abuse-issued',
      databaseUrl: options.databaseUrl,
      workDir: options.workDir,
      env: {
        LOG_LEVEL: 'warn',
        ...options.issuer.env,
        ...admin.env(),
        ADMIN_PORT: String(adminPort),
        ADMIN_PUBLIC_URL: adminBase,
        ADMIN_OIDC_CLIENT_ID: admin.clientId,
      },
      nodeArguments: options.nodeArguments,
    });
    for (const deadline = performance.now() + ADMIN_READY_WITHIN_MS; (await getOnNewConnection(`${adminBase}/api/v1/openapi.json`, {})) !== 200; await sleep(100)) {
      if (performance.now() > deadline) throw new Error(`the admin port did not answer within ${ADMIN_READY_WITHIN_MS / 1000} s`);
    }
  } catch (error) {
    await serve?.stop();
    await admin.close();
    throw error;
  }
  const started = serve;
  return {
    serve: started,
    adminBase,
    admin,
    close: async () => {
      await started.stop();
      await admin.close();
    },
  };
}

interface StaffAnswer {
  readonly status: number | string;
  readonly ms: number;
}

/** One staff request on a new connection every `everyMs`, one per token, while `launch`'s attack runs (from 1.5 s in). */
async function staffDuring(url: string, tokens: readonly string[], everyMs: number, launch: () => Attack): Promise<{ answers: StaffAnswer[]; attack: string }> {
  const attack = launch();
  try {
    await sleep(1_500);
    const answers: Array<Promise<StaffAnswer>> = [];
    for (const token of tokens) {
      const sentMs = performance.now();
      answers.push(getOnNewConnection(url, { authorization: `Bearer ${token}` }).then((status) => ({ status, ms: performance.now() - sentMs })));
      await sleep(everyMs);
    }
    return { answers: await Promise.all(answers), attack: attack.describe() };
  } finally {
    attack.stop();
  }
}

function staffText(answers: readonly StaffAnswer[]): string {
  const statuses = new Map<string, number>();
  for (const { status } of answers) statuses.set(String(status), (statuses.get(String(status)) ?? 0) + 1);
  const slowest = answers.reduce((most, answer) => Math.max(most, answer.ms), 0);
  return `staff answered ${[...statuses].map(([status, n]) => `${n} × ${status}`).join(', ')}, slowest in ${Math.round(slowest)} ms`;
}

const allOk = (answers: readonly StaffAnswer[]) => answers.length > 0 && answers.every((answer) => answer.status === 200);

/** `staff` people each with a fresh token never sent before, one every 150 ms, while `perSecond` new junk tokens a second come from `stranger`. */
export async function adminJunkTokens(issued: IssuedServe, stranger: string, perSecond: number, staff: number): Promise<Row> {
  const me = `${issued.adminBase}/api/v1/me`;
  const people = ['viewer', 'manager', 'admin'] as const;
  const tokens: string[] = [];
  for (let i = 0; i < staff; i++) tokens.push(await issued.admin.tokenFor(people[i % people.length] ?? 'viewer'));
  const { answers, attack } = await staffDuring(me, tokens, 150, () => newTokenFlood(me, issued.admin, perSecond, stranger));
  const refused = answers.filter((answer) => answer.status === 429).length;
  return tableRow(
    `${perSecond} new junk tokens a second at the admin port from ${stranger} (half \`Bearer x1\`, \`x2\`, …, half the provider's kid under a made-up signature), ${staff} staff with fresh valid tokens`,
    `${refused} of ${answers.length} staff requests got 429; ${staffText(answers)}; flood: ${attack}`,
    'no staff request refused (0 got 429), every one answered 200',
    refused === 0 && allOk(answers),
  );
}

/** `requests` staff requests, one every 100 ms on new connections, while `connections` slow-loris connections from `stranger` hold the admin port. */
export async function adminLoris(issued: IssuedServe, stranger: string, connections: number, requests: number): Promise<Row> {
  const token = await issued.admin.tokenFor('viewer');
  const { answers, attack } = await staffDuring(`${issued.adminBase}/api/v1/me`, Array.from({ length: requests }, () => token), 100, () => slowLoris(issued.adminBase, connections, stranger));
  return tableRow(
    `slow-loris on the admin port from ${stranger}, ${connections} connections dripping headers, reconnecting`,
    `${staffText(answers)}; ${attack}`,
    `every staff request answered 200, as on the operator port (${requests} of ${requests})`,
    allOk(answers),
  );
}

/** Rows of the console's tables, and the tuples ever inserted into them, as the statistics collector has them. */
async function consoleWrites(pool: pg.Pool): Promise<{ rows: number; inserted: number }> {
  let rows = 0;
  for (const table of CONSOLE_TABLES) rows += Number((await pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]?.n ?? 0);
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows: stats } = await client.query<{ n: string | null }>('SELECT sum(n_tup_ins)::text AS n FROM pg_stat_user_tables WHERE relname = ANY($1)', [CONSOLE_TABLES]);
    return { rows, inserted: Number(stats[0]?.n ?? 0) };
  } finally {
    client.release();
  }
}

/** Console page loads by someone not signed in, `concurrency` at a time from `stranger`, each one starting a sign-in. */
function pageLoads(consoleBase: string, stranger: string, concurrency: number): Attack {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const answers = new Map<number | string, number>();
  let attacking = true;
  let sent = 0;
  const load = (): void => {
    if (!attacking) return;
    sent += 1;
    const count = (status: number | string) => {
      answers.set(status, (answers.get(status) ?? 0) + 1);
      setImmediate(load);
    };
    const request = get(`${consoleBase}/`, { agent, localAddress: stranger, headers: PAGE_HEADERS }, (response) => {
      response.resume();
      response.on('end', () => count(response.statusCode ?? 0));
    });
    request.on('error', (error: NodeJS.ErrnoException) => count(error.code ?? 'error'));
  };
  for (let i = 0; i < concurrency; i++) load();
  return {
    describe: () => `${sent.toLocaleString('en')} page loads sent, answered ${[...answers].map(([status, n]) => `${n.toLocaleString('en')} × ${status}`).join(', ')}`,
    stop: () => {
      attacking = false;
      agent.destroy();
    },
  };
}

/** Page loads of the console by strangers for `attackMs`, while staff use the admin API every 250 ms: what the console's tables gained. */
export async function signInFlood(issued: IssuedServe, pool: pg.Pool, stranger: string, attackMs: number): Promise<Row> {
  const token = await issued.admin.tokenFor('manager');
  const before = await consoleWrites(pool);
  const staffRequests = Math.floor((attackMs - 1_500) / 250);
  const { answers, attack } = await staffDuring(`${issued.adminBase}/api/v1/me`, Array.from({ length: staffRequests }, () => token), 250, () => pageLoads(issued.adminBase, stranger, 16));
  // Backends report their statistics within a second of a transaction; counted rows need no wait.
  await sleep(2_000);
  const after = await consoleWrites(pool);
  const gained = after.rows - before.rows;
  const inserted = after.inserted - before.inserted;
  return tableRow(
    `unauthenticated console page loads from ${stranger}, 16 at a time for ${attackMs / 1000} s, each starting a sign-in`,
    `${attack}; ${CONSOLE_TABLES.join(' and ')}: ${gained} rows gained, ${inserted} tuples inserted; ${staffText(answers)}`,
    'nothing written to the database (0 rows, 0 tuples inserted), every staff request answered 200',
    gained === 0 && inserted === 0 && allOk(answers),
  );
}

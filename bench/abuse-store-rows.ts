import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { authorizationClient, check, verdict } from '../test/support/envoy-client.js';
import { OVERFLOW_ADDRESS, DENIAL_ROWS_PER_SITE_HOUR } from '../src/store/denial-stats-recorder.js';
import { OTHER_SITE } from '../src/observe/site-labels.js';
import { NOTIFIED_FULL_LOAD_INTERVAL_MS } from '../src/store/credential-cache.js';
import { CHECK_GOAL_MS, checksText, sampleOf, scrape, startPacedChecks, summariseChecks, tableRow, type Row } from './abuse-watch.js';
import type { BenchServer } from './server-process.js';

/*
 * The rows of the abuse benchmark that attack what serve keeps: its snapshot (a notification storm), its
 * refusal records (many source addresses) and its metric labels (a stranger naming every site).
 */

const STORM_MS = 8_000;

/** A role with no grants (any login can NOTIFY) loops `NOTIFY sitekey_credentials, '*'` for 8 s while paced checks run. */
export async function notifyStorm(pool: pg.Pool, databaseUrl: string, serve: BenchServer, message: Buffer): Promise<Row> {
  const role = `abuse_notifier_${process.pid}`;
  const password = randomUUID();
  await pool.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  const url = new URL(databaseUrl);
  url.username = role;
  url.password = password;
  const stormer = new pg.Client({ connectionString: url.toString() });
  try {
    await stormer.connect();
    const checks = startPacedChecks(serve.grpcPort, message);
    await sleep(500);
    const before = sampleOf(await scrape(serve), 'sitekey_authz_snapshot_syncs_total', '{kind="full"}');
    const from = performance.now();
    let sent = 0;
    while (performance.now() - from < STORM_MS) {
      await stormer.query("NOTIFY sitekey_credentials, '*'");
      sent += 1;
    }
    const until = performance.now();
    const fullLoads = sampleOf(await scrape(serve), 'sitekey_authz_snapshot_syncs_total', '{kind="full"}') - before;
    const summary = summariseChecks(await checks.stop(), from, until);
    // One right away, then at most one per interval.
    const allowedLoads = 1 + Math.floor(STORM_MS / NOTIFIED_FULL_LOAD_INTERVAL_MS);
    return tableRow(
      `NOTIFY '*' storm from a role with no grants, 8 s, 100,000 sites`,
      `${sent.toLocaleString('en')} notifications, ${fullLoads} full reloads; ${summary.overGoal} checks over ${CHECK_GOAL_MS} ms (${checksText(summary)})`,
      `at most one full reload per ${NOTIFIED_FULL_LOAD_INTERVAL_MS / 1000} s (≤ ${allowedLoads}), no check over ${CHECK_GOAL_MS} ms`,
      fullLoads <= allowedLoads && summary.overGoal === 0 && summary.notAllowed === 0,
    );
  } finally {
    await stormer.end().catch(() => undefined);
    await pool.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  }
}

/** Sends `count` checks, `concurrency` at a time on one connection; resolves with the outcomes counted. */
async function sendChecks(target: string, count: number, concurrency: number, args: (i: number) => Parameters<typeof check>[1]): Promise<Map<string, number>> {
  const client = authorizationClient(target);
  const outcomes = new Map<string, number>();
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const i = next++;
          const outcome = await check(client, args(i)).then((response) => String(verdict(response)), (error: Error) => error.message.split(':')[0] ?? 'error');
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        }
      }),
    );
  } finally {
    client.close();
  }
  return outcomes;
}

const outcomesText = (outcomes: Map<string, number>) => [...outcomes].map(([outcome, n]) => `${n.toLocaleString('en')} × ${outcome}`).join(', ');

/** An address of 198.18.0.0/15 (RFC 2544, benchmarking) for each i below 131,072. */
const benchAddress = (i: number) => `198.${18 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;

/**
 * One client refused from `addresses` distinct source addresses (the peer address Envoy reports, read
 * with CLIENT_IP_SOURCE=peer) on one site, then the rows denial_stats holds for that site and hour.
 */
export async function manyAddresses(pool: pg.Pool, serve: BenchServer, siteId: string, addresses: number): Promise<Row> {
  const key = randomUUID();
  const outcomes = await sendChecks(`127.0.0.1:${serve.grpcPort}`, addresses, 64, (i) => ({
    authorization: `${siteId}:${key}`,
    body: JSON.stringify({ siteid: Number(siteId), apikey: key }),
    ip: benchAddress(i),
  }));
  const refused = [...outcomes].filter(([outcome]) => outcome !== 'allow').reduce((sum, [, n]) => sum + n, 0);
  // Every refusal is in the table once the recorder has flushed (LAST_USED_FLUSH_SECONDS).
  type HourRows = { hour: Date; addressed: string; overflow: string; refusals: string; overflow_addresses: string };
  let hours: HourRows[] = [];
  for (const deadline = performance.now() + 30_000; performance.now() < deadline; await sleep(250)) {
    ({ rows: hours } = await pool.query<HourRows>(
      `SELECT hour, count(*) FILTER (WHERE client_ip <> $2)::text AS addressed, count(*) FILTER (WHERE client_ip = $2)::text AS overflow,
              sum(count)::text AS refusals, sum(overflow_addresses)::text AS overflow_addresses
         FROM denial_stats WHERE site_id = $1 GROUP BY hour ORDER BY hour`,
      [siteId, OVERFLOW_ADDRESS],
    ));
    if (hours.reduce((sum, hour) => sum + Number(hour.refusals), 0) >= refused) break;
  }
  const recorded = hours.reduce((sum, hour) => sum + Number(hour.refusals), 0);
  const perHour = hours.map((hour) => `${hour.hour.toISOString().slice(11, 16)}: ${hour.addressed} address rows + ${hour.overflow} overflow row(s) counting ${hour.overflow_addresses} more addresses`);
  const met = recorded === refused && refused === addresses && hours.every((hour) => Number(hour.addressed) <= DENIAL_ROWS_PER_SITE_HOUR && Number(hour.overflow) <= 1);
  return tableRow(
    `one client refused from ${addresses.toLocaleString('en')} source addresses (site ${siteId})`,
    `answers ${outcomesText(outcomes)}; denial_stats for the site, by hour: ${perHour.join('; ') || 'no rows'}; ${recorded.toLocaleString('en')} refusals recorded`,
    `≤ ${DENIAL_ROWS_PER_SITE_HOUR.toLocaleString('en')} address rows + 1 overflow row per site and hour, every refusal counted`,
    met,
  );
}

/** The values of the `site` label on serve's metrics. */
function siteLabels(exposition: string): Set<string> {
  return new Set([...exposition.matchAll(/^sitekey_authz_\w+\{[^}]*\bsite="([^"]*)"/gm)].map((match) => match[1] ?? ''));
}

/**
 * A stranger with no key sends checks naming `sites` existing site ids (1…sites), each from an address
 * on that site's allowlist, so that only the key is wrong: which `site` labels the metrics carry after.
 */
export async function strangerLabels(serve: BenchServer, sites: number, allowedSite: string): Promise<Row> {
  const key = randomUUID();
  const outcomes = await sendChecks(`127.0.0.1:${serve.grpcPort}`, sites, 64, (i) => {
    const site = i + 1;
    // filler-sites.ts allowlists 10.(site >> 8 & 255).(site & 255).64/26 for each site.
    return { authorization: `${site}:${key}`, body: JSON.stringify({ siteid: site, apikey: key }), ip: `10.${(site >> 8) & 255}.${site & 255}.65` };
  });
  const labels = siteLabels(await scrape(serve));
  const earned = new Set([allowedSite, OTHER_SITE]);
  const strays = [...labels].filter((label) => !earned.has(label));
  return tableRow(
    `a stranger with no key checks ${sites.toLocaleString('en')} existing site ids`,
    `answers ${outcomesText(outcomes)}; ${labels.size} site label values on the metrics (${[...labels].sort().slice(0, 5).join(', ')}${labels.size > 5 ? ', …' : ''})`,
    `only sites with an allowed check (here ${allowedSite}) and "${OTHER_SITE}"`,
    strays.length === 0 && !outcomes.has('allow'),
  );
}

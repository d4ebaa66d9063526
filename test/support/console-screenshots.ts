import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/embedded/embedded-postgres.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { migrate } from '../../src/store/migrate.js';
import { ADMIN_PEOPLE } from './admin-issuer.js';
import { chromiumAbsent, launchChromium, signInWithBrowser } from './console-browser.js';
import { startConsoleStack } from './console-stack.js';
import { runCli } from './service.js';

/**
 * `make screenshots`: the console's main pages as an account manager sees them, saved to
 * docs/console/*.png for docs/console.md. A throwaway embedded database with a few partners and a month of
 * traffic, the real service and a real provider; the key shown is from that database and dies with it.
 */
const OUT = join(PACKAGE_ROOT, 'docs', 'console');
const HOUR_MS = 3_600_000;

const PARTNERS = [
  { id: '1001', name: 'Acme Travel', tokenShare: 0.74, cidrs: ['203.0.113.0/24', '2001:db8:1001::/48'] },
  { id: '1002', name: 'Bravo Bikes', tokenShare: 1, cidrs: ['198.51.100.16/28'] },
  { id: '1003', name: 'Cargo Connect', tokenShare: 0.12, cidrs: [] },
  { id: '1004', name: 'Delta Dining', tokenShare: 0.45, cidrs: ['192.0.2.0/24'] },
];

async function seed(url: string): Promise<void> {
  const cli = async (...args: string[]) => {
    const result = await runCli(url, args);
    if (result.code !== 0) throw new Error(`${args.join(' ')}: ${result.stderr}`);
  };
  for (const partner of PARTNERS) {
    await cli('site', 'add', partner.id, '--name', partner.name);
    for (const cidr of partner.cidrs) await cli('ip', 'allow', partner.id, cidr);
    await cli('key', 'issue', partner.id, '--note', `${partner.name} production`);
    if (partner.tokenShare > 0) await cli('token-client', 'add', partner.id, `partner-${partner.id}`);
  }
  await cli('site', 'auth', '1002', 'tokens');
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const now = Date.now();
    for (const partner of PARTNERS) {
      for (let day = 0; day < 30; day += 1) {
        const hour = new Date(Math.floor((now - day * 24 * HOUR_MS) / HOUR_MS) * HOUR_MS);
        const total = 400 + ((Number(partner.id) * 37 + day * 11) % 200);
        const tokens = Math.round(total * Math.min(1, partner.tokenShare * (1 + day / 60)));
        for (const [method, count] of [['token', tokens], ['api_key', total - tokens]] as const) {
          if (count <= 0 || (partner.id === '1002' && method === 'api_key' && day < 20)) continue;
          await sql.query('INSERT INTO auth_usage (hour, site_id, method, count, last_seen) VALUES ($1, $2, $3, $4, $1)', [hour, partner.id, method, count]);
        }
      }
      await sql.query('UPDATE api_keys SET last_used_at = $2 WHERE site_id = $1', [partner.id, new Date(now - (partner.id === '1002' ? 21 : 0.1) * 24 * HOUR_MS)]);
    }
    const denials: Array<[number, string, number, number]> = [
      [103, '198.51.100.23', 412, 5],
      [103, '198.51.100.24', 57, 3],
      [102, '203.0.113.7', 9, 2],
      [104, '203.0.113.9', 3, 1],
    ];
    for (const [errorId, ip, count, hoursAgo] of denials) {
      const hour = new Date(Math.floor((now - hoursAgo * HOUR_MS) / HOUR_MS) * HOUR_MS);
      await sql.query(
        'INSERT INTO denial_stats (hour, site_id, error_id, client_ip, rehearsal, count, first_seen, last_seen) VALUES ($1, 1001, $2, $3, false, $4, $1, $5)',
        [hour, errorId, ip, count, new Date(hour.getTime() + 40 * 60_000)],
      );
    }
  } finally {
    await sql.end();
  }
}

async function main(): Promise<number> {
  const missing = chromiumAbsent();
  if (missing !== undefined) {
    console.error(`${missing}: no screenshots`);
    return 1;
  }
  await mkdir(OUT, { recursive: true });
  const dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-screenshots-'));
  const server = await startEmbeddedPostgres({ dataDir, persistent: false });
  try {
    await migrate(server.url);
    await seed(server.url);
    const stack = await startConsoleStack(server.url, { APIKEY_SUNSET_AT: new Date(Date.now() + 37 * 24 * HOUR_MS).toISOString().slice(0, 10) + 'T00:00:00Z' });
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ viewport: { width: 1200, height: 800 } })).newPage();
      const shot = async (name: string) => {
        await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
        console.log(`docs/console/${name}.png`);
      };
      await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager, '/?query=');
      await page.getByRole('link', { name: '1004' }).waitFor();
      await shot('find-partner');
      await page.goto(`${stack.consoleBase}/sites/1001`);
      await page.getByRole('cell', { name: '203.0.113.0/24', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Revoke' }).first().waitFor();
      await shot('site');
      await page.getByLabel('Note').first().fill('Acme staging');
      await page.getByRole('button', { name: 'Issue key' }).click();
      await page.getByText('This key will not be shown again.').waitFor();
      await page.locator('.issued-key').screenshot({ path: join(OUT, 'key-shown-once.png') });
      console.log('docs/console/key-shown-once.png');
      await page.goto(`${stack.consoleBase}/migration`);
      await page.locator('.chart svg').waitFor();
      await shot('migration-board');
      await page.goto(`${stack.consoleBase}/denials?site=1001&since=24`);
      await page.getByRole('cell', { name: '198.51.100.23', exact: true }).waitFor();
      await shot('denial-report');
    } finally {
      await browser.close();
      await stack.close();
    }
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  return 0;
}

process.exitCode = await main();

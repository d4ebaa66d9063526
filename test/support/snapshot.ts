import { hashApiKey } from '../../src/decision/api-key.js';
import type { Brownout, CredentialSnapshot, SunsetPolicy } from '../../src/decision/types.js';
import { buildAllowlist } from '../../src/allowlist/allowlist.js';
import { siteKeys } from '../../src/store/site-keys.js';
import { SiteRecords } from '../../src/store/site-records.js';
import { SiteTable } from '../../src/store/site-table.js';

export interface SiteFixture {
  readonly siteId: string;
  readonly enabled?: boolean;
  readonly graceUntil?: number;
  readonly keys?: ReadonlyArray<{ readonly key: string; readonly keyId: string; readonly expiresAt?: number | null }>;
  readonly cidrs?: readonly string[];
  readonly authMethod?: 'both' | 'tokens';
  readonly tokensNotBefore?: number;
  readonly tokenClients?: readonly string[];
  /** Epoch ms at which the token clients were registered to the site (default 0: before any token). */
  readonly tokenClientsRegisteredAt?: number;
}

/** API keys with no sunset enforced: what every test that is not about the sunset decides under. */
export const NO_SUNSET: SunsetPolicy = Object.freeze({ sunsetAt: Date.parse('2026-12-31T23:59:59Z'), enforce: false, guideUrl: undefined });

/** The sites of the fixtures, as the loader writes PostgreSQL's rows of them. */
function siteRecordsOf(sites: readonly SiteFixture[]): SiteRecords {
  const records = new SiteRecords();
  for (const fixture of sites) {
    // Built as the loader builds it from PostgreSQL's rows, so decision tests cover the real allowlist.
    const allowlist = buildAllowlist(
      (fixture.cidrs ?? []).map((cidr) => {
        const [network = '', prefix = ''] = cidr.split('/');
        return { network, prefix: Number(prefix) };
      }),
    );
    const keysByHash = siteKeys((fixture.keys ?? []).map((k) => ({ hash: hashApiKey(k.key.toLowerCase()), keyId: k.keyId, expiresAt: k.expiresAt ?? null })));
    records.set(fixture.siteId, {
      siteId: fixture.siteId,
      enabled: fixture.enabled ?? true,
      graceUntil: fixture.graceUntil ?? null,
      keysByHash,
      allowlist,
      authMethod: fixture.authMethod ?? 'both',
      tokensNotBefore: fixture.tokensNotBefore ?? null,
      tokenClients: new Map((fixture.tokenClients ?? []).map((clientId) => [clientId, fixture.tokenClientsRegisteredAt ?? 0])),
    });
  }
  return records;
}

/** The snapshot a check reads, held by the service's own SiteTable, as one full load leaves it. */
export function snapshotOf(sites: readonly SiteFixture[], brownouts: readonly Brownout[] = []): CredentialSnapshot {
  const table = new SiteTable();
  table.replaceAll(siteRecordsOf(sites), brownouts, 0);
  return table;
}

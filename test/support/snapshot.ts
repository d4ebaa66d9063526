import { hashApiKey } from '../../src/decision/api-key.js';
import type { CredentialSnapshot, KeyCredential, SiteCredentials } from '../../src/decision/types.js';
import { buildAllowlist } from '../../src/store/snapshot-loader.js';

export interface SiteFixture {
  readonly siteId: string;
  readonly enabled?: boolean;
  readonly keys?: ReadonlyArray<{ readonly key: string; readonly keyId: string; readonly expiresAt?: number | null }>;
  readonly cidrs?: readonly string[];
}

/** An in-memory snapshot for decision and transport tests: the same plain data the store loads. */
export function snapshotOf(sites: readonly SiteFixture[]): CredentialSnapshot {
  const bySite = new Map<string, SiteCredentials>();
  for (const fixture of sites) {
    // Built as the loader builds it from PostgreSQL's rows, so decision tests cover the real allowlist.
    const allowlist = buildAllowlist(
      (fixture.cidrs ?? []).map((cidr) => {
        const [network = '', prefix = ''] = cidr.split('/');
        return { network, prefix: Number(prefix) };
      }),
    );
    const keysByHash = new Map<string, KeyCredential>(
      (fixture.keys ?? []).map((k) => [hashApiKey(k.key.toLowerCase()), { keyId: k.keyId, expiresAt: k.expiresAt ?? null }]),
    );
    bySite.set(fixture.siteId, { siteId: fixture.siteId, enabled: fixture.enabled ?? true, keysByHash, allowlist });
  }
  return { site: (siteId) => bySite.get(siteId) };
}

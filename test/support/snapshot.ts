import { BlockList } from 'node:net';
import { hashApiKey } from '../../src/decision/api-key.js';
import type { CredentialSnapshot, KeyCredential, SiteCredentials } from '../../src/decision/types.js';

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
    const allowlist = new BlockList();
    for (const cidr of fixture.cidrs ?? []) {
      const [network = '', prefix = ''] = cidr.split('/');
      const family = network.includes(':') ? 'ipv6' : 'ipv4';
      allowlist.addSubnet(network, Number(prefix), family);
    }
    const keysByHash = new Map<string, KeyCredential>(
      (fixture.keys ?? []).map((k) => [hashApiKey(k.key.toLowerCase()), { keyId: k.keyId, expiresAt: k.expiresAt ?? null }]),
    );
    bySite.set(fixture.siteId, { siteId: fixture.siteId, enabled: fixture.enabled ?? true, keysByHash, allowlist });
  }
  return { site: (siteId) => bySite.get(siteId) };
}

import type { SiteId } from '../decision/types.js';
import type { SiteSummary } from '../store/credential-admin.js';
import type { SiteTokenPolicy } from '../store/token-admin.js';
import { noAllowlistWarning } from './allowlist-operations.js';
import { authMethodOf, futureInstantOf, MAX_NAME, siteIdOf, textOf } from './fields.js';
import type { Changed, OperationContext } from './operation-context.js';

export async function addSite({ admin }: OperationContext, request: { id: string | undefined; name: string | undefined }): Promise<SiteSummary> {
  const siteId = siteIdOf(request.id, 'id');
  const name = textOf(request.name, 'name', MAX_NAME);
  return admin.addSite(siteId, name);
}

export async function setSiteEnabled(
  { admin }: OperationContext,
  request: { siteId: string | undefined; enabled: boolean },
): Promise<Changed<{ site: SiteSummary; changed: boolean }>> {
  const siteId = siteIdOf(request.siteId);
  const { site, changed } = await admin.setSiteEnabled(siteId, request.enabled);
  return { result: { site, changed }, warnings: request.enabled && site.allowlistEntries === 0 ? [noAllowlistWarning(siteId)] : [] };
}

export async function setAuthMethod(
  { admin }: OperationContext,
  request: { siteId: string | undefined; method: string | undefined },
): Promise<{ policy: SiteTokenPolicy; changed: boolean }> {
  const siteId = siteIdOf(request.siteId);
  const method = authMethodOf(request.method);
  const { policy, previous } = await admin.tokens.setAuthMethod(siteId, method);
  return { policy, changed: previous !== method };
}

export async function revokeTokens({ admin }: OperationContext, request: { siteId: string | undefined }): Promise<SiteTokenPolicy> {
  return admin.tokens.revokeTokens(siteIdOf(request.siteId));
}

/** Grace until a date after now, or (null) taken back: a grace that has ended would change nothing. */
export async function setGrace(
  { admin, now }: OperationContext,
  request: { siteId: string | undefined; until: string | null },
): Promise<{ siteId: SiteId; graceUntil: string | null; previous: string | null }> {
  const siteId = siteIdOf(request.siteId);
  const until = request.until === null ? null : futureInstantOf(request.until, 'until', now, 'a grace that has already ended would let the site keep nothing');
  return admin.sunset.setGrace(siteId, until);
}

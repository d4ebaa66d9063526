import type { SiteId, SunsetPolicy } from '../decision/types.js';
import type { IssuedKey, KeyRoll, KeySummary } from '../store/credential-admin.js';
import { configuredSunsetPolicy } from '../store/sunset-policy.js';
import { noAllowlistWarning } from './allowlist-operations.js';
import { futureInstantOf, importedKeyOf, keyIdOf, MAX_NOTE, refuse, siteIdOf, textOf } from './fields.js';
import type { Changed, OperationContext } from './operation-context.js';

const DAY_MS = 86_400_000;
/** A key made this close to the API-key sunset, or after it, is told that the sunset ends it. */
export const SUNSET_WARNING_DAYS = 60;
export const ROLL_OVERLAP_DAYS = 7;

export function expiresOf(text: string | undefined, now: number): Date | undefined {
  return text === undefined ? undefined : futureInstantOf(text, 'expires', now, 'a key must expire after it is issued');
}

export function keySunsetWarnings(expiresAt: Date | undefined, sunset: Pick<SunsetPolicy, 'sunsetAt' | 'enforce'>, now: number): string[] {
  if (expiresAt !== undefined && expiresAt.getTime() <= sunset.sunsetAt) return [];
  if (now < sunset.sunsetAt - SUNSET_WARNING_DAYS * DAY_MS) return [];
  const at = new Date(sunset.sunsetAt).toISOString();
  const days = Math.ceil((sunset.sunsetAt - now) / DAY_MS);
  const when =
    days > 0
      ? `stops working at the API-key sunset on ${at}, in ${days} day(s)${sunset.enforce ? '' : ' once the sunset is enforced'}`
      : sunset.enforce
        ? `stops working since the API-key sunset on ${at}, which has passed`
        : `stops working as soon as the API-key sunset, which passed on ${at}, is enforced`;
  return [`this key ${when}, unless the site has grace: consider giving the partner an access token instead`];
}

interface KeyRequest {
  readonly siteId: string | undefined;
  readonly expires: string | undefined;
  readonly note: string | undefined;
}

function keyOptions(request: KeyRequest, now: number) {
  return { expiresAt: expiresOf(request.expires, now), note: textOf(request.note, 'note', MAX_NOTE) };
}

async function sunsetWarnings({ admin, config, now }: OperationContext, expiresAt: Date | undefined): Promise<string[]> {
  const policy = await admin.sunset.policy(configuredSunsetPolicy(config));
  return keySunsetWarnings(expiresAt, { sunsetAt: Date.parse(policy.sunsetAt), enforce: policy.enforce }, now);
}

export async function issueKey(context: OperationContext, request: KeyRequest): Promise<Changed<IssuedKey>> {
  const { admin, now } = context;
  const siteId = siteIdOf(request.siteId);
  const options = keyOptions(request, now);
  const key = await admin.issueKey(siteId, options);
  const allowlist = await admin.listNetworks(siteId);
  return { result: key, warnings: [...(allowlist.length === 0 ? [noAllowlistWarning(siteId)] : []), ...(await sunsetWarnings(context, options.expiresAt))] };
}

export async function importKey(context: OperationContext, request: KeyRequest & { readonly key: string }): Promise<Changed<KeySummary>> {
  const siteId = siteIdOf(request.siteId);
  const options = keyOptions(request, context.now);
  const apiKey = importedKeyOf(request.key);
  const key = await context.admin.importKey(siteId, apiKey, options);
  return { result: key, warnings: await sunsetWarnings(context, options.expiresAt) };
}

export async function revokeKey({ admin }: OperationContext, request: { siteId: string | undefined; keyId: string | undefined }): Promise<{ siteId: SiteId; key: KeySummary; changed: boolean }> {
  const siteId = siteIdOf(request.siteId);
  const keyId = keyIdOf(request.keyId);
  return { siteId, ...(await admin.revokeKey(siteId, keyId)) };
}

export function oldExpiresOf(text: string | undefined, now: number): Date {
  if (text === undefined) return new Date(now + ROLL_OVERLAP_DAYS * DAY_MS);
  return futureInstantOf(text, 'oldExpires', now, `the old key must keep working for a while, e.g. ${ROLL_OVERLAP_DAYS} days (the default)`);
}

export async function rollKey(context: OperationContext, request: KeyRequest & { readonly keyId: string | undefined; readonly oldExpires: string | undefined }): Promise<Changed<KeyRoll>> {
  const siteId = siteIdOf(request.siteId);
  const keyId = keyIdOf(request.keyId);
  const oldExpiresAt = oldExpiresOf(request.oldExpires, context.now);
  const options = keyOptions(request, context.now);
  if (options.expiresAt !== undefined && oldExpiresAt > options.expiresAt) {
    throw refuse('OLD_KEY_OUTLIVES_NEW', 'oldExpires', `${oldExpiresAt.toISOString()} is after the new key's expiry ${options.expiresAt.toISOString()}: the old key would outlive its successor; give it an earlier last day`, new Date(context.now + ROLL_OVERLAP_DAYS * DAY_MS).toISOString().slice(0, 10));
  }
  const roll = await context.admin.rollKey(siteId, keyId, oldExpiresAt, options);
  return { result: roll, warnings: [...roll.warnings, ...(await sunsetWarnings(context, options.expiresAt))] };
}

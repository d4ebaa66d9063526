import { isSecureOrLoopbackUrl } from '../config.js';
import type { PartnerKeys } from '../token/client-registration.js';
import { ClientOnboarding } from '../token/client-onboarding.js';
import { clientIdOf, MAX_NOTE, refuse, siteIdOf, textOf } from './fields.js';
import type { OperationContext } from './operation-context.js';

export const MAX_PARTNER_JWKS_BYTES = 64 * 1024;
const MAX_PARTNER_KEYS = 10;
// RFC 7517 §9.3, RFC 7518 §6: the members that make a JWK private (and `k`, a shared secret).
const PRIVATE_KEY_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const PARTNER_KEY_TYPES = ['RSA', 'EC', 'OKP'];

/** Public signing keys only: a private member means the partner sent their signing key, never stored or sent on. */
export function partnerJwksOf(text: string): { readonly keys: Array<Record<string, unknown>> } {
  const refused = (problem: string, example?: string) => refuse('JWKS_INVALID', 'jwks', problem, example);
  if (Buffer.byteLength(text) > MAX_PARTNER_JWKS_BYTES) throw refused(`is larger than ${MAX_PARTNER_JWKS_BYTES / 1024} KiB; a JWKS of public keys is a few KiB`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw refused('is not JSON: expected a JWKS', '{"keys":[{"kty":"EC","crv":"P-256","x":"…","y":"…"}]}');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_PARTNER_KEYS) throw refused(`must be a JWKS: an object whose "keys" holds 1 to ${MAX_PARTNER_KEYS} public keys`);
  for (const [index, key] of keys.entries()) {
    if (typeof key !== 'object' || key === null || Array.isArray(key)) throw refused(`key ${index + 1} is not a JWK object`);
    const secret = PRIVATE_KEY_MEMBERS.find((member) => member in key);
    if (secret !== undefined) {
      throw refuse(
        'JWKS_PRIVATE_KEY',
        'jwks',
        `key ${index + 1} is private (it has "${secret}"): ask the partner for their public keys only; the private key never leaves them, and this one should be replaced`,
      );
    }
    const kty = (key as { kty?: unknown }).kty;
    if (typeof kty !== 'string' || !PARTNER_KEY_TYPES.includes(kty)) throw refused(`key ${index + 1} has kty ${JSON.stringify(kty)}; expected one of ${PARTNER_KEY_TYPES.join(', ')}`);
    const use = (key as { use?: unknown }).use;
    if (use !== undefined && use !== 'sig') throw refused(`key ${index + 1} is for use ${JSON.stringify(use)}; the client signs its assertions: "sig"`);
  }
  return { keys: keys as Array<Record<string, unknown>> };
}

export function partnerJwksUriOf(text: string): string {
  const parsed = isSecureOrLoopbackUrl(text) ? new URL(text) : undefined;
  if (parsed === undefined || text.length > 2048 || parsed.username !== '' || parsed.password !== '') {
    throw refuse('JWKS_URI_INVALID', 'jwksUri', `${JSON.stringify(text.slice(0, 100))} is not the URL of the partner's key set: expected https://… (http:// only on loopback)`, 'https://partner.example/.well-known/jwks.json');
  }
  return parsed.href;
}

export async function addTokenClient({ admin }: OperationContext, request: { siteId: string | undefined; clientId: string | undefined; note: string | undefined }) {
  const siteId = siteIdOf(request.siteId);
  const clientId = clientIdOf(request.clientId);
  const note = textOf(request.note, 'note', MAX_NOTE);
  return admin.tokens.addClient(siteId, clientId, note);
}

export interface CreateClientRequest {
  readonly siteId: string | undefined;
  readonly note: string | undefined;
  readonly jwks: string | undefined;
  readonly jwksUri: string | undefined;
}

export async function createTokenClient({ admin, config }: OperationContext, request: CreateClientRequest) {
  const siteId = siteIdOf(request.siteId);
  const note = textOf(request.note, 'note', MAX_NOTE);
  if (request.jwks !== undefined && request.jwksUri !== undefined) {
    throw refuse('JWKS_TWICE', 'jwksUri', "give the partner's public keys once: as a key set or as its URL, not both");
  }
  const keys: PartnerKeys =
    request.jwks !== undefined ? { jwks: partnerJwksOf(request.jwks) } : request.jwksUri === undefined ? undefined : { jwksUri: partnerJwksUriOf(request.jwksUri) };
  return new ClientOnboarding(admin, config).create({ siteId, note, keys });
}

export async function rotateTokenClientSecret({ admin, config }: OperationContext, request: { clientId: string | undefined }) {
  return new ClientOnboarding(admin, config).rotateSecret(clientIdOf(request.clientId));
}

export async function removeTokenClient({ admin, config }: OperationContext, request: { clientId: string | undefined; localOnly: boolean }) {
  return new ClientOnboarding(admin, config).remove(clientIdOf(request.clientId), request.localOnly);
}

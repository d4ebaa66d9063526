import type { JSONWebKeySet, JWK } from 'jose';

/** More keys than any issuer publishes at once (a few, overlapping while it rotates): the rest are dropped. */
export const KEY_SET_MAX_KEYS = 64;

/** The key types that can verify a signature; `oct` is a shared secret and never a public key. */
const PUBLIC_KEY_TYPES: ReadonlySet<string> = new Set(['RSA', 'EC', 'OKP', 'AKP']);

/**
 * The members that hold private key material (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2): a JWKS
 * is public by definition, so an issuer that publishes them has made a mistake we must not copy
 * into our database.
 */
const PRIVATE_MEMBERS: ReadonlySet<string> = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv']);

export class KeySetError extends Error {
  override readonly name = 'KeySetError';
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function publicKey(value: unknown): JWK | undefined {
  if (!isObject(value) || typeof value['kty'] !== 'string' || !PUBLIC_KEY_TYPES.has(value['kty'])) return undefined;
  const members = Object.keys(value)
    .filter((name) => !PRIVATE_MEMBERS.has(name))
    .sort();
  return Object.fromEntries(members.map((name) => [name, value[name]])) as JWK;
}

/**
 * A key set as this service holds it, from an issuer's answer or from the database, both hostile:
 * an object with a `keys` array, of which only public signature keys are kept (private members
 * stripped, shared secrets dropped, at most KEY_SET_MAX_KEYS), members in a fixed order so that
 * two sets with the same keys read the same. jose then matches and imports the keys themselves.
 */
export function publicKeySet(value: unknown): JSONWebKeySet {
  if (!isObject(value) || !Array.isArray(value['keys'])) throw new KeySetError('the key set has no "keys" array');
  const keys = value['keys'].flatMap((key) => publicKey(key) ?? []).slice(0, KEY_SET_MAX_KEYS);
  // An empty set verifies nothing: held or stored, it would refuse every token while counting as keys.
  if (keys.length === 0) throw new KeySetError('the key set holds no public signature key');
  return { keys };
}

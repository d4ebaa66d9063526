import type { KeyCredential, KeyHash, KeysByHash } from '../decision/types.js';

/** Up to this many keys, a site's keys are a list searched in order; beyond it, a Map. */
const LIST_MAX = 8;

/** A key's hash as the snapshot holds it: SHA-256 in hex, the stride of a list's hashes. */
const HASH_LENGTH = 64;

/** Between a key's id and its expiry, and after each key, in a list's entries: neither is in a key id the list holds. */
const FIELD_END = '\t';
const ENTRY_END = '\n';

/** A key's credential and the hash it is found by: what the snapshot holds of each key. */
export interface HashedKey extends KeyCredential {
  readonly hash: KeyHash;
}

/**
 * A few keys in two strings: their hashes end to end, and per key `<key id>\t<expiry>\n` (no expiry
 * when it never expires). A site has one or two keys as a rule, and a snapshot holds every site: a
 * string holds no references, so the collector marks this list and its two strings without tracing
 * further, where an array of key objects was four objects more per site for every full collection to
 * trace. A lookup that finds a key makes its credential then.
 */
class KeyList implements KeysByHash {
  constructor(
    private readonly hashes: string,
    private readonly entries: string,
  ) {}

  get size(): number {
    return this.hashes.length / HASH_LENGTH;
  }

  /** Searched from the end: of two keys with one hash, the last one given is found, as a Map keeps the last one set. */
  get(hash: KeyHash): KeyCredential | undefined {
    if (hash.length !== HASH_LENGTH) return undefined;
    for (let index = this.size - 1; index >= 0; index--) {
      if (this.hashes.startsWith(hash, index * HASH_LENGTH)) return this.credential(index);
    }
    return undefined;
  }

  private credential(index: number): KeyCredential {
    let start = 0;
    for (let skipped = 0; skipped < index; skipped++) start = this.entries.indexOf(ENTRY_END, start) + 1;
    const idEnd = this.entries.indexOf(FIELD_END, start);
    const expiry = this.entries.slice(idEnd + 1, this.entries.indexOf(ENTRY_END, idEnd));
    return { keyId: this.entries.slice(start, idEnd), expiresAt: expiry === '' ? null : Number(expiry) };
  }

  *keys(): IterableIterator<KeyHash> {
    for (let at = 0; at < this.hashes.length; at += HASH_LENGTH) yield this.hashes.slice(at, at + HASH_LENGTH);
  }
}

const NO_KEYS = new KeyList('', '');

/** Whether a list can hold the key as it is: a hash of the stride, a key id without the list's separators. */
function listable(key: HashedKey): boolean {
  return key.hash.length === HASH_LENGTH && !key.keyId.includes(FIELD_END) && !key.keyId.includes(ENTRY_END);
}

/**
 * A site's keys, by hash, in the smallest form that finds one in a few steps: a list, or a Map when
 * rows written by hand give a site more keys than a list should search (or a key a list cannot hold).
 * Of two keys with one hash (the schema makes hashes unique), the last is the one found, as in a Map.
 */
export function siteKeys(keys: readonly HashedKey[]): KeysByHash {
  if (keys.length === 0) return NO_KEYS;
  if (keys.length > LIST_MAX || !keys.every(listable)) return new Map(keys.map((key) => [key.hash, key]));
  return new KeyList(keys.map((key) => key.hash).join(''), keys.map((key) => `${key.keyId}${FIELD_END}${key.expiresAt ?? ''}${ENTRY_END}`).join(''));
}

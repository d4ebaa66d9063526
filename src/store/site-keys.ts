import type { KeyCredential, KeyHash, KeysByHash } from '../decision/types.js';

/** Up to this many keys, a site's keys are a list searched in order; beyond it, a Map. */
const LIST_MAX = 8;

/** A key's hash as the snapshot holds it: SHA-256 in hex, the stride of a list's hashes. */
const HASH_LENGTH = 64;

/** Between a key's id and its expiry, and after each key, in a list's entries: neither is in a key id the list holds. */
const FIELD_END = '\t';
const ENTRY_END = '\n';

export interface HashedKey extends KeyCredential {
  readonly hash: KeyHash;
}

/**
 * Hashes end to end, and per key `<key id>\t<expiry>\n`: strings hold no references, so the collector does not
 * trace further, where key objects were four objects more per site for every full collection.
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

/** A list, or a Map when hand-written rows give a site many keys; of two with one hash, the last is found. */
export function siteKeys(keys: readonly HashedKey[]): KeysByHash {
  if (keys.length === 0) return NO_KEYS;
  if (keys.length > LIST_MAX || !keys.every(listable)) return new Map(keys.map((key) => [key.hash, key]));
  return new KeyList(keys.map((key) => key.hash).join(''), keys.map((key) => `${key.keyId}${FIELD_END}${key.expiresAt ?? ''}${ENTRY_END}`).join(''));
}

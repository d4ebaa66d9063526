import { sha256 } from '../common/sha256.js';
import type { ApiKey, KeyHash } from './types.js';

// Spec, Authentication 3: the key is a UUID, 8-4-4-4-12 hex digits; either case, compared case-insensitively.
const UUID_PATTERN = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const UUID = new RegExp(`^${UUID_PATTERN}$`);
const UUID_ANYWHERE = new RegExp(UUID_PATTERN, 'g');
const UPPER_HEX = /[A-F]/;

export function canonicalApiKey(text: string): ApiKey | undefined {
  if (!UUID.test(text)) return undefined;
  // toLowerCase makes a new string even when nothing changes; keys are mostly sent in lower case.
  return UPPER_HEX.test(text) ? text.toLowerCase() : text;
}

/** Not cached: a cache would hold keys in clear. */
export function hashApiKey(key: ApiKey): KeyHash {
  return sha256(key, 'hex');
}

/** Spec, Errors 102: five asterisks and the last five characters of the submitted key. */
export function maskApiKey(key: string): string {
  return `*****${key.slice(-5)}`;
}

/** Text with every key-shaped UUID in it masked: for messages that may quote what a user typed. */
export function maskApiKeysIn(text: string): string {
  return text.replace(UUID_ANYWHERE, maskApiKey);
}

/** Kept beside the hash so that an account manager can tell keys apart. */
export function lastFive(key: ApiKey): string {
  return key.slice(-5);
}

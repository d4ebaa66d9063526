import * as crypto from 'node:crypto';

/**
 * SHA-256 of a text, as hex or base64 text. The one-shot crypto.hash (Node 20.12 and later) makes no
 * Hash object: run on every check (a key's hash, a kept token's id), it costs a third of createHash's
 * update and digest.
 */
export const sha256: (text: string, encoding: 'hex' | 'base64' | 'base64url') => string =
  typeof crypto.hash === 'function'
    ? (text, encoding) => crypto.hash('sha256', text, encoding)
    : (text, encoding) => crypto.createHash('sha256').update(text).digest(encoding);

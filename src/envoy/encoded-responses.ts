import { EncodedCheckResponse } from './proto.js';
import { setWithin } from '../common/bounded-map.js';

/**
 * CheckResponses kept encoded, by a key that names everything the response is made of: encoding a
 * response with its headers and metadata costs more than the decision itself. At most `maxEntries`
 * are kept (each about 100 to 300 bytes in its own memory); when full, the oldest makes room, so a
 * client that makes up keys costs one encoding per check, as if nothing were kept.
 */
export class EncodedResponses {
  private readonly kept = new Map<string, EncodedCheckResponse>();

  constructor(private readonly maxEntries: number) {}

  /** The encoding kept under `key`, else the one `encode` makes, kept from then on. */
  response(key: string, encode: () => Buffer): EncodedCheckResponse {
    const kept = this.kept.get(key);
    if (kept !== undefined) return kept;
    const bytes = encode();
    // A copy of its own: a small encoding may be a slice of a shared 8 KiB pool it would keep alive.
    const own = Buffer.allocUnsafeSlow(bytes.length);
    bytes.copy(own);
    const response = new EncodedCheckResponse(own);
    setWithin(this.kept, key, response, this.maxEntries);
    return response;
  }

  clear(): void {
    this.kept.clear();
  }

  get size(): number {
    return this.kept.size;
  }
}

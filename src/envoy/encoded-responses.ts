import { EncodedCheckResponse } from './proto.js';
import { setWithin } from '../common/bounded-map.js';

/** Encoding costs more than the decision; when full the oldest goes, so made-up keys cost one encoding each. */
export class EncodedResponses {
  private readonly kept = new Map<string, EncodedCheckResponse>();

  constructor(private readonly maxEntries: number) {}

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

import type { SiteId } from '../decision/types.js';

const EMPTY = -1;
const REMOVED = -2;
const INITIAL_SLOTS = 64;

export function doubled(array: Float64Array<ArrayBuffer>, fill: number): Float64Array<ArrayBuffer> {
  const grown = new Float64Array(array.length * 2).fill(fill);
  grown.set(array);
  return grown;
}

/** Undefined when no number spells the id exactly (none in practice). */
function numericId(siteId: SiteId): number | undefined {
  const id = Number(siteId);
  return Number.isSafeInteger(id) && String(id) === siteId ? id : undefined;
}

/**
 * Site ids to entry numbers, in typed arrays: at 100,000 sites a Map of ids was work for every full collection,
 * whose pauses stalled checks. Ids no number spells exactly (none in practice) go in a Map beside it.
 */
export class SiteIdIndex {
  private slotIds = new Float64Array(INITIAL_SLOTS);
  private slotEntries = new Int32Array(INITIAL_SLOTS).fill(EMPTY);
  /** Holding an entry or marked REMOVED: a probe goes on past both. */
  private slotsTaken = 0;
  /** NaN for a free entry or one of `unusual`. */
  private entryIds = new Float64Array(INITIAL_SLOTS).fill(Number.NaN);
  private readonly freeEntries: number[] = [];
  private entriesEnd = 0;
  private readonly unusual = new Map<SiteId, number>();
  private readonly unusualIds = new Map<number, SiteId>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  get entryLimit(): number {
    return this.entriesEnd;
  }

  entryOf(siteId: SiteId): number {
    const id = numericId(siteId);
    if (id === undefined) return this.unusual.get(siteId) ?? -1;
    const entry = this.slotEntries[this.slotOf(id)]!;
    return entry >= 0 ? entry : -1;
  }

  add(siteId: SiteId): number {
    const held = this.entryOf(siteId);
    if (held >= 0) return held;
    const entry = this.newEntry();
    const id = numericId(siteId);
    if (id === undefined) {
      this.unusual.set(siteId, entry);
      this.unusualIds.set(entry, siteId);
      return entry;
    }
    if ((this.slotsTaken + 1) * 2 > this.slotIds.length) this.rehash();
    let slot = this.hash(id);
    while (this.slotEntries[slot]! >= 0) slot = (slot + 1) & (this.slotIds.length - 1);
    if (this.slotEntries[slot] === EMPTY) this.slotsTaken++;
    this.slotIds[slot] = id;
    this.slotEntries[slot] = entry;
    this.entryIds[entry] = id;
    return entry;
  }

  /** The entry removed (a later add may reuse it), or -1. */
  remove(siteId: SiteId): number {
    const id = numericId(siteId);
    let entry: number;
    if (id === undefined) {
      entry = this.unusual.get(siteId) ?? -1;
      if (entry < 0) return -1;
      this.unusual.delete(siteId);
      this.unusualIds.delete(entry);
    } else {
      const slot = this.slotOf(id);
      entry = this.slotEntries[slot]!;
      if (entry < 0) return -1;
      this.slotEntries[slot] = REMOVED;
      this.entryIds[entry] = Number.NaN;
    }
    this.freeEntries.push(entry);
    this.count--;
    return entry;
  }

  siteIdOf(entry: number): SiteId {
    const id = this.entryIds[entry]!;
    return Number.isNaN(id) ? this.unusualIds.get(entry)! : String(id);
  }

  *entries(): IterableIterator<number> {
    for (let entry = 0; entry < this.entriesEnd; entry++) {
      if (!Number.isNaN(this.entryIds[entry]!) || this.unusualIds.has(entry)) yield entry;
    }
  }

  *siteIds(): IterableIterator<SiteId> {
    for (const entry of this.entries()) yield this.siteIdOf(entry);
  }

  /** NaN when no number spells it. */
  numericIdOf(entry: number): number {
    return this.entryIds[entry]!;
  }

  private newEntry(): number {
    this.count++;
    const reused = this.freeEntries.pop();
    if (reused !== undefined) return reused;
    if (this.entriesEnd === this.entryIds.length) this.entryIds = doubled(this.entryIds, Number.NaN);
    return this.entriesEnd++;
  }

  /** Or the empty slot where its probe ends. */
  private slotOf(id: number): number {
    const mask = this.slotIds.length - 1;
    for (let slot = this.hash(id); ; slot = (slot + 1) & mask) {
      const entry = this.slotEntries[slot]!;
      if (entry === EMPTY || (entry >= 0 && this.slotIds[slot] === id)) return slot;
    }
  }

  /** Mixes both halves of the id: site ids are often dense runs, and a mask alone would cluster them. */
  private hash(id: number): number {
    const low = id | 0;
    const high = Math.floor(id / 4294967296) | 0;
    return (Math.imul(low ^ Math.imul(high, 0x9e3779b1), 0x85ebca6b) ^ (low >>> 15)) & (this.slotIds.length - 1);
  }

  private rehash(): void {
    const [ids, entries] = [this.slotIds, this.slotEntries];
    let slots = INITIAL_SLOTS;
    while (slots < this.count * 4) slots *= 2;
    this.slotIds = new Float64Array(slots);
    this.slotEntries = new Int32Array(slots).fill(EMPTY);
    this.slotsTaken = 0;
    for (let slot = 0; slot < ids.length; slot++) {
      if (entries[slot]! < 0) continue;
      const to = this.slotOf(ids[slot]!);
      this.slotIds[to] = ids[slot]!;
      this.slotEntries[to] = entries[slot]!;
      this.slotsTaken++;
    }
  }
}

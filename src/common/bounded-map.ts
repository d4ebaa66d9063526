/** For caches and tallies anyone can add to: when full, the oldest entry (first in insertion order) goes. */
export function setWithin<K, V>(map: Map<K, V>, key: K, value: V, maxEntries: number): void {
  if (map.size >= maxEntries) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

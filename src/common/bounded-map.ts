/**
 * Sets `key` in a map that keeps at most `maxEntries`, first dropping its oldest entry (the first in
 * insertion order) when full: for the caches and tallies anyone can add entries to.
 */
export function setWithin<K, V>(map: Map<K, V>, key: K, value: V, maxEntries: number): void {
  if (map.size >= maxEntries) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

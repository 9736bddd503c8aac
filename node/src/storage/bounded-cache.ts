/**
 * A Map with a size bound: when full, the oldest tenth of the entries (insertion order) go.
 * Cheaper than a true LRU and good enough for caches that are refreshed on every commit.
 */
export class BoundedCache<K, V> {
  private readonly map = new Map<K, V>();
  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  /** An existing key keeps its place (updating in place is much cheaper than re-inserting). */
  set(key: K, value: V): void {
    if (!this.map.has(key) && this.map.size >= this.capacity) this.evict();
    this.map.set(key, value);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }

  private evict(): void {
    let n = Math.max(1, Math.floor(this.capacity / 10));
    for (const k of this.map.keys()) {
      if (n-- <= 0) break;
      this.map.delete(k);
    }
  }
}

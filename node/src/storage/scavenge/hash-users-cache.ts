/**
 * The collision check of accumulation, shared by both scavenge state implementations: a bounded
 * LRU cache (`--scavenge-hash-users-cache-capacity`, default 100 000 hashes) in front of the
 * HashUsers table, which remembers the first stream name seen for every 64-bit stream hash.
 *
 * Invariant: every cached entry is also in the table, or in the table as the open transaction
 * will commit it. When a transaction rolls back, the owner calls `forget()` so that the cache
 * never answers with a name the table lost.
 */
import { assert } from '../../errors.js';
import { normaliseStreamHash } from './scavenge-state-values.js';

/** Default of `--scavenge-hash-users-cache-capacity`, in hashes. */
export const HASH_USERS_CACHE_CAPACITY_DEFAULT = 100_000;

/** The table behind the cache. `hash` is the unsigned 64-bit stream hash. */
export interface HashUsersTable {
  read(hash: bigint): string | undefined;
  /** The recorded users of those of `hashes` that have one. */
  readMany(hashes: readonly bigint[]): Map<bigint, string>;
  /** Inserts users of hashes that have none (each hash at most once). */
  insertMany(users: ReadonlyArray<readonly [bigint, string]>): void;
}

export interface HashUsersCacheStats {
  hits: number;
  misses: number;
  collisions: number;
}

export class HashUsersCache {
  /** Map iteration order is insertion order: re-inserting on a hit makes the first key the LRU. */
  private readonly entries = new Map<bigint, string>();
  private readonly counters: HashUsersCacheStats = { hits: 0, misses: 0, collisions: 0 };

  constructor(
    private readonly capacity: number,
    private readonly table: HashUsersTable,
  ) {
    assert(Number.isSafeInteger(capacity) && capacity >= 1, 'hash users cache capacity >= 1');
  }

  /**
   * Records `stream` as the user of `hash` if the hash is new. Returns true when a different
   * name already uses the hash (a collision); the recorded name is never replaced.
   */
  check(hash: bigint, stream: string): boolean {
    return this.checkMany([{ hash, stream }]) > 0;
  }

  /**
   * `check` for many users at once: the table is read once for all the hashes not cached and
   * written once for all the new ones. Returns how many collided.
   */
  checkMany(users: ReadonlyArray<{ readonly hash: bigint; readonly stream: string }>): number {
    const keys = users.map((u) => normaliseStreamHash(u.hash));
    const read = new Set<bigint>();
    for (const key of keys) if (!this.entries.has(key)) read.add(key);
    const recorded = read.size > 0 ? this.table.readMany([...read]) : new Map<bigint, string>();
    const inserts: Array<[bigint, string]> = [];
    let collisions = 0;
    for (const [i, u] of users.entries()) {
      assert(u.stream.length > 0, 'stream name is not empty');
      const key = keys[i]!;
      let user = this.entries.get(key);
      if (user !== undefined) {
        this.counters.hits++;
        this.entries.delete(key);
      } else {
        this.counters.misses++;
        user = recorded.get(key);
        // Cached in the first pass but evicted since: not read above.
        if (user === undefined && !read.has(key)) user = this.table.read(key);
        if (user === undefined) {
          user = u.stream;
          inserts.push([key, user]);
        }
        recorded.set(key, user);
        if (this.entries.size >= this.capacity) this.checkEvict();
      }
      this.entries.set(key, user);
      if (user !== u.stream) collisions++;
    }
    assert(this.entries.size <= this.capacity, 'hash users cache stays within its capacity');
    if (inserts.length > 0) this.table.insertMany(inserts);
    this.counters.collisions += collisions;
    return collisions;
  }

  private checkEvict(): void {
    const oldest = this.entries.keys().next();
    if (oldest.done !== true) this.entries.delete(oldest.value);
  }

  stats(): HashUsersCacheStats {
    return { ...this.counters };
  }

  /** Drops every cached entry (after a rollback); the counters are kept. */
  forget(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

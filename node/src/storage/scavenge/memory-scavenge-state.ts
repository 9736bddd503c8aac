/**
 * The scavenge state in memory (for --mem-db and for unit tests of the phases). Same semantics as
 * the SQLite implementation, including atomic transactions: while a transaction is open every
 * write pushes an undo action, and a throw replays them backwards. Nested transactions behave as
 * savepoints: a throw inside undoes only the inner writes (and propagates), while everything
 * commits together with the outermost transaction.
 *
 * Values are copied in and out, so a caller can never change stored state through a reference.
 */
import { assert } from '../../errors.js';
import { HASH_USERS_CACHE_CAPACITY_DEFAULT, HashUsersCache } from './hash-users-cache.js';
import type { HashUsersCacheStats } from './hash-users-cache.js';
import {
  assertChunkNumber,
  assertLimit,
  assertMeta,
  assertOriginal,
  assertSynchronousResult,
  assertTimeRange,
  assertWeight,
  compareStreamNames,
  decodeCheckpoint,
  encodeCheckpoint,
} from './scavenge-state-values.js';
import type {
  HashUser,
  MetastreamData,
  OriginalStreamData,
  ScavengeCheckpoint,
  ScavengeState,
} from './scavenge-types.js';

/**
 * The data of a memory scavenge state, which outlives the handles opened on it: with --mem-db the
 * node keeps one store for its lifetime and opens a handle per scavenge run (closing a handle
 * keeps the data, as closing the SQLite database keeps the file). Opaque outside this module.
 */
export interface MemoryScavengeStore {
  readonly kind: 'memory-scavenge-store';
}

export function createMemoryScavengeStore(): MemoryScavengeStore {
  return new MemoryStore();
}

export interface MemoryScavengeStateOptions {
  /** The data to open; default a new, empty store. */
  readonly store?: MemoryScavengeStore;
  /** LRU capacity in hashes (one cache per handle, as per SQLite connection); default 100 000. */
  readonly hashUsersCacheCapacity?: number;
}

export function openMemoryScavengeState(options: MemoryScavengeStateOptions = {}): ScavengeState {
  const store = options.store ?? createMemoryScavengeStore();
  assert(store instanceof MemoryStore, 'the store comes from createMemoryScavengeStore');
  const capacity = options.hashUsersCacheCapacity ?? HASH_USERS_CACHE_CAPACITY_DEFAULT;
  return new MemoryScavengeState(store, capacity);
}

type TimeRange = { minMs: number; maxMs: number };

/**
 * Everything a handle reads and writes lives here, reached through one readonly reference, so
 * the data is shared by every handle on the store (and by objects delegating to a handle through
 * its prototype: their writes still land in the store).
 */
class MemoryStore implements MemoryScavengeStore {
  readonly kind = 'memory-scavenge-store';
  /** The checkpoint is kept as JSON so that it goes through the same checks as on disk. */
  checkpointJson: string | undefined = undefined;
  lastCompletedPointNumber = -1;
  lastAccumulatedChunkNumber = -1;
  readonly originals = new Map<string, OriginalStreamData>();
  readonly metas = new Map<string, MetastreamData>();
  readonly weights = new Map<number, number>();
  readonly timeRanges = new Map<number, TimeRange>();
  readonly hashUsers = new Map<bigint, string>();
  /** Active original stream names in code-point order; rebuilt lazily after a change. */
  activeSorted: string[] | null = null;
}

class MemoryScavengeState implements ScavengeState {
  private readonly hashUsersCache: HashUsersCache;
  /** The open transaction's undo actions (in an object, for the same reason as the store). */
  private readonly transactionState: { undoLog: Array<() => void> | null; closed: boolean } = {
    undoLog: null,
    closed: false,
  };

  constructor(
    private readonly store: MemoryStore,
    hashUsersCacheCapacity: number,
  ) {
    this.hashUsersCache = new HashUsersCache(hashUsersCacheCapacity, {
      read: (hash) => this.store.hashUsers.get(hash),
      readMany: (hashes) => {
        const found = new Map<bigint, string>();
        for (const hash of hashes) {
          const user = this.store.hashUsers.get(hash);
          if (user !== undefined) found.set(hash, user);
        }
        return found;
      },
      insertMany: (users) => { for (const [hash, stream] of users) this.mapSet(this.store.hashUsers, hash, stream); },
    });
  }

  getCheckpoint(): ScavengeCheckpoint | undefined {
    this.assertOpen();
    if (this.store.checkpointJson === undefined) return undefined;
    const checkpoint = decodeCheckpoint(this.store.checkpointJson);
    assert(!('error' in checkpoint), 'stored checkpoint decodes');
    return checkpoint;
  }

  setCheckpoint(checkpoint: ScavengeCheckpoint): void {
    this.assertOpen();
    const json = encodeCheckpoint(checkpoint);
    const previousJson = this.store.checkpointJson;
    const previousCompleted = this.store.lastCompletedPointNumber;
    this.pushUndo(() => {
      this.store.checkpointJson = previousJson;
      this.store.lastCompletedPointNumber = previousCompleted;
    });
    this.store.checkpointJson = json;
    if (checkpoint.stage === 'Done') {
      this.store.lastCompletedPointNumber = checkpoint.scavengePoint.number;
    }
  }

  lastCompletedScavengePointNumber(): number {
    this.assertOpen();
    return this.store.lastCompletedPointNumber;
  }

  lastAccumulatedChunk(): number {
    this.assertOpen();
    return this.store.lastAccumulatedChunkNumber;
  }

  setLastAccumulatedChunk(chunkNumber: number): void {
    this.assertOpen();
    assert(Number.isSafeInteger(chunkNumber) && chunkNumber >= -1, 'chunk number >= -1');
    const previous = this.store.lastAccumulatedChunkNumber;
    this.pushUndo(() => {
      this.store.lastAccumulatedChunkNumber = previous;
    });
    this.store.lastAccumulatedChunkNumber = chunkNumber;
  }

  getOriginal(stream: string): OriginalStreamData | undefined {
    this.assertOpen();
    const data = this.store.originals.get(stream);
    return data === undefined ? undefined : { ...data };
  }

  setOriginal(data: OriginalStreamData): void {
    this.assertOpen();
    assertOriginal(data);
    const previous = this.store.originals.get(data.stream);
    const activeChanged = previous?.status !== data.status;
    if (activeChanged) this.store.activeSorted = null;
    this.mapSet(this.store.originals, data.stream, { ...data });
    if (activeChanged) this.pushUndo(() => (this.store.activeSorted = null));
  }

  getOriginals(streams: readonly string[]): Map<string, OriginalStreamData> {
    return foundByKey(streams, (stream) => this.getOriginal(stream));
  }

  setOriginals(data: readonly OriginalStreamData[]): void {
    for (const d of data) this.setOriginal(d);
  }

  activeOriginals(afterStream: string | null, limit: number): OriginalStreamData[] {
    this.assertOpen();
    assertLimit(limit);
    const names = this.activeOriginalsSorted();
    let low = 0;
    if (afterStream !== null) {
      // Binary search for the first name strictly after `afterStream`.
      let high = names.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (compareStreamNames(names[middle] ?? '', afterStream) <= 0) low = middle + 1;
        else high = middle;
      }
    }
    const page: OriginalStreamData[] = [];
    for (const name of names.slice(low, low + limit)) {
      const data = this.store.originals.get(name);
      assert(data !== undefined && data.status === 'Active', 'sorted active names are current');
      page.push({ ...data });
    }
    return page;
  }

  private activeOriginalsSorted(): string[] {
    if (this.store.activeSorted === null) {
      const names: string[] = [];
      for (const data of this.store.originals.values()) {
        if (data.status === 'Active') names.push(data.stream);
      }
      this.store.activeSorted = names.sort(compareStreamNames);
    }
    return this.store.activeSorted;
  }

  *allOriginalsWithDiscards(): Iterable<OriginalStreamData> {
    this.assertOpen();
    const names = [...this.store.originals.keys()].sort(compareStreamNames);
    for (const name of names) {
      const data = this.store.originals.get(name);
      if (data === undefined) continue;
      const hasDiscards = data.discardPoint > 0 || data.maybeDiscardPoint > 0 || data.isTombstoned;
      if (hasDiscards) yield { ...data };
    }
  }

  getMeta(metastream: string): MetastreamData | undefined {
    this.assertOpen();
    const data = this.store.metas.get(metastream);
    return data === undefined ? undefined : { ...data };
  }

  setMeta(data: MetastreamData): void {
    this.assertOpen();
    assertMeta(data);
    this.mapSet(this.store.metas, data.metastream, { ...data });
  }

  getMetas(metastreams: readonly string[]): Map<string, MetastreamData> {
    return foundByKey(metastreams, (metastream) => this.getMeta(metastream));
  }

  setMetas(data: readonly MetastreamData[]): void {
    for (const d of data) this.setMeta(d);
  }

  *allMetas(): Iterable<MetastreamData> {
    this.assertOpen();
    const names = [...this.store.metas.keys()].sort(compareStreamNames);
    for (const name of names) {
      const data = this.store.metas.get(name);
      if (data !== undefined) yield { ...data };
    }
  }

  addChunkWeight(logicalChunkNumber: number, weight: number): void {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    assertWeight(weight);
    const total = (this.store.weights.get(logicalChunkNumber) ?? 0) + weight;
    this.mapSet(this.store.weights, logicalChunkNumber, total);
  }

  getChunkWeight(logicalChunkNumber: number): number {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    return this.store.weights.get(logicalChunkNumber) ?? 0;
  }

  resetChunkWeight(logicalChunkNumber: number): void {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    this.mapDelete(this.store.weights, logicalChunkNumber);
  }

  setChunkTimeRange(logicalChunkNumber: number, minMs: number, maxMs: number): void {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    assertTimeRange(minMs, maxMs);
    this.mapSet(this.store.timeRanges, logicalChunkNumber, { minMs, maxMs });
  }

  getChunkTimeRange(logicalChunkNumber: number): { minMs: number; maxMs: number } | undefined {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    const range = this.store.timeRanges.get(logicalChunkNumber);
    return range === undefined ? undefined : { ...range };
  }

  checkHashUser(hash: bigint, stream: string): boolean {
    this.assertOpen();
    return this.hashUsersCache.check(hash, stream);
  }

  checkHashUsers(users: readonly HashUser[]): number {
    this.assertOpen();
    return this.hashUsersCache.checkMany(users);
  }

  hashUsersCacheStats(): HashUsersCacheStats {
    return this.hashUsersCache.stats();
  }

  transaction<T>(fn: () => T): T {
    this.assertOpen();
    const outer = this.transactionState.undoLog === null;
    if (outer) this.transactionState.undoLog = [];
    const undoLog = this.transactionState.undoLog;
    assert(undoLog !== null, 'transaction has an undo log');
    const savepoint = undoLog.length;
    try {
      const result = fn();
      assertSynchronousResult(result);
      return result;
    } catch (err: unknown) {
      this.transactionUndo(undoLog, savepoint);
      throw err;
    } finally {
      if (outer) this.transactionState.undoLog = null;
    }
  }

  /** Replays the undo actions after `savepoint` backwards and drops them. */
  private transactionUndo(undoLog: Array<() => void>, savepoint: number): void {
    while (undoLog.length > savepoint) undoLog.pop()?.();
    this.hashUsersCache.forget();
    this.store.activeSorted = null;
  }

  clean(): void {
    this.assertOpen();
    this.transaction(() => {
      for (const name of [...this.store.metas.keys()]) this.mapDelete(this.store.metas, name);
      for (const [name, data] of [...this.store.originals]) {
        if (data.status === 'Spent') this.mapDelete(this.store.originals, name);
      }
    });
  }

  close(): void {
    this.transactionState.closed = true;
  }

  private assertOpen(): void {
    assert(!this.transactionState.closed, 'scavenge state is open');
  }

  private pushUndo(undo: () => void): void {
    this.transactionState.undoLog?.push(undo);
  }

  private mapSet<K, V>(map: Map<K, V>, key: K, value: V): void {
    this.mapRememberUndo(map, key);
    map.set(key, value);
  }

  private mapDelete<K, V>(map: Map<K, V>, key: K): void {
    this.mapRememberUndo(map, key);
    map.delete(key);
  }

  private mapRememberUndo<K, V>(map: Map<K, V>, key: K): void {
    if (this.transactionState.undoLog === null) return;
    if (map.has(key)) {
      const previous = map.get(key) as V;
      this.transactionState.undoLog.push(() => map.set(key, previous));
    } else {
      this.transactionState.undoLog.push(() => map.delete(key));
    }
  }
}

/** The values `get` finds for `keys`, by key; keys without one are left out. */
function foundByKey<T>(keys: readonly string[], get: (key: string) => T | undefined): Map<string, T> {
  const found = new Map<string, T>();
  for (const key of keys) {
    const value = get(key);
    if (value !== undefined) found.set(key, value);
  }
  return found;
}

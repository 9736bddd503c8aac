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
  MetastreamData,
  OriginalStreamData,
  ScavengeCheckpoint,
  ScavengeState,
} from './scavenge-types.js';

export interface MemoryScavengeStateOptions {
  /** LRU capacity in hashes; default 100 000. */
  readonly hashUsersCacheCapacity?: number;
}

export function openMemoryScavengeState(options: MemoryScavengeStateOptions = {}): ScavengeState {
  const capacity = options.hashUsersCacheCapacity ?? HASH_USERS_CACHE_CAPACITY_DEFAULT;
  return new MemoryScavengeState(capacity);
}

type TimeRange = { minMs: number; maxMs: number };

class MemoryScavengeState implements ScavengeState {
  /** The checkpoint is kept as JSON so that it goes through the same checks as on disk. */
  private checkpointJson: string | undefined;
  private lastCompletedPointNumber = -1;
  private lastAccumulatedChunkNumber = -1;
  private readonly originals = new Map<string, OriginalStreamData>();
  private readonly metas = new Map<string, MetastreamData>();
  private readonly weights = new Map<number, number>();
  private readonly timeRanges = new Map<number, TimeRange>();
  private readonly hashUsers = new Map<bigint, string>();
  private readonly hashUsersCache: HashUsersCache;
  /** Active original stream names in code-point order; rebuilt lazily after a change. */
  private activeSorted: string[] | null = null;
  /** Undo actions of the open transaction, or null outside one. */
  private undoLog: Array<() => void> | null = null;
  private closed = false;

  constructor(hashUsersCacheCapacity: number) {
    this.hashUsersCache = new HashUsersCache(hashUsersCacheCapacity, {
      read: (hash) => this.hashUsers.get(hash),
      insert: (hash, stream) => this.mapSet(this.hashUsers, hash, stream),
    });
  }

  getCheckpoint(): ScavengeCheckpoint | undefined {
    this.assertOpen();
    if (this.checkpointJson === undefined) return undefined;
    const checkpoint = decodeCheckpoint(this.checkpointJson);
    assert(!('error' in checkpoint), 'stored checkpoint decodes');
    return checkpoint;
  }

  setCheckpoint(checkpoint: ScavengeCheckpoint): void {
    this.assertOpen();
    const json = encodeCheckpoint(checkpoint);
    const previousJson = this.checkpointJson;
    const previousCompleted = this.lastCompletedPointNumber;
    this.pushUndo(() => {
      this.checkpointJson = previousJson;
      this.lastCompletedPointNumber = previousCompleted;
    });
    this.checkpointJson = json;
    if (checkpoint.stage === 'Done') {
      this.lastCompletedPointNumber = checkpoint.scavengePoint.number;
    }
  }

  lastCompletedScavengePointNumber(): number {
    this.assertOpen();
    return this.lastCompletedPointNumber;
  }

  lastAccumulatedChunk(): number {
    this.assertOpen();
    return this.lastAccumulatedChunkNumber;
  }

  setLastAccumulatedChunk(chunkNumber: number): void {
    this.assertOpen();
    assert(Number.isSafeInteger(chunkNumber) && chunkNumber >= -1, 'chunk number >= -1');
    const previous = this.lastAccumulatedChunkNumber;
    this.pushUndo(() => {
      this.lastAccumulatedChunkNumber = previous;
    });
    this.lastAccumulatedChunkNumber = chunkNumber;
  }

  getOriginal(stream: string): OriginalStreamData | undefined {
    this.assertOpen();
    const data = this.originals.get(stream);
    return data === undefined ? undefined : { ...data };
  }

  setOriginal(data: OriginalStreamData): void {
    this.assertOpen();
    assertOriginal(data);
    const previous = this.originals.get(data.stream);
    const activeChanged = previous?.status !== data.status;
    if (activeChanged) this.activeSorted = null;
    this.mapSet(this.originals, data.stream, { ...data });
    if (activeChanged) this.pushUndo(() => (this.activeSorted = null));
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
      const data = this.originals.get(name);
      assert(data !== undefined && data.status === 'Active', 'sorted active names are current');
      page.push({ ...data });
    }
    return page;
  }

  private activeOriginalsSorted(): string[] {
    if (this.activeSorted === null) {
      const names: string[] = [];
      for (const data of this.originals.values()) {
        if (data.status === 'Active') names.push(data.stream);
      }
      this.activeSorted = names.sort(compareStreamNames);
    }
    return this.activeSorted;
  }

  *allOriginalsWithDiscards(): Iterable<OriginalStreamData> {
    this.assertOpen();
    const names = [...this.originals.keys()].sort(compareStreamNames);
    for (const name of names) {
      const data = this.originals.get(name);
      if (data === undefined) continue;
      const hasDiscards = data.discardPoint > 0 || data.maybeDiscardPoint > 0 || data.isTombstoned;
      if (hasDiscards) yield { ...data };
    }
  }

  getMeta(metastream: string): MetastreamData | undefined {
    this.assertOpen();
    const data = this.metas.get(metastream);
    return data === undefined ? undefined : { ...data };
  }

  setMeta(data: MetastreamData): void {
    this.assertOpen();
    assertMeta(data);
    this.mapSet(this.metas, data.metastream, { ...data });
  }

  *allMetas(): Iterable<MetastreamData> {
    this.assertOpen();
    const names = [...this.metas.keys()].sort(compareStreamNames);
    for (const name of names) {
      const data = this.metas.get(name);
      if (data !== undefined) yield { ...data };
    }
  }

  addChunkWeight(logicalChunkNumber: number, weight: number): void {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    assertWeight(weight);
    const total = (this.weights.get(logicalChunkNumber) ?? 0) + weight;
    this.mapSet(this.weights, logicalChunkNumber, total);
  }

  getChunkWeight(logicalChunkNumber: number): number {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    return this.weights.get(logicalChunkNumber) ?? 0;
  }

  resetChunkWeight(logicalChunkNumber: number): void {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    this.mapDelete(this.weights, logicalChunkNumber);
  }

  setChunkTimeRange(logicalChunkNumber: number, minMs: number, maxMs: number): void {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    assertTimeRange(minMs, maxMs);
    this.mapSet(this.timeRanges, logicalChunkNumber, { minMs, maxMs });
  }

  getChunkTimeRange(logicalChunkNumber: number): { minMs: number; maxMs: number } | undefined {
    this.assertOpen();
    assertChunkNumber(logicalChunkNumber);
    const range = this.timeRanges.get(logicalChunkNumber);
    return range === undefined ? undefined : { ...range };
  }

  checkHashUser(hash: bigint, stream: string): boolean {
    this.assertOpen();
    return this.hashUsersCache.check(hash, stream);
  }

  hashUsersCacheStats(): HashUsersCacheStats {
    return this.hashUsersCache.stats();
  }

  transaction<T>(fn: () => T): T {
    this.assertOpen();
    const outer = this.undoLog === null;
    if (outer) this.undoLog = [];
    const undoLog = this.undoLog;
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
      if (outer) this.undoLog = null;
    }
  }

  /** Replays the undo actions after `savepoint` backwards and drops them. */
  private transactionUndo(undoLog: Array<() => void>, savepoint: number): void {
    while (undoLog.length > savepoint) undoLog.pop()?.();
    this.hashUsersCache.forget();
    this.activeSorted = null;
  }

  clean(): void {
    this.assertOpen();
    this.transaction(() => {
      for (const name of [...this.metas.keys()]) this.mapDelete(this.metas, name);
      for (const [name, data] of [...this.originals]) {
        if (data.status === 'Spent') this.mapDelete(this.originals, name);
      }
    });
  }

  close(): void {
    this.closed = true;
  }

  private assertOpen(): void {
    assert(!this.closed, 'scavenge state is open');
  }

  private pushUndo(undo: () => void): void {
    this.undoLog?.push(undo);
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
    if (this.undoLog === null) return;
    if (map.has(key)) {
      const previous = map.get(key) as V;
      this.undoLog.push(() => map.set(key, previous));
    } else {
      this.undoLog.push(() => map.delete(key));
    }
  }
}

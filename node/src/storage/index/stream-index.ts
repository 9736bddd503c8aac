/**
 * The persistent stream index (an LSM tree, after EventStoreDB's TableIndex): a memtable takes
 * adds; when it reaches `maxMemTableSize` entries it is frozen (still searched) and a fresh one
 * takes adds, while a single background worker writes frozen memtables to level-0 tables and
 * merges two tables of a level into one of the next level. Each change of the table set is made
 * durable in `indexmap` before it becomes visible in memory, and replaced files are deleted only
 * after that.
 *
 * Reads are synchronous: every lookup asks each source (memtable, frozen memtables, tables whose
 * bloom filter may hold the hash) and merges the answers, so a table swap between two lookups
 * never loses or duplicates entries. Exact duplicates (same hash, event number and position, e.g.
 * from a replay overlapping the tables) are returned once.
 *
 * Failure policy: a background failure (write or fsync error, corruption) is kept; it is logged,
 * rethrown by flush/mergeAll/close, and thrown by every later add() so the writer stops.
 */

import type { Logger } from 'pino';
import { EventDbError, FatalError, assert } from '../../errors.js';
import {
  ENTRY_SIZE_BYTES,
  ENTRY_SIZE_WORDS,
  assertEntryNumbers,
  joinHash,
  readUint53,
  splitHash,
} from './index-entry-codec.js';
import { writeIndexMap } from './index-map.js';
import { MemTable } from './memtable.js';
import { PTable } from './ptable.js';
import { mergeSortedChunks, type EncodedEntryFilter } from './ptable-merge.js';
import { writePTable } from './ptable-writer.js';
import { compareEntriesDescending, type RangeQuery } from './range-query.js';
import { deleteIndexFiles, removeTableFiles } from './index-files.js';
import type { IndexEntry, PreparedRemoval, StreamHasher, StreamIndex } from './stream-index-port.js';
import type { WrittenPTable } from './ptable-writer.js';

/** Entries per chunk when writing or merging tables (1.5 MiB buffers). */
const CHUNK_ENTRY_COUNT = 65_536;
/** Smaller pieces for a paced merge (removeEntries with `between`): shorter runs of sync work. */
const PACED_CHUNK_ENTRY_COUNT = 16_384;
const ITERATE_BATCH_MIN = 16;
const ITERATE_BATCH_MAX = 4096;
/** Frozen memtables waiting for a flush beyond which a warning is logged once. */
const FROZEN_WARN_COUNT = 3;
const HASH_MAX = (1n << 64n) - 1n;

export interface LiveTable {
  readonly level: number;
  readonly table: PTable;
}

export interface StreamIndexConfig {
  readonly directory: string;
  readonly maxMemTableSize: number;
  readonly memOnly: boolean;
  readonly bloomBitCountMax: number;
  /** Entries of the smallest tables are held in memory up to this many bytes in total. */
  readonly tableCacheSizeBytesMax: number;
  readonly hasher: StreamHasher;
  readonly log: Logger;
}

interface CollectResult {
  readonly entries: IndexEntry[];
  /** True when some source may hold more entries below the last one returned. */
  readonly maybeMore: boolean;
}

export class PersistentStreamIndex implements StreamIndex {
  readonly hasher: StreamHasher;
  private readonly config: StreamIndexConfig;
  private readonly log: Logger;
  private mem: MemTable;
  private frozen: MemTable[] = [];
  private tables: LiveTable[];
  private persistedLogPositionValue: number;
  private addedLogPositionValue: number;
  private bloomFilterNegatives = 0;
  private tail: Promise<void> = Promise.resolve();
  private drainScheduled = false;
  private failure: unknown = undefined;
  private closed = false;
  private frozenWarned = false;
  /** Full merges (mergeAll, removeEntries) waiting: level merges before them would be wasted. */
  private fullMergesPending = 0;

  constructor(config: StreamIndexConfig, tables: LiveTable[], persistedLogPosition: number) {
    assert(config.maxMemTableSize >= 1, 'maxMemTableSize is at least 1');
    this.config = config;
    this.log = config.log;
    this.hasher = config.hasher;
    this.tables = tables;
    this.persistedLogPositionValue = persistedLogPosition;
    this.addedLogPositionValue = persistedLogPosition;
    this.mem = new MemTable(persistedLogPosition);
  }

  get persistedLogPosition(): number {
    return this.config.memOnly ? this.addedLogPositionValue : this.persistedLogPositionValue;
  }

  get addedLogPosition(): number {
    return this.addedLogPositionValue;
  }

  add(entries: readonly IndexEntry[], upToLogPosition: number): void {
    if (this.failure !== undefined) throw this.failure;
    assert(!this.closed, 'index add after close');
    assert(upToLogPosition >= this.addedLogPositionValue, 'index adds arrive in log order');
    const mem = this.mem;
    for (const entry of entries) {
      assert(entry.streamHash >= 0n && entry.streamHash <= HASH_MAX, 'stream hash is a uint64');
      assertEntryNumbers(entry.eventNumber, entry.logPosition);
      mem.add(entry.streamHash, entry.eventNumber, entry.logPosition);
    }
    mem.upToLogPosition = upToLogPosition;
    this.addedLogPositionValue = upToLogPosition;
    if (!this.config.memOnly && mem.entryCount >= this.config.maxMemTableSize) {
      this.freezeMemTable();
    }
  }

  getRange(streamHash: bigint, fromEventNumber: number, toEventNumber: number): IndexEntry[] {
    if (toEventNumber < fromEventNumber) return [];
    return this.collect({
      streamHash,
      key: splitHash(streamHash),
      beforeEventNumber: toEventNumber,
      beforeLogPosition: Infinity,
      minEventNumber: fromEventNumber,
      limit: Infinity,
    }).entries;
  }

  *iterateDescending(streamHash: bigint): Iterable<IndexEntry> {
    const key = splitHash(streamHash);
    let beforeEventNumber = Infinity;
    let beforeLogPosition = Infinity;
    let limit = ITERATE_BATCH_MIN;
    for (;;) {
      const query = { streamHash, key, beforeEventNumber, beforeLogPosition, limit };
      const batch = this.collect({ ...query, minEventNumber: -Infinity });
      yield* batch.entries;
      const last = batch.entries[batch.entries.length - 1];
      if (!batch.maybeMore || last === undefined) return;
      beforeEventNumber = last.eventNumber;
      beforeLogPosition = last.logPosition;
      limit = Math.min(limit * 2, ITERATE_BATCH_MAX);
    }
  }

  async flush(): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    if (this.config.memOnly) return;
    const lastFrozen = this.frozen.at(-1);
    const coveredLogPosition = lastFrozen?.upToLogPosition ?? this.persistedLogPositionValue;
    if (this.mem.entryCount > 0 || this.mem.upToLogPosition > coveredLogPosition) {
      this.freezeMemTable();
    }
    await this.whenIdle();
  }

  async mergeAll(): Promise<void> {
    await this.withFullMergePending(async () => {
      await this.flush();
      if (this.config.memOnly) return;
      await this.enqueue(async () => {
        if (this.tables.length < 2) return;
        const level = Math.max(...this.tables.map((live) => live.level));
        await this.mergeTables(this.tables, level);
      });
    });
    await this.whenIdle();
  }

  /**
   * Removes the entries `keep` rejects (the index stage of a scavenge): flushes, then rewrites
   * all tables into one, filtering as it streams. Entries added meanwhile are not examined.
   * `keep` must not hold on to the entry it is given (it is a view, reused for the next one).
   */
  async removeEntries(
    keep: (entry: IndexEntry) => boolean,
    between?: () => Promise<void>,
  ): Promise<{ removedEntryCount: number }> {
    const removedEntryCount = await this.withFullMergePending(async () => {
      await this.flush();
      if (this.config.memOnly) return this.mem.retain(keep);
      return this.enqueue(async () => {
        if (this.tables.length === 0) return 0;
        let entryCountBefore = 0;
        for (const live of this.tables) entryCountBefore += live.table.entryCount;
        const level = Math.max(...this.tables.map((live) => live.level));
        // One reused view per merge: no object or bigint per entry unless `keep` reads the hash.
        const view = new EncodedEntryView();
        const keepEncoded: EncodedEntryFilter = (words, entryIndex) => keep(view.at(words, entryIndex));
        return entryCountBefore - (await this.mergeTables(this.tables, level, keepEncoded, between));
      });
    });
    await this.whenIdle();
    return { removedEntryCount };
  }

  async prepareRemoveEntries(
    keep: (entry: IndexEntry) => boolean,
    between?: () => Promise<void>,
  ): Promise<PreparedRemoval | undefined> {
    if (this.config.memOnly) return undefined;
    // Level merges stay held back until commit or abort: they would replace the merged inputs.
    this.fullMergesPending += 1;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.fullMergesPending -= 1;
      if (this.fullMergesPending === 0 && this.mergeableLevel() !== undefined) this.kick();
    };
    try {
      await this.flush();
      const prepared = await this.enqueue(async () => {
        const inputs = [...this.tables];
        if (inputs.length === 0) return { inputs, level: 0, written: undefined, entryCountBefore: 0, startMs: performance.now() };
        let entryCountBefore = 0;
        for (const live of inputs) entryCountBefore += live.table.entryCount;
        const level = Math.max(...inputs.map((live) => live.level));
        const view = new EncodedEntryView();
        const keepEncoded: EncodedEntryFilter = (words, entryIndex) => keep(view.at(words, entryIndex));
        const startMs = performance.now();
        const written = await this.writeMerged(inputs, keepEncoded, between);
        return { inputs, level, written, entryCountBefore, startMs };
      });
      const { inputs, level, written, entryCountBefore, startMs } = prepared;
      let settled = false;
      const discard = async (): Promise<void> => {
        if (written !== undefined) await removeTableFiles(this.config.directory, [written.fileName]);
      };
      return {
        removedEntryCount: entryCountBefore - (written?.entryCount ?? 0),
        commit: async () => {
          assert(!settled, 'a prepared removal is committed or aborted once');
          settled = true;
          try {
            const installed = await this.enqueue(async () => {
              if (!inputs.every((live) => this.tables.includes(live))) {
                await discard();
                return false;
              }
              if (inputs.length > 0) await this.installMerged(inputs, level, written, startMs);
              return true;
            });
            await this.whenIdle();
            return installed;
          } finally {
            release();
          }
        },
        abort: async () => {
          assert(!settled, 'a prepared removal is committed or aborted once');
          settled = true;
          try {
            await discard();
          } finally {
            release();
          }
        },
      };
    } catch (err: unknown) {
      release();
      throw err;
    }
  }

  /**
   * Runs `work` (a flush followed by a merge of every table) with level merges held back: the
   * flush would otherwise cascade merges through the levels only for the full merge to rewrite
   * the result again. Level merging resumes (kick) once no full merge is pending.
   */
  private async withFullMergePending<T>(work: () => Promise<T>): Promise<T> {
    this.fullMergesPending += 1;
    try {
      return await work();
    } finally {
      this.fullMergesPending -= 1;
      if (this.fullMergesPending === 0 && this.mergeableLevel() !== undefined) this.kick();
    }
  }

  async resetAbove(logPosition: number): Promise<boolean> {
    await this.whenIdle();
    return this.enqueue(() => this.resetAboveNow(logPosition));
  }

  async close(): Promise<void> {
    try {
      await this.whenIdle();
    } finally {
      this.closed = true;
      for (const live of this.tables) live.table.close();
    }
  }

  stats(): {
    memTableEntries: number;
    frozenMemTableCount: number;
    tableCount: number;
    tableEntries: number;
    bloomFilterNegatives: number;
  } {
    let memTableEntries = this.mem.entryCount;
    for (const frozen of this.frozen) memTableEntries += frozen.entryCount;
    let tableEntries = 0;
    for (const live of this.tables) tableEntries += live.table.entryCount;
    return {
      memTableEntries,
      frozenMemTableCount: this.frozen.length,
      tableCount: this.tables.length,
      tableEntries,
      bloomFilterNegatives: this.bloomFilterNegatives,
    };
  }

  /**
   * Holds the entries of the smallest tables in memory while their total stays within
   * `tableCacheSizeBytesMax`; larger tables are read page by page. Run after every change of
   * the table set (and by openStreamIndex).
   */
  async rebalanceTableCache(): Promise<void> {
    const bySize = [...this.tables].sort((a, b) => a.table.entryCount - b.table.entryCount);
    let cachedSizeBytes = 0;
    for (const { table } of bySize) {
      const sizeBytes = table.entryCount * ENTRY_SIZE_BYTES;
      if (cachedSizeBytes + sizeBytes <= this.config.tableCacheSizeBytesMax) {
        cachedSizeBytes += sizeBytes;
        await table.loadCache();
      } else {
        table.dropCache();
      }
    }
  }

  /** Tables with their levels, for tests and diagnostics. */
  tableLevels(): number[] {
    return this.tables.map((live) => live.level);
  }

  private collect(query: RangeQuery): CollectResult {
    const out: IndexEntry[] = [];
    let sourcesWithHits = 0;
    let maybeMore = false;
    const collectFrom = (source: { collect(q: RangeQuery, o: IndexEntry[]): void }): void => {
      const before = out.length;
      source.collect(query, out);
      const found = out.length - before;
      if (found > 0) sourcesWithHits += 1;
      if (found >= query.limit) maybeMore = true;
    };
    collectFrom(this.mem);
    for (const frozen of this.frozen) collectFrom(frozen);
    for (const live of this.tables) {
      if (live.table.mightContain(query.key)) collectFrom(live.table);
      else this.bloomFilterNegatives += 1;
    }
    if (sourcesWithHits > 1) out.sort(compareEntriesDescending);
    const entries = collectDedupe(out);
    if (entries.length > query.limit) {
      // Several sources together found more than asked: the rest comes in the next batch.
      entries.length = query.limit;
      maybeMore = true;
    }
    return { entries, maybeMore };
  }

  private freezeMemTable(): void {
    this.frozen.push(this.mem);
    this.mem = new MemTable(this.addedLogPositionValue);
    if (this.frozen.length >= FROZEN_WARN_COUNT && !this.frozenWarned) {
      this.frozenWarned = true;
      this.log.warn({ frozenMemTableCount: this.frozen.length }, 'index flush falling behind');
    }
    this.kick();
  }

  /** Starts the background worker unless it is already scheduled. */
  private kick(): void {
    if (this.drainScheduled || this.failure !== undefined) return;
    this.drainScheduled = true;
    this.enqueue(() => this.drain()).catch(() => undefined);
  }

  /** Runs `task` after all queued work; its failure is recorded as the index failure. */
  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => {
      if (this.failure !== undefined) throw this.failure;
      return task();
    });
    this.tail = run.then(
      () => undefined,
      (err: unknown) => this.fail(err),
    );
    return run;
  }

  /** Records the first background failure; anything not already typed becomes fatal. */
  private fail(err: unknown): void {
    this.drainScheduled = false;
    if (this.failure !== undefined) return;
    this.failure =
      err instanceof EventDbError
        ? err
        : new FatalError('EDB_WRITE_FAILED', 'index background work failed', { cause: err });
    this.log.error({ err }, 'index background work failed');
  }

  /** Resolves when no background work is queued; rethrows a background failure. */
  private async whenIdle(): Promise<void> {
    for (;;) {
      const tail = this.tail;
      await tail;
      if (tail === this.tail) break;
    }
    if (this.failure !== undefined) throw this.failure;
  }

  /** Flushes frozen memtables (oldest first), then merges levels, until nothing is left. */
  private async drain(): Promise<void> {
    for (;;) {
      if (this.frozen.length > 0) {
        await this.flushOldestFrozen();
        continue;
      }
      const level = this.fullMergesPending > 0 ? undefined : this.mergeableLevel();
      if (level === undefined) {
        // Cleared in the same synchronous step as the emptiness check, so a freeze that
        // happens after it schedules a new drain.
        this.drainScheduled = false;
        this.frozenWarned = false;
        return;
      }
      const inputs = this.tables.filter((live) => live.level === level).slice(0, 2);
      await this.mergeTables(inputs, level + 1);
    }
  }

  private mergeableLevel(): number | undefined {
    const countByLevel = new Map<number, number>();
    for (const live of this.tables) {
      countByLevel.set(live.level, (countByLevel.get(live.level) ?? 0) + 1);
    }
    const levels = [...countByLevel].filter(([, count]) => count >= 2).map(([level]) => level);
    return levels.length === 0 ? undefined : Math.min(...levels);
  }

  private async flushOldestFrozen(): Promise<void> {
    const frozen = this.frozen[0];
    assert(frozen !== undefined, 'a frozen memtable to flush');
    const startMs = performance.now();
    let tables = this.tables;
    if (frozen.entryCount > 0) {
      const written = await writePTable({
        directory: this.config.directory,
        entryCountMax: frozen.entryCount,
        hashCountMax: frozen.hashCount,
        bloomBitCountMax: this.config.bloomBitCountMax,
        chunks: frozen.encodeSorted(CHUNK_ENTRY_COUNT),
      });
      assert(written !== undefined, 'a non-empty memtable writes a table');
      const table = PTable.fromWritten(this.config.directory, written);
      tables = [...tables, { level: 0, table }];
    }
    await this.commitTables(tables, frozen.upToLogPosition);
    assert(this.frozen[0] === frozen, 'flushed memtable is still the oldest');
    this.frozen.shift();
    await this.rebalanceTableCache();
    const durationMs = Math.round(performance.now() - startMs);
    const persistedLogPosition = frozen.upToLogPosition;
    this.log.info(
      { entryCount: frozen.entryCount, persistedLogPosition, durationMs },
      'index memtable flushed',
    );
  }

  /**
   * Merges `inputs` into one table on `level` (none if `keep` drops every entry), makes the new
   * set durable, then deletes the inputs. Resolves the number of entries written.
   */
  private async mergeTables(
    inputs: readonly LiveTable[],
    level: number,
    keep?: EncodedEntryFilter,
    between?: () => Promise<void>,
  ): Promise<number> {
    assert(inputs.length >= (keep === undefined ? 2 : 1), 'a merge has enough inputs');
    const startMs = performance.now();
    const written = await this.writeMerged(inputs, keep, between);
    return this.installMerged(inputs, level, written, startMs);
  }

  /** Writes the merge of `inputs` as a new table file (undefined: no entry left); installs nothing. */
  private async writeMerged(
    inputs: readonly LiveTable[],
    keep?: EncodedEntryFilter,
    between?: () => Promise<void>,
  ): Promise<WrittenPTable | undefined> {
    const pieceEntryCount = between ? PACED_CHUNK_ENTRY_COUNT : CHUNK_ENTRY_COUNT;
    let entryCountMax = 0;
    let hashCountMax = 0;
    for (const live of inputs) {
      entryCountMax += live.table.entryCount;
      hashCountMax += live.table.hashCount;
    }
    return writePTable({
      directory: this.config.directory,
      entryCountMax,
      hashCountMax,
      bloomBitCountMax: this.config.bloomBitCountMax,
      chunks: withPauses(mergeSortedChunks(
        inputs.map((live) => live.table.readChunks(pieceEntryCount)),
        pieceEntryCount,
        keep,
      ), between),
    });
  }

  /** Puts a written merge in place of its inputs: the new set made durable, then the inputs deleted. */
  private async installMerged(
    inputs: readonly LiveTable[],
    level: number,
    written: WrittenPTable | undefined,
    startMs: number,
  ): Promise<number> {
    const remaining = this.tables.filter((live) => !inputs.includes(live));
    if (written !== undefined) {
      remaining.push({ level, table: PTable.fromWritten(this.config.directory, written) });
    }
    await this.commitTables(remaining, this.persistedLogPositionValue);
    for (const live of inputs) live.table.close();
    await removeTableFiles(this.config.directory, inputs.map((live) => live.table.fileName));
    await this.rebalanceTableCache();
    const durationMs = Math.round(performance.now() - startMs);
    const inputCount = inputs.length;
    const entryCount = written?.entryCount ?? 0;
    this.log.info({ tableLevel: level, inputCount, entryCount, durationMs }, 'index tables merged');
    return entryCount;
  }

  /** Makes the table set durable in the indexmap, then visible. */
  private async commitTables(tables: LiveTable[], persistedLogPosition: number): Promise<void> {
    assert(persistedLogPosition >= this.persistedLogPositionValue, 'persisted position grows');
    await writeIndexMap(this.config.directory, {
      persistedLogPosition,
      tables: tables.map((live) => ({ level: live.level, fileName: live.table.fileName })),
    });
    this.tables = tables;
    this.persistedLogPositionValue = persistedLogPosition;
  }

  private async resetAboveNow(logPosition: number): Promise<boolean> {
    const deleteDurable = !this.config.memOnly && this.persistedLogPositionValue > logPosition;
    const dropMemory = deleteDurable || this.addedLogPositionValue > logPosition;
    if (deleteDurable) {
      const fileNames = this.tables.map((live) => live.table.fileName);
      for (const live of this.tables) live.table.close();
      this.tables = [];
      this.persistedLogPositionValue = 0;
      await deleteIndexFiles(this.config.directory, fileNames);
    }
    if (dropMemory) {
      const restart = this.config.memOnly ? 0 : this.persistedLogPositionValue;
      this.frozen = [];
      this.mem = new MemTable(restart);
      this.addedLogPositionValue = restart;
    }
    this.log.warn({ logPosition, deleteDurable, dropMemory }, 'index reset above position');
    return deleteDurable || (this.config.memOnly && dropMemory);
  }
}

/** Drops exact duplicates, which are adjacent in sorted entries. */
function collectDedupe(sorted: IndexEntry[]): IndexEntry[] {
  const out: IndexEntry[] = [];
  let previous: IndexEntry | undefined;
  for (const entry of sorted) {
    const duplicate =
      previous !== undefined &&
      previous.eventNumber === entry.eventNumber &&
      previous.logPosition === entry.logPosition;
    if (!duplicate) out.push(entry);
    previous = entry;
  }
  return out;
}

/** An index entry read in place from encoded words; `at` points it at another entry. */
class EncodedEntryView implements IndexEntry {
  private words: Uint32Array = new Uint32Array(ENTRY_SIZE_WORDS);
  private word = 0;

  at(words: Uint32Array, entryIndex: number): this {
    this.words = words;
    this.word = entryIndex * ENTRY_SIZE_WORDS;
    return this;
  }

  get streamHash(): bigint {
    return joinHash(this.words[this.word + 1]!, this.words[this.word]!);
  }

  get eventNumber(): number {
    return readUint53(this.words, this.word + 2);
  }

  get logPosition(): number {
    return readUint53(this.words, this.word + 4);
  }
}

/**
 * Passes `chunks` through, awaiting `between` after the consumer is done with each one (it asks
 * for the next only once it has written the last).
 */
async function* withPauses<T>(chunks: AsyncIterable<T>, between: (() => Promise<void>) | undefined): AsyncGenerator<T> {
  for await (const chunk of chunks) {
    yield chunk;
    if (between) await between();
  }
}

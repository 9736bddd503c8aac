/**
 * The contract between the engine (writer, readers, recovery) and the stream index.
 *
 * The index maps (64-bit stream hash, event number) -> log position of the event's record.
 * It stores hashes only: two streams may share a hash, so an entry is a candidate that the
 * engine confirms by reading the record and comparing the stream name. Entries with the same
 * (hash, eventNumber) but different positions may coexist (a collision), and all are returned.
 *
 * Durability: the in-memory table is lost on a crash. `persistedLogPosition` tells the engine
 * from where to replay the log on start; everything below it is in durable tables.
 */

export interface IndexEntry {
  readonly streamHash: bigint;
  readonly eventNumber: number;
  readonly logPosition: number;
}

export interface StreamIndex {
  /** Log position up to which the durable tables (indexmap) cover the log. */
  readonly persistedLogPosition: number;
  /** Log position up to which entries have been added (memtable included). */
  readonly addedLogPosition: number;

  /**
   * Adds the entries of committed writes, in log order. `upToLogPosition` is the log position
   * just past the last record they came from; the index covers the log up to it afterwards.
   * May trigger a background flush of the memtable when it reaches its size limit.
   */
  add(entries: readonly IndexEntry[], upToLogPosition: number): void;

  /** Entries of `streamHash` with fromEventNumber <= eventNumber <= toEventNumber, descending by (eventNumber, logPosition). */
  getRange(streamHash: bigint, fromEventNumber: number, toEventNumber: number): IndexEntry[];

  /**
   * Entries of `streamHash` in descending event-number order starting at the highest,
   * lazily, so the engine can walk collision candidates without materialising the stream.
   */
  iterateDescending(streamHash: bigint): Iterable<IndexEntry>;

  /** Flushes the memtable to a table and merges all tables into one (admin mergeindexes). */
  mergeAll(): Promise<void>;

  /** Flushes the memtable to a durable table if it holds anything (used at clean shutdown). */
  flush(): Promise<void>;

  /** Waits for background flushes/merges; rethrows a failure. */
  close(): Promise<void>;

  stats(): { memTableEntries: number; tableCount: number; bloomFilterNegatives: number };

  /**
   * The hasher this index was opened with (the default is the EventStoreDB-compatible
   * `streamHash`); the engine computes `streamHash` values with it. Optional member.
   */
  readonly hasher?: StreamHasher;

  /**
   * Drops what the index holds above `logPosition`, after the log was truncated to it (restore).
   * When `persistedLogPosition > logPosition` the durable tables and the indexmap are deleted
   * (resolves true) and the index is empty. Otherwise, when `addedLogPosition > logPosition`,
   * the in-memory entries are dropped. After a reset `addedLogPosition === persistedLogPosition`
   * and the engine replays the log from there. Call it before adding anything. Optional member.
   */
  resetAbove?(logPosition: number): Promise<boolean>;

  /**
   * Removes the entries `keep` rejects (the index stage of a scavenge): flushes the memtable,
   * then rewrites all tables into one, filtering as it streams. Entries added while it runs are
   * not examined. Resolves the number of entries removed. `between`, when given, is awaited
   * after each written piece of the new table (a scavenge paces itself there); it must not
   * throw. Optional member.
   */
  removeEntries?(keep: (entry: IndexEntry) => boolean, between?: () => Promise<void>): Promise<{ removedEntryCount: number }>;

  /**
   * `removeEntries` in two steps, so a scavenge can write the new table while its last chunk
   * copies are still being made durable: the flush and the filtered merge happen now, but the
   * index keeps serving (and changing) its current tables until `commit` puts the new table in
   * their place; `abort` deletes it instead. Exactly one of the two must be called; level merges
   * are held back until then. `commit` resolves false (and changes nothing) when the tables it
   * merged were replaced meanwhile. Resolves undefined where this is not supported (in-memory
   * index). Optional member.
   */
  prepareRemoveEntries?(keep: (entry: IndexEntry) => boolean, between?: () => Promise<void>): Promise<PreparedRemoval | undefined>;
}

export interface PreparedRemoval {
  readonly removedEntryCount: number;
  commit(): Promise<boolean>;
  abort(): Promise<void>;
}

/** Computes a 64-bit stream hash; injectable so tests can force collisions. */
export type StreamHasher = (streamName: string) => bigint;

/**
 * Opens the stream index for the engine. The engine needs the port plus two extras: the hasher
 * the index was opened with, and `resetAbove` for truncation on restore.
 */
import type { Logger } from 'pino';
import type { EventDbOptions } from './event-db-types.js';
import type { StreamHasher, StreamIndex } from './index/stream-index-port.js';
import { streamHash } from './index/stream-hash.js';
import { MemTable } from './index/memtable.js';
import { splitHash } from './index/index-entry-codec.js';
import type { IndexEntry } from './index/stream-index-port.js';

export type EngineIndex = StreamIndex & {
  readonly hasher: StreamHasher;
  resetAbove(logPosition: number): Promise<void>;
};

export async function openIndexForEngine(options: EventDbOptions, log: Logger, hasher?: StreamHasher): Promise<EngineIndex> {
  const h = hasher ?? streamHash;
  void options;
  void log;
  return new MemTableOnlyIndex(h);
}

/** Temporary: memtable-only index (no persistence) until the table index lands. */
class MemTableOnlyIndex implements EngineIndex {
  private mem = new MemTable(0);
  constructor(readonly hasher: StreamHasher) {}
  get persistedLogPosition(): number { return 0; }
  get addedLogPosition(): number { return this.mem.upToLogPosition; }
  add(entries: readonly IndexEntry[], upToLogPosition: number): void {
    for (const e of entries) this.mem.add(e.streamHash, e.eventNumber, e.logPosition);
    this.mem.upToLogPosition = upToLogPosition;
  }
  getRange(streamHash: bigint, fromEventNumber: number, toEventNumber: number): IndexEntry[] {
    const out: IndexEntry[] = [];
    this.mem.collect({
      streamHash, key: splitHash(streamHash), beforeEventNumber: toEventNumber + 1, beforeLogPosition: 0,
      minEventNumber: fromEventNumber, limit: Number.MAX_SAFE_INTEGER,
    }, out);
    return out;
  }
  *iterateDescending(streamHash: bigint): Iterable<IndexEntry> {
    const out: IndexEntry[] = [];
    this.mem.collect({
      streamHash, key: splitHash(streamHash), beforeEventNumber: Number.MAX_SAFE_INTEGER + 1, beforeLogPosition: 0,
      minEventNumber: 0, limit: Number.MAX_SAFE_INTEGER,
    }, out);
    yield* out;
  }
  async mergeAll(): Promise<void> {}
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
  async resetAbove(): Promise<void> { this.mem = new MemTable(0); }
  stats(): { memTableEntries: number; tableCount: number; bloomFilterNegatives: number } {
    return { memTableEntries: this.mem.entryCount, tableCount: 0, bloomFilterNegatives: 0 };
  }
}

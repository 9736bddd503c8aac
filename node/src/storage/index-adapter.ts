/**
 * Opens the stream index and the stream existence filter for the engine, both on the same
 * hasher. The engine needs the port plus the hasher and `resetAbove` (truncation on restore).
 */
import type { Logger } from 'pino';
import type { EventDbOptions } from './event-db-types.js';
import type { StreamHasher, StreamIndex } from './index/stream-index-port.js';
import { streamHash } from './index/stream-hash.js';
import { openStreamIndex } from './index/open-stream-index.js';
import { openStreamExistenceFilter } from './index/stream-existence-filter.js';

/** What the engine uses of the stream existence filter. */
export interface ExistenceFilter {
  readonly coveredLogPosition: number;
  readonly checkpoint: number;
  add(streamName: string): void;
  mightExist(streamName: string): boolean;
  advance(logPosition: number): void;
  persist(): Promise<void>;
  close(): Promise<void>;
}

/** `--stream-existence-filter-size 0`: every stream might exist, nothing is stored. */
class DisabledExistenceFilter implements ExistenceFilter {
  coveredLogPosition = Number.MAX_SAFE_INTEGER;
  checkpoint = Number.MAX_SAFE_INTEGER;
  add(): void {}
  mightExist(): boolean { return true; }
  advance(): void {}
  async persist(): Promise<void> {}
  async close(): Promise<void> {}
}

export type EngineIndex = StreamIndex & {
  readonly hasher: StreamHasher;
  resetAbove(logPosition: number): Promise<boolean>;
};

/**
 * Index tables held whole in memory (smallest first). Larger tables are searched through their
 * in-memory midpoints and one positioned read, and their bloom filters skip most lookups, so a
 * small cache keeps a node's memory flat as the index grows (the scavenge's index stage briefly
 * holds old and new tables).
 */
const INDEX_TABLE_CACHE_BYTES_MAX = 16 * 1024 * 1024;

/** How often the existence filter is written out when it changed. */
const EXISTENCE_FILTER_PERSIST_INTERVAL_MS = 10_000;

export async function openIndexForEngine(
  options: EventDbOptions, log: Logger, hasher: StreamHasher = streamHash,
): Promise<{ index: EngineIndex; existence: ExistenceFilter }> {
  const indexLog = log.child({ component: 'storage.index' });
  const index = await openStreamIndex({
    indexPath: options.indexPath, maxMemTableSize: options.maxMemTableSize, hasher, log: indexLog, memOnly: options.memDb,
    tableCacheSizeBytesMax: INDEX_TABLE_CACHE_BYTES_MAX,
  });
  if (options.streamExistenceFilterSizeBytes === 0) return { index, existence: new DisabledExistenceFilter() };
  const existence = await openStreamExistenceFilter({
    indexPath: options.indexPath, sizeBytes: options.streamExistenceFilterSizeBytes, hasher, log: indexLog,
    memOnly: options.memDb, persistIntervalMs: EXISTENCE_FILTER_PERSIST_INTERVAL_MS,
  });
  return { index, existence };
}

/**
 * The factory of the stream index: opens (or creates) the index directory, verifies and opens
 * the tables the indexmap lists, removes leftovers of interrupted writes, and returns the
 * StreamIndex implementation. With `memOnly` nothing touches the disk.
 */

import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { EventDbError } from '../../errors.js';
import { EMPTY_INDEX_MAP, readIndexMap } from './index-map.js';
import { removeLeftoverFiles } from './index-files.js';
import { PTable } from './ptable.js';
import { streamHash } from './stream-hash.js';
import { PersistentStreamIndex, type LiveTable } from './stream-index.js';
import type { StreamHasher } from './stream-index-port.js';

export const MAX_MEM_TABLE_SIZE_DEFAULT = 1_000_000;
/** 2^30 bits = 128 MiB: the largest bloom filter kept for one table. */
export const BLOOM_FILTER_BIT_COUNT_MAX_DEFAULT = 2 ** 30;
export const TABLE_CACHE_SIZE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;

export interface OpenStreamIndexOptions {
  /** The index directory (created if missing); unused when `memOnly`. */
  readonly indexPath: string;
  /** Entries in the memtable before it is flushed to a table. Default 1,000,000. */
  readonly maxMemTableSize?: number;
  /** Stream name -> 64-bit hash. Default `streamHash` (EventStoreDB-compatible). */
  readonly hasher?: StreamHasher;
  readonly log: Logger;
  /** Keep everything in memory: no files, flush and merge are no-ops. */
  readonly memOnly: boolean;
  /** Verify every table's crc32 at open by reading it once. Default true. */
  readonly verifyTablesOnOpen?: boolean;
  /** Upper bound of one table's bloom filter, in bits. Default 2^30 (128 MiB). */
  readonly bloomFilterBitCountMax?: number;
  /**
   * Memory for holding whole tables (the smallest first) so their lookups need no read call.
   * Default 64 MiB (about 2.8 million entries); 0 reads every table page by page.
   */
  readonly tableCacheSizeBytesMax?: number;
}

export async function openStreamIndex(
  options: OpenStreamIndexOptions,
): Promise<PersistentStreamIndex> {
  const maxMemTableSize = options.maxMemTableSize ?? MAX_MEM_TABLE_SIZE_DEFAULT;
  const bloomBitCountMax = options.bloomFilterBitCountMax ?? BLOOM_FILTER_BIT_COUNT_MAX_DEFAULT;
  if (!Number.isSafeInteger(maxMemTableSize) || maxMemTableSize < 1) {
    throw new EventDbError('EDB_CONFIG_INVALID', 'maxMemTableSize must be a positive integer', {
      details: { maxMemTableSize },
    });
  }
  const bloomBitCountValid = bloomBitCountMax >= 1024 && bloomBitCountMax <= 2 ** 32;
  if (!Number.isSafeInteger(bloomBitCountMax) || !bloomBitCountValid) {
    throw new EventDbError('EDB_CONFIG_INVALID', 'bloomFilterBitCountMax out of range', {
      details: { bloomBitCountMax },
    });
  }
  const tableCacheSizeBytesMax =
    options.tableCacheSizeBytesMax ?? TABLE_CACHE_SIZE_BYTES_MAX_DEFAULT;
  if (!Number.isSafeInteger(tableCacheSizeBytesMax) || tableCacheSizeBytesMax < 0) {
    throw new EventDbError('EDB_CONFIG_INVALID', 'tableCacheSizeBytesMax out of range', {
      details: { tableCacheSizeBytesMax },
    });
  }
  const log = options.log;
  const config = {
    directory: options.indexPath,
    maxMemTableSize,
    memOnly: options.memOnly,
    bloomBitCountMax,
    tableCacheSizeBytesMax,
    hasher: options.hasher ?? streamHash,
    log,
  };
  if (options.memOnly) return new PersistentStreamIndex(config, [], 0);
  await mkdir(options.indexPath, { recursive: true });
  const map = await readIndexMap(options.indexPath);
  const tables = await openStreamIndexTables(options, map.tables);
  await removeLeftoverFiles(options.indexPath, map, log);
  const persistedLogPosition = map.persistedLogPosition;
  log.info(
    { tableCount: tables.length, persistedLogPosition, fresh: map === EMPTY_INDEX_MAP },
    'stream index opened',
  );
  const index = new PersistentStreamIndex(config, tables, persistedLogPosition);
  await index.rebalanceTableCache();
  return index;
}

async function openStreamIndexTables(
  options: OpenStreamIndexOptions,
  listed: readonly { level: number; fileName: string }[],
): Promise<LiveTable[]> {
  const tables: LiveTable[] = [];
  try {
    for (const { level, fileName } of listed) {
      const table = await PTable.open({
        directory: options.indexPath,
        fileName,
        verifyChecksum: options.verifyTablesOnOpen ?? true,
        log: options.log,
      });
      tables.push({ level, table });
    }
  } catch (err: unknown) {
    for (const live of tables) live.table.close();
    throw err;
  }
  return tables;
}

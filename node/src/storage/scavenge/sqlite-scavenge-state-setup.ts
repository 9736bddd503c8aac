/**
 * Setting up the scavenge state database at open: the options check, the pragmas (exclusive
 * locking, page size on creation, WAL, synchronous=FULL, cache size), the schema, and the
 * directory fsync. See `sqlite-scavenge-state.ts` for why WAL with exclusive locking.
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import type pkg from 'node-sqlite3-wasm';
import { EventDbError, FatalError, assert } from '../../errors.js';
import {
  SCAVENGE_STATE_SCHEMA_SQL,
  SCAVENGE_STATE_SCHEMA_VERSION,
} from './sqlite-scavenge-state-sql.js';

type Database = InstanceType<typeof pkg.Database>;

/** After a checkpoint, a WAL grown by a large transaction is truncated back to this size. */
const WAL_SIZE_BYTES_LIMIT = 64 * 1024 * 1024;

export function checkScavengeStateOptions(
  pageSizeBytes: number,
  cacheSizeBytes: number,
  capacity: number,
): void {
  const pageSizeValid =
    Number.isSafeInteger(pageSizeBytes) &&
    pageSizeBytes >= 512 &&
    pageSizeBytes <= 65536 &&
    (pageSizeBytes & (pageSizeBytes - 1)) === 0;
  if (!pageSizeValid) {
    throw new EventDbError(
      'EDB_CONFIG_INVALID',
      'scavenge backend page size must be a power of two from 512 B to 64 KiB',
      { httpStatus: 400, details: { pageSizeBytes } },
    );
  }
  if (!Number.isSafeInteger(cacheSizeBytes) || cacheSizeBytes < 0) {
    throw new EventDbError('EDB_CONFIG_INVALID', 'scavenge backend cache size is a byte count', {
      httpStatus: 400,
      details: { cacheSizeBytes },
    });
  }
  if (!Number.isSafeInteger(capacity) || capacity < 1) {
    throw new EventDbError('EDB_CONFIG_INVALID', 'scavenge hash users cache capacity is below 1', {
      httpStatus: 400,
      details: { hashUsersCacheCapacity: capacity },
    });
  }
}

/**
 * Sets the pragmas; returns true when the database is new (no tables yet), in which case the page
 * size is applied first (a WAL database cannot change it later). Exclusive locking must come
 * before the first read, or SQLite would need shared memory to open a WAL database.
 */
export function configureScavengeStateDatabase(
  db: Database,
  pageSizeBytes: number,
  cacheSizeBytes: number,
): boolean {
  db.exec('PRAGMA locking_mode = EXCLUSIVE');
  const tableCount = Number(db.get('SELECT count(*) AS n FROM sqlite_master')?.['n']);
  assert(Number.isSafeInteger(tableCount) && tableCount >= 0, 'sqlite_master row count');
  const created = tableCount === 0;
  if (created) db.exec(`PRAGMA page_size = ${pageSizeBytes}`);
  const journalMode = db.get('PRAGMA journal_mode = WAL')?.['journal_mode'];
  assert(journalMode === 'wal', 'scavenge state uses the write-ahead log');
  db.exec('PRAGMA synchronous = FULL');
  db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_BYTES_LIMIT}`);
  db.exec(`PRAGMA cache_size = -${Math.floor(cacheSizeBytes / 1024)}`);
  db.exec('PRAGMA foreign_keys = OFF');
  return created;
}

export function fsyncScavengeStateDirectory(directory: string): void {
  const fd = openSync(directory, 'r');
  try {
    fsyncSync(fd);
  } catch (err: unknown) {
    throw new FatalError('EDB_FSYNC_FAILED', `cannot fsync directory ${directory}`, { cause: err });
  } finally {
    closeSync(fd);
  }
}

export function ensureScavengeStateSchema(db: Database, created: boolean): void {
  if (created) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(SCAVENGE_STATE_SCHEMA_SQL);
      db.run('INSERT INTO SchemaVersion (version) VALUES (?)', SCAVENGE_STATE_SCHEMA_VERSION);
      db.exec('COMMIT');
    } catch (err: unknown) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
  }
  const versions = db.all('SELECT version FROM SchemaVersion').map((row) => Number(row['version']));
  if (versions.length !== 1 || versions[0] !== SCAVENGE_STATE_SCHEMA_VERSION) {
    throw new Error(`unsupported scavenge state schema version ${JSON.stringify(versions)}`);
  }
}

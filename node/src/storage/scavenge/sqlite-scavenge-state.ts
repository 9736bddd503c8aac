/**
 * The scavenge state on disk: one SQLite database, `<indexPath>/scavenging/scavenging.db`, run
 * through WebAssembly (node-sqlite3-wasm, no native addon). Tables follow KurrentDB's scavenge
 * database: SchemaVersion, HashUsers, OriginalStreamDatas (index on status, key), MetastreamDatas,
 * ChunkTimeStampRanges, ChunkWeights, and Checkpoints (a key-value table holding the checkpoint
 * JSON, the last completed scavenge point number and the last accumulated chunk).
 *
 * Durability: write-ahead log with `synchronous=FULL`. A COMMIT returns once its WAL frames are
 * fsynced (the directory is fsynced once at open, after the database and WAL exist); a crash at
 * any moment leaves the last committed transaction, since recovery on the next open replays only
 * committed frames, and uncommitted pages (a large transaction spills them) only ever go to the
 * WAL. SIGKILL is tested; power loss rests on those fsyncs. A write outside `transaction()` is a
 * transaction of its own (one fsync, a few ms): phases batch their writes in `transaction()`.
 *
 * The WASM VFS has no shared memory, so the connection uses `locking_mode=EXCLUSIVE`, in which
 * SQLite keeps the WAL index in the heap: the lock is held for the connection's lifetime (also
 * sparing this VFS a directory create and remove per statement: ~100x faster point reads) and no
 * `-shm` file exists. `close()` checkpoints and deletes the WAL, so an idle `scavenging/`
 * directory holds only `scavenging.db`.
 *
 * Why not the rollback journal: node-sqlite3-wasm's xCheckReservedLock reports the connection's
 * own lock (the `.lock` directory it made for its SHARED lock) as another's RESERVED lock, so
 * SQLite never sees a hot journal as hot and never rolls it back. A crash in the middle of a
 * transaction that had spilled pages, or in the middle of a commit, then leaves a corrupt
 * database (observed: "row not in PRIMARY KEY order", uncommitted rows visible). WAL recovery
 * does not depend on that check.
 *
 * Transactions: `transaction(fn)` is BEGIN IMMEDIATE .. COMMIT, ROLLBACK when `fn` throws. A
 * nested call is a SAVEPOINT: its throw undoes only its own writes, which otherwise commit with the
 * outermost transaction. `fn` must be synchronous (a returned promise is rejected as a bug).
 *
 * The connection keeps the library's lock (a directory, `scavenging.db.lock`) while it is open;
 * a lock left by a killed process is recognised and removed on the next open (see
 * `sqlite-scavenge-state-lock.ts`). A database open in another live process is an error.
 *
 * Deleting `scavenging.db` (while no scavenge runs) is safe: the next scavenge finds no
 * checkpoint and no accumulated chunks, so it starts from scratch and re-accumulates the log
 * from chunk 0 (slow once, like the first scavenge). A `scavenging.db-wal` left by a crash may
 * stay: SQLite discards a WAL found next to an empty database. Deleting the file (or the whole
 * `scavenging/` directory) is also the remedy when the database is reported corrupt
 * (`EDB_INDEX_CORRUPT`, naming the file).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pkg from 'node-sqlite3-wasm';
import type { Logger } from 'pino';
import { EventDbError, assert } from '../../errors.js';
import { HASH_USERS_CACHE_CAPACITY_DEFAULT, HashUsersCache } from './hash-users-cache.js';
import type { HashUsersCacheStats } from './hash-users-cache.js';
import {
  assertChunkNumber,
  assertLimit,
  assertMeta,
  assertOriginal,
  assertTimeRange,
  assertSynchronousResult,
  assertWeight,
  decodeCheckpoint,
  encodeCheckpoint,
  metaProblem,
  originalProblem,
} from './scavenge-state-values.js';
import type {
  HashUser,
  MetastreamData,
  OriginalStreamData,
  OriginalStreamStatus,
  ScavengeCheckpoint,
  ScavengeState,
} from './scavenge-types.js';
import { BULK_ROWS_MAX, SCAVENGE_STATE_STATEMENTS_SQL, bulkStatementSql } from './sqlite-scavenge-state-sql.js';
import type { BulkStatementKind, StatementName } from './sqlite-scavenge-state-sql.js';
import {
  claimScavengeStateLock,
  recordScavengeStateLockOwner,
  releaseScavengeStateLockOwner,
} from './sqlite-scavenge-state-lock.js';
import {
  checkScavengeStateOptions,
  configureScavengeStateDatabase,
  ensureScavengeStateSchema,
  fsyncScavengeStateDirectory,
} from './sqlite-scavenge-state-setup.js';

const { Database } = pkg;
type Database = InstanceType<typeof pkg.Database>;
type Statement = ReturnType<Database['prepare']>;
type Row = Record<string, unknown>;
type BindValues = Parameters<Statement['run']>[0];

export const SCAVENGE_STATE_DIRECTORY = 'scavenging';
export const SCAVENGE_STATE_FILE = 'scavenging.db';
/** Defaults of the scavenge backend options (the config schema is where users set them). */
export const SCAVENGE_BACKEND_PAGE_SIZE_BYTES_DEFAULT = 16 * 1024;
export const SCAVENGE_BACKEND_CACHE_SIZE_BYTES_DEFAULT = 64 * 1024 * 1024;
/** Rows fetched per query by the iterables (`allOriginalsWithDiscards`, `allMetas`). */
const ITERATION_PAGE_ROW_COUNT = 1024;

export interface SqliteScavengeStateOptions {
  /** The index directory; the database is `<indexPath>/scavenging/scavenging.db`. */
  readonly indexPath: string;
  /**
   * SQLite page size in bytes (a power of two, 512..65536; default 16 KiB). Applied only when
   * the database is created: an existing database keeps its own page size (with a warning).
   */
  readonly pageSizeBytes?: number;
  /** Page cache size in bytes (default 64 MiB), rounded down to KiB. */
  readonly cacheSizeBytes?: number;
  /** Capacity of the hash-users LRU cache, in hashes (default 100 000). */
  readonly hashUsersCacheCapacity?: number;
  readonly log: Logger;
}

/**
 * Opens (creating if needed) the scavenge state database. Throws an `EventDbError` naming the
 * file when it cannot be opened or is not a scavenge database of this version.
 */
export function openSqliteScavengeState(options: SqliteScavengeStateOptions): ScavengeState {
  const pageSizeBytes = options.pageSizeBytes ?? SCAVENGE_BACKEND_PAGE_SIZE_BYTES_DEFAULT;
  const cacheSizeBytes = options.cacheSizeBytes ?? SCAVENGE_BACKEND_CACHE_SIZE_BYTES_DEFAULT;
  const capacity = options.hashUsersCacheCapacity ?? HASH_USERS_CACHE_CAPACITY_DEFAULT;
  checkScavengeStateOptions(pageSizeBytes, cacheSizeBytes, capacity);
  const directory = resolve(options.indexPath, SCAVENGE_STATE_DIRECTORY);
  const path = join(directory, SCAVENGE_STATE_FILE);
  mkdirSync(directory, { recursive: true });
  claimScavengeStateLock(path, options.log);
  let db: Database | undefined;
  try {
    db = new Database(path);
    const created = configureScavengeStateDatabase(db, pageSizeBytes, cacheSizeBytes);
    ensureScavengeStateSchema(db, created);
    const actualPageSizeBytes = Number(db.get('PRAGMA page_size')?.['page_size']);
    if (actualPageSizeBytes !== pageSizeBytes) {
      options.log.warn(
        { path, pageSizeBytes: actualPageSizeBytes, configuredPageSizeBytes: pageSizeBytes },
        'scavenge state database keeps the page size it was created with',
      );
    }
    recordScavengeStateLockOwner(path);
    // The database and its WAL exist by now (the first read creates the WAL): make their
    // directory entries durable, since this VFS's xSync only fsyncs the files themselves.
    fsyncScavengeStateDirectory(directory);
    const state = new SqliteScavengeState({ db, path, capacity, log: options.log });
    options.log.info(
      { path, created, pageSizeBytes: actualPageSizeBytes, cacheSizeBytes },
      'scavenge state opened',
    );
    return state;
  } catch (err: unknown) {
    releaseScavengeStateLockOwner(path);
    if (db?.isOpen === true) db.close();
    if (err instanceof EventDbError) throw err;
    const message = `cannot open scavenge state database ${path}: ${String(err)}`;
    throw new EventDbError('EDB_INDEX_CORRUPT', message, {
      cause: err,
      details: { path, remedy: 'delete it while no scavenge runs (the next one starts over)' },
    });
  }
}

const STATUS_CODES: Record<OriginalStreamStatus, number> = { Active: 1, Spent: 2, Archived: 3 };
const STATUS_BY_CODE = new Map<number, OriginalStreamStatus>(
  Object.entries(STATUS_CODES).map(([status, code]) => [code, status as OriginalStreamStatus]),
);

class SqliteScavengeState implements ScavengeState {
  private readonly db: Database;
  private readonly path: string;
  private readonly log: Logger;
  private readonly statements: Record<StatementName, Statement>;
  private readonly hashUsersCache: HashUsersCache;
  /** 0 outside a transaction, 1 in the outermost one, n in a savepoint nested n-1 deep. */
  private transactionDepth = 0;

  constructor(args: { db: Database; path: string; capacity: number; log: Logger }) {
    this.db = args.db;
    this.path = args.path;
    this.log = args.log;
    const entries = Object.entries(SCAVENGE_STATE_STATEMENTS_SQL).map(
      ([name, sql]) => [name, this.db.prepare(sql)] as const,
    );
    this.statements = Object.fromEntries(entries) as Record<StatementName, Statement>;
    this.hashUsersCache = new HashUsersCache(args.capacity, {
      read: (hash) => {
        const row = this.get('hashUserGet', [BigInt.asIntN(64, hash)]);
        return row === null ? undefined : String(row['value']);
      },
      readMany: (hashes) => {
        const found = new Map<bigint, string>();
        for (const row of this.bulkRead('hashUsersGet', hashes.map((h) => BigInt.asIntN(64, h)))) {
          found.set(BigInt.asUintN(64, BigInt(String(row['hash']))), String(row['value']));
        }
        return found;
      },
      insertMany: (users) => {
        this.bulkWrite('hashUsersInsert', users.map(([hash, stream]) => [BigInt.asIntN(64, hash), stream]));
      },
    });
  }

  getCheckpoint(): ScavengeCheckpoint | undefined {
    const json = this.keyValueGet('checkpoint');
    if (json === undefined) return undefined;
    const checkpoint = decodeCheckpoint(json);
    if ('error' in checkpoint) throw this.corruptError(`checkpoint: ${checkpoint.error}`);
    return checkpoint;
  }

  setCheckpoint(checkpoint: ScavengeCheckpoint): void {
    const json = encodeCheckpoint(checkpoint);
    this.transaction(() => {
      this.keyValueSet('checkpoint', json);
      if (checkpoint.stage === 'Done') {
        const pointNumber = String(checkpoint.scavengePoint.number);
        this.keyValueSet('lastCompletedScavengePointNumber', pointNumber);
      }
    });
  }

  lastCompletedScavengePointNumber(): number {
    return this.keyValueGetNumber('lastCompletedScavengePointNumber');
  }

  lastAccumulatedChunk(): number {
    return this.keyValueGetNumber('lastAccumulatedChunk');
  }

  setLastAccumulatedChunk(chunkNumber: number): void {
    assert(Number.isSafeInteger(chunkNumber) && chunkNumber >= -1, 'chunk number >= -1');
    this.keyValueSet('lastAccumulatedChunk', String(chunkNumber));
  }

  private keyValueGet(key: string): string | undefined {
    const row = this.get('keyValueGet', [key]);
    return row === null ? undefined : String(row['value']);
  }

  private keyValueGetNumber(key: string): number {
    const text = this.keyValueGet(key);
    if (text === undefined) return -1;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < -1) throw this.corruptError(`${key} is ${text}`);
    return value;
  }

  private keyValueSet(key: string, value: string): void {
    this.run('keyValueSet', [key, value]);
  }

  getOriginal(stream: string): OriginalStreamData | undefined {
    const row = this.get('originalGet', [stream]);
    return row === null ? undefined : this.decodeOriginal(row);
  }

  setOriginal(data: OriginalStreamData): void {
    this.run('originalSet', originalRow(data));
  }

  getOriginals(streams: readonly string[]): Map<string, OriginalStreamData> {
    return new Map(this.bulkRead('originalsGet', streams).map((row) => this.decodeOriginal(row)).map((d) => [d.stream, d]));
  }

  setOriginals(data: readonly OriginalStreamData[]): void {
    this.bulkWrite('originalsSet', data.map(originalRow));
  }

  activeOriginals(afterStream: string | null, limit: number): OriginalStreamData[] {
    assertLimit(limit);
    const rows =
      afterStream === null
        ? this.all('activeOriginalsFirst', [STATUS_CODES.Active, limit])
        : this.all('activeOriginalsAfter', [STATUS_CODES.Active, afterStream, limit]);
    return rows.map((row) => this.decodeOriginal(row));
  }

  allOriginalsWithDiscards(): Iterable<OriginalStreamData> {
    return this.pagedRows('originalsWithDiscardsPage', (row) => this.decodeOriginal(row));
  }

  getMeta(metastream: string): MetastreamData | undefined {
    const row = this.get('metaGet', [metastream]);
    return row === null ? undefined : this.decodeMeta(row);
  }

  setMeta(data: MetastreamData): void {
    this.run('metaSet', metaRow(data));
  }

  getMetas(metastreams: readonly string[]): Map<string, MetastreamData> {
    return new Map(this.bulkRead('metasGet', metastreams).map((row) => this.decodeMeta(row)).map((d) => [d.metastream, d]));
  }

  setMetas(data: readonly MetastreamData[]): void {
    this.bulkWrite('metasSet', data.map(metaRow));
  }

  allMetas(): Iterable<MetastreamData> {
    return this.pagedRows('metasPage', (row) => this.decodeMeta(row));
  }

  /**
   * Keyset pagination: each page is a separate query after the last key seen, so no statement
   * stays open across a `yield` and the caller may write while iterating.
   */
  private *pagedRows<T>(
    name: 'originalsWithDiscardsPage' | 'metasPage',
    decode: (row: Row) => T,
  ): Iterable<T> {
    let afterKey = '';
    for (;;) {
      const rows = this.all(name, [afterKey, ITERATION_PAGE_ROW_COUNT]);
      for (const row of rows) yield decode(row);
      const last = rows[rows.length - 1];
      if (rows.length < ITERATION_PAGE_ROW_COUNT || last === undefined) return;
      afterKey = String(last['key']);
    }
  }

  addChunkWeight(logicalChunkNumber: number, weight: number): void {
    assertChunkNumber(logicalChunkNumber);
    assertWeight(weight);
    this.run('weightAdd', [logicalChunkNumber, weight]);
  }

  getChunkWeight(logicalChunkNumber: number): number {
    assertChunkNumber(logicalChunkNumber);
    const row = this.get('weightGet', [logicalChunkNumber]);
    return row === null ? 0 : Number(row['value']);
  }

  resetChunkWeight(logicalChunkNumber: number): void {
    assertChunkNumber(logicalChunkNumber);
    this.run('weightDelete', [logicalChunkNumber]);
  }

  setChunkTimeRange(logicalChunkNumber: number, minMs: number, maxMs: number): void {
    assertChunkNumber(logicalChunkNumber);
    assertTimeRange(minMs, maxMs);
    this.run('timeRangeSet', [logicalChunkNumber, minMs, maxMs]);
  }

  getChunkTimeRange(logicalChunkNumber: number): { minMs: number; maxMs: number } | undefined {
    assertChunkNumber(logicalChunkNumber);
    const row = this.get('timeRangeGet', [logicalChunkNumber]);
    return row === null ? undefined : { minMs: Number(row['min']), maxMs: Number(row['max']) };
  }

  checkHashUser(hash: bigint, stream: string): boolean {
    return this.hashUsersCache.check(hash, stream);
  }

  checkHashUsers(users: readonly HashUser[]): number {
    return this.hashUsersCache.checkMany(users);
  }

  hashUsersCacheStats(): HashUsersCacheStats {
    return this.hashUsersCache.stats();
  }

  transaction<T>(fn: () => T): T {
    assert(this.db.isOpen, 'scavenge state is open');
    if (this.transactionDepth > 0) return this.transactionNested(fn);
    this.run('begin');
    this.transactionDepth = 1;
    try {
      const result = fn();
      assertSynchronousResult(result);
      this.run('commit');
      return result;
    } catch (err: unknown) {
      if (this.db.inTransaction) this.run('rollback');
      this.hashUsersCache.forget();
      throw err;
    } finally {
      this.transactionDepth = 0;
    }
  }

  /** A savepoint: a throw undoes the inner writes only; they commit with the outer transaction. */
  private transactionNested<T>(fn: () => T): T {
    const savepoint = `nested${this.transactionDepth}`;
    this.exec(`SAVEPOINT ${savepoint}`);
    this.transactionDepth++;
    try {
      const result = fn();
      assertSynchronousResult(result);
      this.exec(`RELEASE ${savepoint}`);
      return result;
    } catch (err: unknown) {
      this.exec(`ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
      this.hashUsersCache.forget();
      throw err;
    } finally {
      this.transactionDepth--;
    }
  }

  clean(): void {
    this.transaction(() => {
      const metas = this.run('metasDeleteAll');
      const originals = this.run('originalsDeleteWithStatus', [STATUS_CODES.Spent]);
      this.log.info(
        { metastreamsDeleted: metas, spentOriginalsDeleted: originals },
        'scavenge state cleaned',
      );
    });
  }

  close(): void {
    if (!this.db.isOpen) return;
    assert(this.transactionDepth === 0, 'scavenge state is not closed inside a transaction');
    for (const statement of [...Object.values(this.statements), ...this.bulkStatements.values()]) {
      try {
        statement.finalize();
      } catch {
        // sqlite3_finalize repeats the statement's last error, already reported to its caller.
      }
    }
    releaseScavengeStateLockOwner(this.path);
    // Closing checkpoints the WAL into the database and deletes it.
    this.db.close();
  }

  /** Bulk statements, prepared on first use, by kind and row count. */
  private readonly bulkStatements = new Map<string, Statement>();

  private bulkStatement(kind: BulkStatementKind, rows: number): Statement {
    const name = `${kind}/${rows}`;
    let statement = this.bulkStatements.get(name);
    if (statement === undefined) {
      try {
        statement = this.db.prepare(bulkStatementSql(kind, rows));
      } catch (err: unknown) {
        throw this.wrapError(err);
      }
      this.bulkStatements.set(name, statement);
    }
    return statement;
  }

  /** The rows whose key is among `keys`, BULK_ROWS_MAX keys per statement. */
  private bulkRead(kind: 'hashUsersGet' | 'originalsGet' | 'metasGet', keys: ReadonlyArray<string | bigint>): Row[] {
    const rows: Row[] = [];
    for (let at = 0; at < keys.length; at += BULK_ROWS_MAX) {
      const batch = keys.slice(at, at + BULK_ROWS_MAX);
      try {
        for (const row of this.bulkStatement(kind, batch.length).all(batch as BindValues)) rows.push(row);
      } catch (err: unknown) {
        throw this.wrapError(err);
      }
    }
    return rows;
  }

  /** Inserts or upserts `rows`, BULK_ROWS_MAX per statement. */
  private bulkWrite(kind: 'hashUsersInsert' | 'originalsSet' | 'metasSet', rows: ReadonlyArray<ReadonlyArray<string | number | bigint | null>>): void {
    for (let at = 0; at < rows.length; at += BULK_ROWS_MAX) {
      const batch = rows.slice(at, at + BULK_ROWS_MAX);
      try {
        this.bulkStatement(kind, batch.length).run(batch.flat() as BindValues);
      } catch (err: unknown) {
        throw this.wrapError(err);
      }
    }
  }

  /** Runs a prepared statement; returns the number of rows it changed. */
  private run(name: StatementName, values: BindValues = []): number {
    try {
      return this.statements[name].run(values).changes;
    } catch (err: unknown) {
      throw this.wrapError(err);
    }
  }

  private get(name: StatementName, values: BindValues): Row | null {
    try {
      return this.statements[name].get(values);
    } catch (err: unknown) {
      throw this.wrapError(err);
    }
  }

  private all(name: StatementName, values: BindValues): Row[] {
    try {
      return this.statements[name].all(values);
    } catch (err: unknown) {
      throw this.wrapError(err);
    }
  }

  private exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (err: unknown) {
      throw this.wrapError(err);
    }
  }

  /** Stored rows are checked like written ones; a bad one is corruption of this file. */
  private decodeOriginal(row: Row): OriginalStreamData {
    const data = decodeOriginal(row);
    const problem = originalProblem(data);
    if (problem !== undefined) throw this.corruptError(`stream ${data.stream}: ${problem}`);
    return data;
  }

  private decodeMeta(row: Row): MetastreamData {
    const data = decodeMeta(row);
    const problem = metaProblem(data);
    if (problem !== undefined) throw this.corruptError(`metastream ${data.metastream}: ${problem}`);
    return data;
  }

  private corruptError(what: string): EventDbError {
    const message = `scavenge state database ${this.path} is corrupt: ${what}`;
    return new EventDbError('EDB_INDEX_CORRUPT', message, { details: { path: this.path } });
  }

  /** SQLite errors become typed errors that name the file (the remedy may be to delete it). */
  private wrapError(err: unknown): EventDbError {
    if (err instanceof EventDbError) return err;
    const message = err instanceof Error ? err.message : String(err);
    const corrupt = /malformed|not a database|corrupt/i.test(message);
    return new EventDbError(
      corrupt ? 'EDB_INDEX_CORRUPT' : 'EDB_WRITE_FAILED',
      `scavenge state database ${this.path}: ${message}`,
      { cause: err, details: { path: this.path } },
    );
  }
}

/** The parameters of originalSet / originalsSet (one row), after checking the data. */
function originalRow(d: OriginalStreamData): Array<string | number | null> {
  assertOriginal(d);
  return [d.stream, d.isTombstoned ? 1 : 0, d.maxAgeSeconds, d.maxCount, d.truncateBefore, d.discardPoint, d.maybeDiscardPoint, d.lastEventNumber, STATUS_CODES[d.status]];
}

/** The parameters of metaSet / metasSet (one row), after checking the data. */
function metaRow(d: MetastreamData): Array<string | number | null> {
  assertMeta(d);
  return [d.metastream, d.isTombstoned ? 1 : 0, d.discardPoint, d.lastRecordChunk];
}

function decodeOriginal(row: Row): OriginalStreamData {
  return {
    stream: String(row['key']),
    isTombstoned: Number(row['isTombstoned']) === 1,
    maxAgeSeconds: numberOrNull(row['maxAge']),
    maxCount: numberOrNull(row['maxCount']),
    truncateBefore: numberOrNull(row['truncateBefore']),
    discardPoint: Number(row['discardPoint']),
    maybeDiscardPoint: Number(row['maybeDiscardPoint']),
    lastEventNumber: Number(row['lastEventNumber']),
    // An unknown code yields an unknown status, which originalProblem reports.
    status:
      STATUS_BY_CODE.get(Number(row['status'])) ?? (String(row['status']) as OriginalStreamStatus),
  };
}

function decodeMeta(row: Row): MetastreamData {
  return {
    metastream: String(row['key']),
    isTombstoned: Number(row['isTombstoned']) === 1,
    discardPoint: Number(row['discardPoint']),
    lastRecordChunk: numberOrNull(row['lastRecordChunk']),
  };
}

function numberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

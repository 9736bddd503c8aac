/**
 * The SQL of the scavenge state database: its schema (version 1) and every statement the state
 * prepares once at open and reuses. Stream names are TEXT keys in BINARY collation, so every
 * "in stream-name order" result is in code-point order (see `compareStreamNames`).
 *
 * Original stream status codes: 1 Active, 2 Spent, 3 Archived. The tables whose keys are names
 * are WITHOUT ROWID: the name is the B-tree key, with no second lookup through a rowid.
 */
export const SCAVENGE_STATE_SCHEMA_VERSION = 1;

export const SCAVENGE_STATE_SCHEMA_SQL = `
CREATE TABLE SchemaVersion (version INTEGER PRIMARY KEY);
CREATE TABLE HashUsers (key INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE OriginalStreamDatas (
  key TEXT PRIMARY KEY,
  isTombstoned INTEGER NOT NULL DEFAULT 0,
  maxAge INTEGER NULL,
  maxCount INTEGER NULL,
  truncateBefore INTEGER NULL,
  discardPoint INTEGER NOT NULL DEFAULT 0,
  maybeDiscardPoint INTEGER NOT NULL DEFAULT 0,
  lastEventNumber INTEGER NOT NULL,
  status INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX OriginalStreamDatasStatusKey ON OriginalStreamDatas (status, key);
CREATE TABLE MetastreamDatas (
  key TEXT PRIMARY KEY,
  isTombstoned INTEGER NOT NULL DEFAULT 0,
  discardPoint INTEGER NOT NULL DEFAULT 0,
  lastRecordChunk INTEGER NULL
) WITHOUT ROWID;
CREATE TABLE ChunkTimeStampRanges (
  key INTEGER PRIMARY KEY,
  min INTEGER NOT NULL,
  max INTEGER NOT NULL
);
CREATE TABLE ChunkWeights (key INTEGER PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE Checkpoints (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;

const ORIGINAL_COLUMNS =
  'key, isTombstoned, maxAge, maxCount, truncateBefore, discardPoint, maybeDiscardPoint, ' +
  'lastEventNumber, status';
const META_COLUMNS = 'key, isTombstoned, discardPoint, lastRecordChunk';

export const SCAVENGE_STATE_STATEMENTS_SQL = {
  begin: 'BEGIN IMMEDIATE',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
  keyValueGet: 'SELECT value FROM Checkpoints WHERE key = ?',
  keyValueSet:
    'INSERT INTO Checkpoints (key, value) VALUES (?, ?) ' +
    'ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  originalGet: `SELECT ${ORIGINAL_COLUMNS} FROM OriginalStreamDatas WHERE key = ?`,
  originalSet: `INSERT INTO OriginalStreamDatas (${ORIGINAL_COLUMNS})
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET isTombstoned = excluded.isTombstoned, maxAge = excluded.maxAge,
    maxCount = excluded.maxCount, truncateBefore = excluded.truncateBefore,
    discardPoint = excluded.discardPoint, maybeDiscardPoint = excluded.maybeDiscardPoint,
    lastEventNumber = excluded.lastEventNumber, status = excluded.status`,
  activeOriginalsFirst: `SELECT ${ORIGINAL_COLUMNS} FROM OriginalStreamDatas
    WHERE status = ? ORDER BY key LIMIT ?`,
  activeOriginalsAfter: `SELECT ${ORIGINAL_COLUMNS} FROM OriginalStreamDatas
    WHERE status = ? AND key > ? ORDER BY key LIMIT ?`,
  originalsWithDiscardsPage: `SELECT ${ORIGINAL_COLUMNS} FROM OriginalStreamDatas
    WHERE key > ? AND (discardPoint > 0 OR maybeDiscardPoint > 0 OR isTombstoned = 1)
    ORDER BY key LIMIT ?`,
  originalsDeleteWithStatus: 'DELETE FROM OriginalStreamDatas WHERE status = ?',
  metaGet: `SELECT ${META_COLUMNS} FROM MetastreamDatas WHERE key = ?`,
  metaSet: `INSERT INTO MetastreamDatas (${META_COLUMNS}) VALUES (?, ?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET isTombstoned = excluded.isTombstoned,
    discardPoint = excluded.discardPoint, lastRecordChunk = excluded.lastRecordChunk`,
  metasPage: `SELECT ${META_COLUMNS} FROM MetastreamDatas
    WHERE key > ? ORDER BY key LIMIT ?`,
  metasDeleteAll: 'DELETE FROM MetastreamDatas',
  weightAdd: `INSERT INTO ChunkWeights (key, value) VALUES (?, ?)
    ON CONFLICT (key) DO UPDATE SET value = value + excluded.value`,
  weightGet: 'SELECT value FROM ChunkWeights WHERE key = ?',
  weightDelete: 'DELETE FROM ChunkWeights WHERE key = ?',
  timeRangeSet: `INSERT INTO ChunkTimeStampRanges (key, min, max) VALUES (?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET min = excluded.min, max = excluded.max`,
  timeRangeGet: 'SELECT min, max FROM ChunkTimeStampRanges WHERE key = ?',
  hashUserGet: 'SELECT value FROM HashUsers WHERE key = ?',
} as const;

export type StatementName = keyof typeof SCAVENGE_STATE_STATEMENTS_SQL;

/** Rows per bulk statement: each statement costs far more than each value it binds. */
export const BULK_ROWS_MAX = 128;

const ORIGINAL_UPSERT = `ON CONFLICT (key) DO UPDATE SET isTombstoned = excluded.isTombstoned, maxAge = excluded.maxAge,
    maxCount = excluded.maxCount, truncateBefore = excluded.truncateBefore,
    discardPoint = excluded.discardPoint, maybeDiscardPoint = excluded.maybeDiscardPoint,
    lastEventNumber = excluded.lastEventNumber, status = excluded.status`;
const META_UPSERT = `ON CONFLICT (key) DO UPDATE SET isTombstoned = excluded.isTombstoned,
    discardPoint = excluded.discardPoint, lastRecordChunk = excluded.lastRecordChunk`;

export type BulkStatementKind = 'hashUsersGet' | 'hashUsersInsert' | 'originalsGet' | 'originalsSet' | 'metasGet' | 'metasSet';

/** SQL of a bulk statement for `rows` keys or rows (1..BULK_ROWS_MAX). */
export function bulkStatementSql(kind: BulkStatementKind, rows: number): string {
  const list = (columns: number): string => Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ');
  const keys = Array.from({ length: rows }, () => '?').join(', ');
  switch (kind) {
    case 'hashUsersGet': return `SELECT CAST(key AS TEXT) AS hash, value FROM HashUsers WHERE key IN (${keys})`;
    case 'hashUsersInsert': return `INSERT INTO HashUsers (key, value) VALUES ${list(2)}`;
    case 'originalsGet': return `SELECT ${ORIGINAL_COLUMNS} FROM OriginalStreamDatas WHERE key IN (${keys})`;
    case 'originalsSet': return `INSERT INTO OriginalStreamDatas (${ORIGINAL_COLUMNS}) VALUES ${list(9)} ${ORIGINAL_UPSERT}`;
    case 'metasGet': return `SELECT ${META_COLUMNS} FROM MetastreamDatas WHERE key IN (${keys})`;
    case 'metasSet': return `INSERT INTO MetastreamDatas (${META_COLUMNS}) VALUES ${list(4)} ${META_UPSERT}`;
  }
}

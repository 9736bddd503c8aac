/**
 * The spec's file-copy backup and restore procedures ("Backup and restore"), as pure decisions
 * over file names: which files belong to a backup, in which order they are copied, which are
 * skipped, renamed or removed. No I/O here: `backup.ts` and `restore.ts` list directories, call
 * these, and copy.
 *
 * Names are relative to their directory (data or index), with `/` separators
 * (`stream-existence/streamExistenceFilter.chk`). In a backup directory the data directory's
 * files live under `db/` and the index directory's under `index/`.
 */

const CHUNK_NAME = /^chunk-(\d{6})\.(\d{6})$/;
const GUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const INDEX_TABLE_NAME = new RegExp(`^${GUID}(\\.bloomfilter)?$`);

export const INDEX_MAP = 'indexmap';
export const OLD_SUFFIX = '.old';
/** The data directory's checkpoints, in the order the differential log part copies them (step 2). */
export const DB_CHECKPOINTS = ['chaser.chk', 'epoch.chk', 'writer.chk', 'proposal.chk'] as const;
export const TRUNCATE_CHECKPOINT = 'truncate.chk';
export const STREAM_EXISTENCE_CHECKPOINT = 'stream-existence/streamExistenceFilter.chk';
export const STREAM_EXISTENCE_DATA = 'stream-existence/streamExistenceFilter.dat';
export const SCAVENGE_DB = 'scavenging/scavenging.db';
/** Index files copied by step 7 of the differential index part, each if present. */
export const INDEX_EXTRAS = [STREAM_EXISTENCE_CHECKPOINT, STREAM_EXISTENCE_DATA, SCAVENGE_DB] as const;

export interface ChunkName {
  readonly chunkNumber: number;
  readonly version: number;
}

export function parseChunkName(name: string): ChunkName | undefined {
  const m = CHUNK_NAME.exec(name);
  return m === null ? undefined : { chunkNumber: Number(m[1]), version: Number(m[2]) };
}

export function isChunkName(name: string): boolean {
  return CHUNK_NAME.test(name);
}

/** `<GUID>` or `<GUID>.bloomfilter` at the top of the index directory. */
export function isIndexTableName(name: string): boolean {
  return INDEX_TABLE_NAME.test(name);
}

/** Chunk files in log order (chunk number, then version). */
export function sortChunks(names: readonly string[]): string[] {
  return names.filter(isChunkName).sort((a, b) => {
    const x = parseChunkName(a)!;
    const y = parseChunkName(b)!;
    return x.chunkNumber - y.chunkNumber || x.version - y.version;
  });
}

/**
 * The index directory's files that a backup holds: `*.chk`, `indexmap`, tables and their bloom
 * filters, the stream existence filter and `scavenging/scavenging.db`. Left out: the node's lock
 * file, temporary files, SQLite's WAL and lock of a scavenge state that is open (a scavenge is
 * running: the file is not consistent on its own; the next scavenge starts over without it, which
 * the node documents as safe), and the chunk summaries (an optimisation the scavenge rebuilds).
 */
export function isBackedUpIndexFile(name: string, scavengeStateOpen: boolean): boolean {
  if (name.endsWith('.tmp') || name.includes('.tmp.')) return false;
  if (name === SCAVENGE_DB) return !scavengeStateOpen;
  if (name.startsWith('scavenging/')) return false;
  if (name.startsWith('stream-existence/')) return name === STREAM_EXISTENCE_CHECKPOINT || name === STREAM_EXISTENCE_DATA;
  if (name.includes('/')) return false;
  return name === INDEX_MAP || isIndexTableName(name) || name.endsWith('.chk');
}

/** The scavenge state is open (a scavenge runs) while its WAL or its lock exists. */
export function scavengeStateOpen(indexNames: readonly string[]): boolean {
  return indexNames.some((n) => n === `${SCAVENGE_DB}-wal` || n.startsWith(`${SCAVENGE_DB}.lock`));
}

/** The data directory's files that a backup holds: checkpoints and chunks. */
export function isBackedUpDbFile(name: string): boolean {
  return !name.includes('/') && (name.endsWith('.chk') || isChunkName(name));
}

export interface SimpleFullOrder {
  /** 1. `*.chk` under the index directory. */
  readonly indexCheckpoints: readonly string[];
  /** 2. The other index files: `indexmap` first, then tables, then the rest. */
  readonly indexOthers: readonly string[];
  /** 3. The data directory's checkpoint files (writer.chk last). */
  readonly dbCheckpoints: readonly string[];
  /** 4. Chunk files, in log order. */
  readonly chunks: readonly string[];
}

/**
 * The simple full backup, in the spec's order: index checkpoints, other index files, database
 * checkpoints, chunks. Within the database checkpoints writer.chk goes last, so every chunk byte
 * it covers was durable before it was read and is copied after it.
 */
export function simpleFullOrder(indexNames: readonly string[], dbNames: readonly string[]): SimpleFullOrder {
  const open = scavengeStateOpen(indexNames);
  const index = indexNames.filter((n) => isBackedUpIndexFile(n, open)).sort();
  const rank = (n: string): number => (n === INDEX_MAP ? 0 : isIndexTableName(n) ? 1 : 2);
  const db = dbNames.filter(isBackedUpDbFile);
  const dbRank = (n: string): number => (n === 'writer.chk' ? 1 : 0);
  return {
    indexCheckpoints: index.filter((n) => n.endsWith('.chk')),
    indexOthers: index.filter((n) => !n.endsWith('.chk')).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)),
    dbCheckpoints: db.filter((n) => n.endsWith('.chk')).sort((a, b) => dbRank(a) - dbRank(b) || a.localeCompare(b)),
    chunks: sortChunks(db),
  };
}

// ---- Differential backup, index part ----

/** Step 1: an index directory with no files (only directories) skips to step 7. */
export function indexHasFiles(indexNames: readonly string[]): boolean {
  return indexNames.some((n) => !n.includes('/') && n !== 'eventdb.lock');
}

/** Step 3: `indexFiles`, every `<GUID>` and `<GUID>.bloomfilter` in the source. */
export function listIndexFiles(sourceIndexNames: readonly string[]): string[] {
  return sourceIndexNames.filter(isIndexTableName).sort();
}

/** Step 4: the listed files not already in the backup. */
export function indexFilesToCopy(indexFiles: readonly string[], backupIndexNames: readonly string[]): string[] {
  const present = new Set(backupIndexNames);
  return indexFiles.filter((n) => !present.has(n));
}

/** Step 5: back to step 2 when the source and backup `indexmap` differ or the backup has none. */
export function indexMapCopyIsCurrent(source: Buffer | undefined, backup: Buffer | undefined): boolean {
  return source !== undefined && backup !== undefined && source.equals(backup);
}

/** Step 6: backup tables and bloom filters that are not in `indexFiles`. */
export function indexFilesToDelete(indexFiles: readonly string[], backupIndexNames: readonly string[]): string[] {
  const keep = new Set(indexFiles);
  return backupIndexNames.filter((n) => isIndexTableName(n) && !keep.has(n)).sort();
}

// ---- Differential backup, log part ----

/** Step 1: the last chunk in the backup (renamed with `.old`), if any. */
export function lastBackupChunk(backupDbNames: readonly string[]): string | undefined {
  return sortChunks(backupDbNames).at(-1);
}

/** Step 3: the source's chunk files (`chunkFiles`) not already in the backup, in log order. */
export function chunksToCopy(chunkFiles: readonly string[], backupDbNames: readonly string[]): string[] {
  const present = new Set(backupDbNames);
  return sortChunks(chunkFiles).filter((n) => !present.has(n));
}

/** Step 4: backup chunks not in `chunkFiles`, the `.old` file included. */
export function chunksToRemove(chunkFiles: readonly string[], backupDbNames: readonly string[]): string[] {
  const keep = new Set(chunkFiles);
  return backupDbNames
    .filter((n) => (isChunkName(n) || (n.endsWith(OLD_SUFFIX) && isChunkName(n.slice(0, -OLD_SUFFIX.length)))) && !keep.has(n))
    .sort();
}

// ---- Restore ----

export type RestoreKind = 'simple' | 'differential';

/**
 * The chunk a restore must cut at the log's end, and to what size. The data checkpoint was copied
 * before the chunks, so the copy of the chunk holding `endPosition` may go on past it: with bytes
 * written later, or completed (footer) after the checkpoint was read. The node cuts an active
 * chunk's bytes past writer.chk itself, but a completed chunk must end where its data ends; so the
 * restore cuts that chunk back to header + the data up to `endPosition`, making it the active
 * chunk again. Chunks past `endPosition` are deleted by the node as it opens.
 */
export function restoreCut(
  chunkNames: readonly string[],
  endPosition: number,
  chunkSizeBytes: number,
  headerSizeBytes: number,
): { readonly name: string; readonly sizeBytes: number } | undefined {
  if (endPosition <= 0) return undefined;
  const holding = Math.floor(endPosition / chunkSizeBytes);
  // A position on a chunk boundary ends the chunk before it (a completed chunk ends there).
  if (endPosition % chunkSizeBytes === 0) return undefined;
  const candidates = sortChunks(chunkNames).filter((n) => parseChunkName(n)!.chunkNumber === holding);
  const name = candidates.at(-1);
  if (name === undefined) return undefined;
  return { name, sizeBytes: headerSizeBytes + (endPosition - holding * chunkSizeBytes) };
}

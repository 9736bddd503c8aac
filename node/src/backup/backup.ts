/**
 * `eventdb backup`: the spec's simple full and differential file-copy backups of a node's data
 * and index directories into `<to>/db` and `<to>/index`, with a manifest (manifest.ts).
 *
 * Full (spec "Simple full backup", in order): index checkpoint files; the other index files;
 * database checkpoint files; chunk files. The backup directory is emptied first. The "other
 * index files" step copies `indexmap` and the tables it lists until the copied `indexmap` still
 * equals the source's (the differential index part's loop): a table merged away between the
 * listing and its copy would otherwise leave an `indexmap` naming a missing table.
 *
 * Differential (spec "Differential backup"): index part steps 1-7, log part steps 1-4, exactly
 * as numbered in the functions below; files already in the backup are not copied again.
 *
 * A running node is allowed (the procedure is made for it): its directories are detected by their
 * lock (platform/directory-lock.ts). A stopped node's directories are locked for the duration, so
 * it cannot start in the middle. The backup directory itself is locked, so two backups never
 * write into one. Given the node's URL and credentials, a running scavenge is stopped first and
 * started again (resumed) after, also when the backup fails.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EventDbError, isErrno } from '../errors.js';
import { syncDirectory } from '../platform/block-file.js';
import { lockDatabaseDirectories, lockDirectory, type DirectoryLock } from '../platform/directory-lock.js';
import { decodeChunkHeader } from '../storage/format/chunk-header.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../storage/limits.js';
import {
  copyFileHashed,
  hashFile,
  listTree,
  readCheckpoint,
  readIfExists,
  writeFileDurably,
  type CopiedFile,
} from './file-copy.js';
import {
  IN_PROGRESS_FILE,
  InProgressSchema,
  MANIFEST_FILE,
  MANIFEST_FORMAT,
  parseManifest,
  type InProgress,
  type Manifest,
  type ManifestFile,
} from './manifest.js';
import { ensureNodeId } from './node-identity.js';
import {
  DB_CHECKPOINTS,
  INDEX_EXTRAS,
  INDEX_MAP,
  OLD_SUFFIX,
  chunksToCopy,
  chunksToRemove,
  indexFilesToCopy,
  indexFilesToDelete,
  indexHasFiles,
  indexMapCopyIsCurrent,
  isChunkName,
  isIndexTableName,
  lastBackupChunk,
  listIndexFiles,
  scavengeStateOpen,
  simpleFullOrder,
  sortChunks,
} from './plan.js';
import { createScavengeControl, type NodeAccess } from './scavenge-control.js';

export interface BackupOptions {
  readonly dbDir: string;
  readonly indexDir: string;
  readonly toDir: string;
  readonly differential: boolean;
  /** The node's admin API, to stop a running scavenge and resume it after. */
  readonly node?: NodeAccess;
  /**
   * Full backup of a running node: how long to wait for chaser.chk to reach the writer.chk read
   * at the start (the restore truncates the log at chaser.chk). Default 10 s.
   */
  readonly chaserWaitMs?: number;
  /** Progress lines. */
  readonly out: (line: string) => void;
}

export interface BackupResult {
  readonly manifest: Manifest;
  readonly copiedFiles: number;
  readonly copiedBytes: number;
  readonly keptFiles: number;
  readonly removedFiles: readonly string[];
  readonly elapsedMs: number;
  readonly nodeRunning: boolean;
  readonly scavengeStopped?: string;
}

const INDEX_LOOP_ROUNDS_MAX = 100;
const INDEX_MAP_WAIT_MS = 30_000;
const POLL_MS = 50;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

/** Copies one file of the source into the backup, with a progress line per file (and per second of a long one). */
class Copier {
  readonly copied = new Map<string, CopiedFile>();
  copiedBytes = 0;

  constructor(private readonly out: (line: string) => void, private readonly verb = 'copied') {}

  async copy(from: string, to: string, label: string): Promise<CopiedFile> {
    const started = performance.now();
    const result = await copyFileHashed(from, to, (done, total, elapsedMs) => {
      const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
      this.out(`copying ${label}: ${pct}% (${formatBytes(done)} of ${formatBytes(total)}, ${(done / 1024 / 1024 / (elapsedMs / 1000)).toFixed(0)} MiB/s)`);
    });
    this.copied.set(label, result);
    this.copiedBytes += result.sizeBytes;
    const ms = performance.now() - started;
    this.out(`${this.verb} ${label} (${formatBytes(result.sizeBytes)}${ms >= 1000 ? `, ${(ms / 1000).toFixed(1)} s` : ''})`);
    return result;
  }
}

async function topLevelFiles(dir: string): Promise<string[]> {
  return (await listTree(dir)).filter((n) => !n.includes('/'));
}

async function removeFile(file: string): Promise<void> {
  await fsp.rm(file, { force: true });
}

/** The backup directory's current owner, from its manifest or its in-progress marker. */
async function backupOwner(toDir: string): Promise<{ manifest?: Manifest; inProgress?: InProgress }> {
  const manifestBytes = await readIfExists(path.join(toDir, MANIFEST_FILE));
  const markerBytes = await readIfExists(path.join(toDir, IN_PROGRESS_FILE));
  let manifest: Manifest | undefined;
  let inProgress: InProgress | undefined;
  if (manifestBytes !== undefined) {
    try {
      manifest = parseManifest(manifestBytes.toString('utf8'));
    } catch (err: unknown) {
      throw new EventDbError('EDB_BACKUP_INVALID', `${path.join(toDir, MANIFEST_FILE)}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (markerBytes !== undefined) {
    const parsed = InProgressSchema.safeParse(JSON.parse(markerBytes.toString('utf8')) as unknown);
    if (parsed.success) inProgress = parsed.data;
  }
  return { ...(manifest === undefined ? {} : { manifest }), ...(inProgress === undefined ? {} : { inProgress }) };
}

/** Locks the source directories when no node holds them; undefined when a node runs on them. */
function lockSourceIfStopped(dbDir: string, indexDir: string): DirectoryLock | undefined {
  try {
    return lockDatabaseDirectories(dbDir, indexDir);
  } catch (err: unknown) {
    if (err instanceof EventDbError && err.code === 'EDB_DIRECTORY_LOCKED') return undefined;
    throw err;
  }
}

export async function runBackup(o: BackupOptions): Promise<BackupResult> {
  const startedMs = performance.now();
  const startedAt = new Date().toISOString();
  const dbDir = path.resolve(o.dbDir);
  const indexDir = path.resolve(o.indexDir);
  const toDir = path.resolve(o.toDir);
  if ((await readIfExists(path.join(dbDir, 'writer.chk'))) === undefined) {
    throw new EventDbError('EDB_BACKUP_FAILED', `${dbDir} is not a node's data directory (no writer.chk)`);
  }
  for (const [a, b] of [[dbDir, toDir], [indexDir, toDir]] as const) {
    if (a === b || a.startsWith(`${b}${path.sep}`) || b.startsWith(`${a}${path.sep}`)) {
      throw new EventDbError('EDB_BACKUP_FAILED', `the backup directory ${toDir} must not overlap the node's directory ${a}`);
    }
  }
  const nodeId = await ensureNodeId(dbDir);
  await fsp.mkdir(toDir, { recursive: true });
  const backupLock = lockDirectory(toDir, 'backup');
  let sourceLock: DirectoryLock | undefined;
  const scavenges = o.node === undefined ? undefined : createScavengeControl(o.node);
  let scavengeStopped: string | undefined;
  try {
    const owner = await backupOwner(toDir);
    const ownerId = owner.inProgress?.nodeId ?? owner.manifest?.nodeId;
    if (o.differential) {
      if (ownerId !== undefined && ownerId !== nodeId) {
        throw new EventDbError(
          'EDB_BACKUP_NODE_MISMATCH',
          `${toDir} holds a backup of node ${ownerId}, but ${dbDir} is node ${nodeId}: backups of different nodes are never mixed ` +
            '(take a full backup into another directory, or a full backup here to replace it)',
          { details: { backupNodeId: ownerId, nodeId } },
        );
      }
      if (ownerId === undefined && (await listTree(path.join(toDir, 'db'))).length + (await listTree(path.join(toDir, 'index'))).length > 0) {
        throw new EventDbError('EDB_BACKUP_NODE_MISMATCH', `${toDir} holds files without a manifest: they cannot be told to be of node ${nodeId}; take a full backup`);
      }
    } else if (ownerId !== undefined) {
      o.out(`replacing the backup in ${toDir}${ownerId === nodeId ? '' : ` (of node ${ownerId})`}`);
    }
    sourceLock = lockSourceIfStopped(dbDir, indexDir);
    const nodeRunning = sourceLock === undefined;
    o.out(`${o.differential ? 'differential' : 'full'} backup of node ${nodeId} (${nodeRunning ? 'running' : 'stopped'}) from ${dbDir} and ${indexDir} to ${toDir}`);
    if (scavenges !== undefined) {
      scavengeStopped = await scavenges.stopRunning();
      o.out(scavengeStopped === undefined ? 'no scavenge running' : `stopped scavenge ${scavengeStopped}; it is resumed after the backup`);
    }
    const marker: InProgress = { nodeId, startedAt, pid: process.pid };
    await writeFileDurably(path.join(toDir, IN_PROGRESS_FILE), JSON.stringify(marker));
    const backupDb = path.join(toDir, 'db');
    const backupIndex = path.join(toDir, 'index');
    if (!o.differential) {
      await fsp.rm(backupDb, { recursive: true, force: true });
      await fsp.rm(backupIndex, { recursive: true, force: true });
    }
    await fsp.mkdir(backupDb, { recursive: true });
    await fsp.mkdir(backupIndex, { recursive: true });
    const writerAtStartPosition = (await readCheckpoint(path.join(dbDir, 'writer.chk'))) ?? 0;
    const copier = new Copier(o.out);
    const ctx: StepContext = { dbDir, indexDir, backupDb, backupIndex, copier, out: o.out };
    const removed = o.differential
      ? await differentialBackup(ctx)
      : await fullBackup(ctx, nodeRunning ? (o.chaserWaitMs ?? 10_000) : 0, writerAtStartPosition);
    await syncDirectory(backupDb);
    await syncDirectory(backupIndex);

    const files = await describeFiles(toDir, copier.copied, owner.manifest);
    const chunkSizeBytes = await chunkSizeOf(backupDb);
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      kind: o.differential ? 'differential' : 'full',
      nodeId,
      source: { db: dbDir, index: indexDir, host: os.hostname() },
      startedAt,
      completedAt: new Date().toISOString(),
      writerAtStartPosition,
      writerPosition: (await readCheckpoint(path.join(backupDb, 'writer.chk'))) ?? 0,
      chaserPosition: (await readCheckpoint(path.join(backupDb, 'chaser.chk'))) ?? 0,
      ...(chunkSizeBytes === undefined ? {} : { chunkSizeBytes }),
      files,
    };
    await writeFileDurably(path.join(toDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 1)}\n`);
    await removeFile(path.join(toDir, IN_PROGRESS_FILE));
    await syncDirectory(toDir);
    o.out(
      `backup complete: ${copier.copied.size} files copied (${formatBytes(copier.copiedBytes)}), ${files.length - copier.copied.size} kept, ` +
        `${removed.length} removed; writer ${manifest.writerPosition}, chaser ${manifest.chaserPosition}`,
    );
    return {
      manifest,
      copiedFiles: copier.copied.size,
      copiedBytes: copier.copiedBytes,
      keptFiles: files.length - copier.copied.size,
      removedFiles: removed,
      elapsedMs: performance.now() - startedMs,
      nodeRunning,
      ...(scavengeStopped === undefined ? {} : { scavengeStopped }),
    };
  } finally {
    sourceLock?.release();
    backupLock.release();
    if (scavenges !== undefined && scavengeStopped !== undefined) {
      o.out(`resumed the stopped scavenge as ${await scavenges.resume()}`);
    }
  }
}

interface StepContext {
  readonly dbDir: string;
  readonly indexDir: string;
  readonly backupDb: string;
  readonly backupIndex: string;
  readonly copier: Copier;
  readonly out: (line: string) => void;
}

/** Copies a file that may legitimately be gone (merged away, scavenged): false when it was. */
async function copyIfPresent(ctx: StepContext, from: string, to: string, label: string): Promise<boolean> {
  try {
    await ctx.copier.copy(from, to, label);
    return true;
  } catch (err: unknown) {
    if (isErrno(err, 'ENOENT')) return false;
    throw err;
  }
}

/**
 * Differential index part, steps 1-6 (step 7 is the caller's). Also the full backup's "other
 * index files" step into an empty backup directory, where step 4 copies every table.
 */
async function copyIndexTables(ctx: StepContext): Promise<string[]> {
  const { indexDir, backupIndex } = ctx;
  // 1. An index directory with no files (only directories) skips to step 7.
  if (!indexHasFiles(await topLevelFiles(indexDir))) {
    ctx.out('index part: the index directory has no files');
    return [];
  }
  let indexFiles: string[] = [];
  for (let round = 1; ; round++) {
    if (round > INDEX_LOOP_ROUNDS_MAX) {
      throw new EventDbError('EDB_BACKUP_FAILED', `the index kept changing: indexmap copied ${INDEX_LOOP_ROUNDS_MAX} times without a stable copy`);
    }
    // 2. Copy indexmap (repeat until the source file exists).
    const waitUntil = performance.now() + INDEX_MAP_WAIT_MS;
    while (!(await copyIfPresent(ctx, path.join(indexDir, INDEX_MAP), path.join(backupIndex, INDEX_MAP), `index/${INDEX_MAP}`))) {
      if (performance.now() > waitUntil) throw new EventDbError('EDB_BACKUP_FAILED', `${path.join(indexDir, INDEX_MAP)} did not appear within ${INDEX_MAP_WAIT_MS / 1000} s`);
      await sleep(POLL_MS);
    }
    // 3. indexFiles: every <GUID> and <GUID>.bloomfilter in the source.
    indexFiles = listIndexFiles(await topLevelFiles(indexDir));
    // 4. Copy them, skipping names already in the backup (a vanished one was merged away: step 5 sees a new indexmap).
    for (const name of indexFilesToCopy(indexFiles, await topLevelFiles(backupIndex))) {
      await copyIfPresent(ctx, path.join(indexDir, name), path.join(backupIndex, name), `index/${name}`);
    }
    // 5. Back to step 2 when the source and backup indexmap differ (or one is missing).
    const same = indexMapCopyIsCurrent(await readIfExists(path.join(indexDir, INDEX_MAP)), await readIfExists(path.join(backupIndex, INDEX_MAP)));
    if (same) break;
    ctx.out(`index part: indexmap changed during the copy; copying it again (round ${round + 1})`);
  }
  // 6. Delete from the backup every <GUID> / <GUID>.bloomfilter not in indexFiles.
  const removed = indexFilesToDelete(indexFiles, await topLevelFiles(backupIndex));
  for (const name of removed) {
    await removeFile(path.join(backupIndex, name));
    ctx.out(`removed index/${name}`);
  }
  return removed.map((n) => `index/${n}`);
}

/** Step 7 of the differential index part (each if present); the scavenge database only while closed. */
async function copyIndexExtras(ctx: StepContext, names: readonly string[]): Promise<void> {
  const open = scavengeStateOpen(await listTree(ctx.indexDir));
  for (const name of names) {
    if (name.startsWith('scavenging/') && open) {
      ctx.out(`skipped index/${name}: a scavenge has it open (the next scavenge of a restored node starts over without it)`);
      await removeFile(path.join(ctx.backupIndex, name));
      continue;
    }
    await copyIfPresent(ctx, path.join(ctx.indexDir, name), path.join(ctx.backupIndex, name), `index/${name}`);
  }
}

async function fullBackup(ctx: StepContext, chaserWaitMs: number, writerAtStart: number): Promise<string[]> {
  const order = simpleFullOrder(await listTree(ctx.indexDir), await listTree(ctx.dbDir));
  // 1. Index checkpoint files.
  for (const name of order.indexCheckpoints) {
    await copyIfPresent(ctx, path.join(ctx.indexDir, name), path.join(ctx.backupIndex, name), `index/${name}`);
  }
  // 2. The other index files: indexmap and its tables (consistently), then the rest.
  await copyIndexTables(ctx);
  await copyIndexExtras(ctx, order.indexOthers.filter((n) => n !== INDEX_MAP && !isIndexTableName(n)));
  // 3. Database checkpoint files (writer.chk last). The restore truncates the log at chaser.chk:
  // give a running node's chaser the chance to reach the log's end as of the backup's start.
  if (chaserWaitMs > 0) await waitForChaser(ctx, writerAtStart, chaserWaitMs);
  for (const name of order.dbCheckpoints) {
    await ctx.copier.copy(path.join(ctx.dbDir, name), path.join(ctx.backupDb, name), `db/${name}`);
  }
  // 4. Chunk files, listed now so that the chunks writer.chk covers are all there.
  const chunks = sortChunks(await topLevelFiles(ctx.dbDir));
  for (const name of chunks) await copyChunk(ctx, name);
  return [];
}

async function waitForChaser(ctx: StepContext, target: number, waitMs: number): Promise<void> {
  const until = performance.now() + waitMs;
  for (;;) {
    const chaser = (await readCheckpoint(path.join(ctx.dbDir, 'chaser.chk'))) ?? -1;
    if (chaser >= target) return;
    if (performance.now() > until) {
      ctx.out(`warning: chaser.chk (${chaser}) did not reach the writer position at the start (${target}) within ${waitMs} ms; the restore ends at ${chaser}`);
      return;
    }
    await sleep(POLL_MS);
  }
}

async function copyChunk(ctx: StepContext, name: string): Promise<void> {
  if (!(await copyIfPresent(ctx, path.join(ctx.dbDir, name), path.join(ctx.backupDb, name), `db/${name}`))) {
    throw new EventDbError(
      'EDB_BACKUP_FAILED',
      `chunk ${name} disappeared from ${ctx.dbDir} during the backup (a scavenge replaced it): run the backup again, ` +
        'with --node-url and credentials so that the tool stops the scavenge first',
    );
  }
}

async function differentialBackup(ctx: StepContext): Promise<string[]> {
  // Index part, steps 1-6, then 7.
  const removed = await copyIndexTables(ctx);
  await copyIndexExtras(ctx, INDEX_EXTRAS);

  // Log part.
  // 1. Rename the last chunk in the backup with a .old suffix.
  const last = lastBackupChunk(await topLevelFiles(ctx.backupDb));
  if (last !== undefined) {
    await fsp.rename(path.join(ctx.backupDb, last), path.join(ctx.backupDb, `${last}${OLD_SUFFIX}`));
    ctx.out(`renamed db/${last} to db/${last}${OLD_SUFFIX}`);
  }
  // 2. Copy chaser.chk, epoch.chk, writer.chk, proposal.chk.
  for (const name of DB_CHECKPOINTS) {
    await copyIfPresent(ctx, path.join(ctx.dbDir, name), path.join(ctx.backupDb, name), `db/${name}`);
  }
  // 3. List chunkFiles; copy them, skipping names already in the backup. All must copy.
  const chunkFiles = sortChunks(await topLevelFiles(ctx.dbDir));
  for (const name of chunksToCopy(chunkFiles, await topLevelFiles(ctx.backupDb))) await copyChunk(ctx, name);
  // 4. Remove backup chunks not in chunkFiles (the .old file included).
  const stale = chunksToRemove(chunkFiles, await topLevelFiles(ctx.backupDb));
  for (const name of stale) {
    await removeFile(path.join(ctx.backupDb, name));
    ctx.out(`removed db/${name}`);
  }
  return [...removed, ...stale.map((n) => `db/${n}`)];
}

/**
 * The manifest's file list: everything now under db/ and index/. Files copied by this run carry
 * the checksum taken while copying; a file kept from an earlier backup takes the earlier
 * manifest's entry when its size and modification time are unchanged, else it is hashed again.
 */
async function describeFiles(toDir: string, copied: ReadonlyMap<string, CopiedFile>, previous: Manifest | undefined): Promise<ManifestFile[]> {
  const before = new Map((previous?.files ?? []).map((f) => [f.path, f]));
  const out: ManifestFile[] = [];
  for (const area of ['db', 'index'] as const) {
    for (const rel of await listTree(path.join(toDir, area))) {
      const label = `${area}/${rel}`;
      if (rel.endsWith('.copying') || rel.endsWith('.tmp')) {
        await removeFile(path.join(toDir, label)); // a leftover of an interrupted run
        continue;
      }
      const fresh = copied.get(label);
      if (fresh !== undefined) {
        out.push({ path: label, ...fresh });
        continue;
      }
      const stat = await fsp.stat(path.join(toDir, label));
      const old = before.get(label);
      if (old !== undefined && old.sizeBytes === stat.size && old.mtimeMs === stat.mtimeMs) {
        out.push(old);
      } else {
        out.push({ path: label, ...(await hashFile(path.join(toDir, label))) });
      }
    }
  }
  return out;
}

/** The chunk size, from the header of the first chunk in `dir`. */
export async function chunkSizeOf(dir: string): Promise<number | undefined> {
  const first = (await topLevelFiles(dir)).find(isChunkName);
  if (first === undefined) return undefined;
  const handle = await fsp.open(path.join(dir, first), 'r');
  try {
    const header = Buffer.alloc(CHUNK_HEADER_SIZE_BYTES);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    if (bytesRead < CHUNK_HEADER_SIZE_BYTES) return undefined;
    return decodeChunkHeader(header).chunkSizeBytes;
  } finally {
    await handle.close();
  }
}

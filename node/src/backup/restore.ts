/**
 * `eventdb restore` and `eventdb backup --verify`.
 *
 * Restore (spec "Simple restore" / "Differential restore"):
 * 1. ensure the node is stopped: the target directories are locked (platform/directory-lock.ts)
 *    for the whole restore; a running node holds that lock, and the restore is refused naming it;
 * 2. copy all files to the target, each checked against the manifest's checksum as it is copied
 *    (a backup that does not match is refused before the node ever opens it);
 * 3. simple restore (a full backup): copy `chaser.chk` to `truncate.chk`, overwriting the restored
 *    one. A differential restore omits this step, as the spec says.
 * Then two things the node needs from a copy taken while it ran: the chunk holding the copied
 * writer.chk is cut back to it (plan.ts `restoreCut`: it may have been completed after writer.chk
 * was copied), and the restored directories get a new node identity (node-identity.ts).
 *
 * The target directories must hold no database files, unless `overwrite` is set: then the old
 * files are deleted first (never mixed with the backup's).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { EventDbError } from '../errors.js';
import { syncDirectory } from '../platform/block-file.js';
import { lockDatabaseDirectories, LOCK_FILE_NAME, type DirectoryLock } from '../platform/directory-lock.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../storage/limits.js';
import { formatBytes } from './backup.js';
import { copyFileHashed, hashFile, listTree, readIfExists } from './file-copy.js';
import { compareWithManifest, IN_PROGRESS_FILE, MANIFEST_FILE, parseManifest, type Manifest, type VerifyProblem } from './manifest.js';
import { NODE_ID_FILE, writeRestoredNodeId } from './node-identity.js';
import { isChunkName, restoreCut, TRUNCATE_CHECKPOINT } from './plan.js';

export interface RestoreOptions {
  readonly fromDir: string;
  readonly dbDir: string;
  readonly indexDir: string;
  readonly overwrite: boolean;
  readonly out: (line: string) => void;
}

export interface RestoreResult {
  readonly kind: 'simple' | 'differential';
  readonly manifest: Manifest;
  readonly restoredFiles: number;
  readonly restoredBytes: number;
  readonly endPosition: number;
  readonly nodeId: string;
  readonly elapsedMs: number;
}

/** Reads a backup's manifest; refuses an incomplete backup. */
export async function readBackupManifest(fromDir: string): Promise<Manifest> {
  const dir = path.resolve(fromDir);
  if ((await readIfExists(path.join(dir, IN_PROGRESS_FILE))) !== undefined) {
    throw new EventDbError('EDB_BACKUP_INVALID', `the backup in ${dir} is incomplete: a backup into it started and did not finish (${IN_PROGRESS_FILE})`);
  }
  const bytes = await readIfExists(path.join(dir, MANIFEST_FILE));
  if (bytes === undefined) throw new EventDbError('EDB_BACKUP_INVALID', `${dir} holds no backup (no ${MANIFEST_FILE})`);
  try {
    return parseManifest(bytes.toString('utf8'));
  } catch (err: unknown) {
    throw new EventDbError('EDB_BACKUP_INVALID', `${path.join(dir, MANIFEST_FILE)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Hashes every file of a backup and compares with its manifest. */
export async function verifyBackup(fromDir: string, out: (line: string) => void): Promise<{ manifest: Manifest; problems: VerifyProblem[]; checkedBytes: number }> {
  const dir = path.resolve(fromDir);
  const manifest = await readBackupManifest(dir);
  const observed = [];
  let checkedBytes = 0;
  for (const area of ['db', 'index'] as const) {
    for (const rel of await listTree(path.join(dir, area))) {
      const hashed = await hashFile(path.join(dir, area, rel));
      checkedBytes += hashed.sizeBytes;
      observed.push({ path: `${area}/${rel}`, sizeBytes: hashed.sizeBytes, sha256: hashed.sha256 });
    }
  }
  const problems = compareWithManifest(manifest, observed);
  for (const p of problems) out(`BAD ${p.path}: ${p.problem}: ${p.detail}`);
  out(problems.length === 0
    ? `backup ${dir} is good: ${manifest.files.length} files (${formatBytes(checkedBytes)}) match the manifest; ${manifest.kind} backup of node ${manifest.nodeId} taken ${manifest.completedAt}`
    : `backup ${dir} is damaged: ${problems.length} problem(s)`);
  return { manifest, problems, checkedBytes };
}

function isDatabaseFile(area: 'db' | 'index', rel: string): boolean {
  if (rel === LOCK_FILE_NAME) return false;
  if (area === 'db') return rel.endsWith('.chk') || isChunkName(rel) || rel === NODE_ID_FILE || rel.endsWith('.tmp');
  return true;
}

/** Takes the lock of the target directories, or refuses: a node is running on them. */
function lockTarget(dbDir: string, indexDir: string): DirectoryLock {
  try {
    return lockDatabaseDirectories(dbDir, indexDir);
  } catch (err: unknown) {
    if (err instanceof EventDbError && err.code === 'EDB_DIRECTORY_LOCKED') {
      throw new EventDbError('EDB_RESTORE_REFUSED', `restore refused: a node is running on the target: ${err.message}. Stop the node first (spec: restore only onto a stopped node)`, { details: err.details, cause: err });
    }
    throw err;
  }
}

export async function runRestore(o: RestoreOptions): Promise<RestoreResult> {
  const startedMs = performance.now();
  const fromDir = path.resolve(o.fromDir);
  const dbDir = path.resolve(o.dbDir);
  const indexDir = path.resolve(o.indexDir);
  const manifest = await readBackupManifest(fromDir);
  const lock = lockTarget(dbDir, indexDir);
  try {
    const targets = { db: dbDir, index: indexDir } as const;
    const existing: string[] = [];
    for (const area of ['db', 'index'] as const) {
      for (const rel of await listTree(targets[area])) if (isDatabaseFile(area, rel)) existing.push(path.join(targets[area], rel));
    }
    if (existing.length > 0) {
      if (!o.overwrite) {
        throw new EventDbError(
          'EDB_RESTORE_REFUSED',
          `restore refused: the target already holds database files (${existing.slice(0, 3).join(', ')}${existing.length > 3 ? `, and ${existing.length - 3} more` : ''}); ` +
            'files of another node are never mixed with a backup: empty the directories, or pass --overwrite to delete them',
        );
      }
      for (const file of existing) await fsp.rm(file, { force: true });
      o.out(`deleted ${existing.length} files of the target's previous database`);
    }
    const kind = manifest.kind === 'full' ? 'simple' : 'differential';
    o.out(`${kind} restore of node ${manifest.nodeId}'s ${manifest.kind} backup (${manifest.completedAt}) from ${fromDir} to ${dbDir} and ${indexDir}`);

    // 2. Copy all files to the target, checking each against the manifest as it is copied.
    let restoredBytes = 0;
    for (const file of manifest.files) {
      const area = file.path.startsWith('db/') ? 'db' : 'index';
      const rel = file.path.slice(area.length + 1);
      const from = path.join(fromDir, file.path);
      const to = path.join(targets[area], rel);
      let copied;
      try {
        copied = await copyFileHashed(from, to, (done, total) => o.out(`restoring ${file.path}: ${Math.floor((done / Math.max(1, total)) * 100)}%`));
      } catch (err: unknown) {
        throw new EventDbError('EDB_BACKUP_INVALID', `cannot restore ${file.path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      if (copied.sizeBytes !== file.sizeBytes || copied.sha256 !== file.sha256) {
        await fsp.rm(to, { force: true });
        throw new EventDbError('EDB_BACKUP_INVALID', `the backup's ${file.path} does not match its manifest (size ${copied.sizeBytes}/${file.sizeBytes}, sha256 ${copied.sha256}/${file.sha256}): restore stopped; run \`eventdb backup --verify ${fromDir}\``);
      }
      restoredBytes += copied.sizeBytes;
      o.out(`restored ${file.path} (${formatBytes(copied.sizeBytes)})`);
    }

    // The log's end in the copy: cut the chunk holding it back to it.
    const endPosition = manifest.writerPosition;
    const chunkNames = (await listTree(dbDir)).filter(isChunkName);
    if (manifest.chunkSizeBytes !== undefined) {
      const cut = restoreCut(chunkNames, endPosition, manifest.chunkSizeBytes, CHUNK_HEADER_SIZE_BYTES);
      if (cut !== undefined) {
        const file = path.join(dbDir, cut.name);
        const { size } = await fsp.stat(file);
        if (size > cut.sizeBytes) {
          const handle = await fsp.open(file, 'r+');
          try {
            await handle.truncate(cut.sizeBytes);
            await handle.sync();
          } finally {
            await handle.close();
          }
          o.out(`cut db/${cut.name} at the backup's writer position ${endPosition} (${size - cut.sizeBytes} bytes past it)`);
        }
      }
    }

    // 3. Simple restore: chaser.chk copied over truncate.chk.
    if (kind === 'simple') {
      const chaser = path.join(dbDir, 'chaser.chk');
      const truncate = path.join(dbDir, TRUNCATE_CHECKPOINT);
      await fsp.copyFile(chaser, `${truncate}.tmp`);
      const handle = await fsp.open(`${truncate}.tmp`, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fsp.rename(`${truncate}.tmp`, truncate);
      o.out(`copied chaser.chk over truncate.chk: the node cuts the log back to ${manifest.chaserPosition} when it starts`);
    }
    const nodeId = await writeRestoredNodeId(dbDir, manifest.nodeId);
    await syncDirectory(dbDir);
    for (const rel of new Set((await listTree(indexDir)).map((r) => path.dirname(r)))) await syncDirectory(path.join(indexDir, rel));
    o.out(`restore complete: ${manifest.files.length} files (${formatBytes(restoredBytes)}); the restored node is ${nodeId} (restored from ${manifest.nodeId}); take a full backup of it before any differential one`);
    return {
      kind, manifest, restoredFiles: manifest.files.length, restoredBytes,
      endPosition: kind === 'simple' ? Math.min(manifest.chaserPosition, endPosition) : endPosition,
      nodeId, elapsedMs: performance.now() - startedMs,
    };
  } finally {
    lock.release();
  }
}

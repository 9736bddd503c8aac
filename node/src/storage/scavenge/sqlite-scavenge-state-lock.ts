/**
 * Ownership of the scavenge state database file across processes.
 *
 * node-sqlite3-wasm locks a database by creating the directory `<db>.lock` and removing it on
 * unlock. The scavenge state holds that lock for the whole connection (`locking_mode=EXCLUSIVE`),
 * so a process killed while the state is open leaves the directory behind, and every later open
 * would fail with SQLITE_BUSY. To tell a stale lock from a live one, the owner writes its pid into
 * `<db>.lock/owner` once it holds the lock, and removes that file before closing (the library
 * removes the directory with rmdir, which needs it empty).
 *
 * On open: a lock directory whose owner is this process (a restarted container often reuses the
 * pid) or a process that no longer exists is stale and removed; one owned by a live process is an
 * error. A lock directory without an owner file (killed between taking the lock and writing the
 * owner, a window of microseconds) is also treated as stale. Within one process, a path can only
 * be open once.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { EventDbError, assert, isErrno } from '../../errors.js';

const openPaths = new Set<string>();

function lockPathOf(path: string): string {
  return `${path}.lock`;
}

function ownerPathOf(path: string): string {
  return `${lockPathOf(path)}/owner`;
}

/** Checks that nobody holds `path` and removes a stale lock; call before opening the database. */
export function claimScavengeStateLock(path: string, log: Logger): void {
  if (openPaths.has(path)) {
    const message = `scavenge state database ${path} is already open`;
    throw new EventDbError('EDB_SCAVENGE_RUNNING', message, { httpStatus: 409, details: { path } });
  }
  const lockPath = lockPathOf(path);
  if (!existsSync(lockPath)) return;
  const ownerPid = claimScavengeStateLockReadOwner(path);
  if (ownerPid !== undefined && ownerPid !== process.pid && isProcessAlive(ownerPid)) {
    const message = `scavenge state database ${path} is in use by process ${ownerPid}`;
    throw new EventDbError('EDB_SCAVENGE_RUNNING', message, {
      httpStatus: 409,
      details: { path, lockPath, ownerPid },
    });
  }
  log.warn({ path: lockPath, ownerPid }, 'removing scavenge state lock left by a dead process');
  rmSync(lockPath, { recursive: true, force: true });
}

function claimScavengeStateLockReadOwner(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(ownerPathOf(path), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch (err: unknown) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err: unknown) {
    // EPERM: the process exists but belongs to someone else.
    return isErrno(err, 'EPERM');
  }
}

/** Records this process as the owner; call once the connection holds the lock. */
export function recordScavengeStateLockOwner(path: string): void {
  assert(existsSync(lockPathOf(path)), 'the scavenge state connection holds its lock');
  assert(!openPaths.has(path), 'the scavenge state path is not open twice');
  writeFileSync(ownerPathOf(path), `${process.pid}\n`);
  openPaths.add(path);
}

/** Removes the owner record; call just before closing the connection (which removes the lock). */
export function releaseScavengeStateLockOwner(path: string): void {
  rmSync(ownerPathOf(path), { force: true });
  openPaths.delete(path);
}

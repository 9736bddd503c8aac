/**
 * An exclusive lock on a database directory, held for the life of the process, so that two
 * nodes (or a node and a tool that writes) never open one log at once.
 *
 * The lock is an OS `flock` on `<dir>/eventdb.lock`. Node has no flock binding and native
 * addons are ruled out, so the file is opened here and its descriptor handed, as fd 3, to the
 * `flock` command of util-linux (in every Debian-based image), which locks it and exits. A flock
 * belongs to the open file description, not to the process that asked for it, so the lock stays
 * with the descriptor this process keeps open. The kernel drops it when the last descriptor
 * closes: at release, at exit, and at SIGKILL. So a lock left by a killed process never blocks a
 * restart, and pid reuse (PID 1 in every container) cannot fool it, which a pid file checked for
 * liveness could not promise. A second process, in another container too when both mount the
 * same volume on one machine, is refused at once.
 *
 * After taking the lock the holder writes its pid, host name and start time into the file, so
 * that the refusal names them.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventDbError } from '../errors.js';

export const LOCK_FILE_NAME = 'eventdb.lock';

/** flock's exit status when the lock is held elsewhere (--conflict-exit-code). */
const CONFLICT_EXIT_CODE = 75;

export interface DirectoryLock {
  /** Absolute path of the locked directory. */
  readonly directory: string;
  /** Releases the lock (closes the descriptor). Idempotent. */
  release(): void;
}

/** What a refused lock says about its holder, as far as the lock file tells. */
export interface LockHolder {
  readonly pid?: number;
  readonly host?: string;
  readonly since?: string;
}

export function directoryLockedError(directory: string, purpose: string, holder: LockHolder): EventDbError {
  const who = [
    holder.pid === undefined ? undefined : `pid ${holder.pid}`,
    holder.host === undefined ? undefined : `on host ${holder.host}`,
    holder.since === undefined ? undefined : `since ${holder.since}`,
  ].filter((part) => part !== undefined).join(' ');
  return new EventDbError(
    'EDB_DIRECTORY_LOCKED',
    `the ${purpose} directory ${directory} is in use by another process${who === '' ? '' : ` (${who})`}; ` +
      'only one node or tool may use a database directory at a time',
    { details: { directory, ...holder } },
  );
}

/** Parses the holder line `pid=<n> host=<name> since=<iso>`; unknown or missing parts are left out. */
export function parseLockHolder(text: string): LockHolder {
  const fields = new Map<string, string>();
  for (const part of text.trim().split(/\s+/)) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const pid = Number(fields.get('pid'));
  return {
    ...(Number.isSafeInteger(pid) && pid > 0 ? { pid } : {}),
    ...(fields.has('host') ? { host: fields.get('host') } : {}),
    ...(fields.has('since') ? { since: fields.get('since') } : {}),
  };
}

export function formatLockHolder(pid: number, host: string, since: Date): string {
  return `pid=${pid} host=${host.replace(/\s+/g, '_')} since=${since.toISOString()}\n`;
}

/**
 * Takes the lock on `directory` (which must exist) or throws EDB_DIRECTORY_LOCKED naming the
 * directory and the holder. `purpose` names the directory in messages ("data", "index").
 */
export function lockDirectory(directory: string, purpose: string): DirectoryLock {
  const absolute = path.resolve(directory);
  const lockPath = path.join(absolute, LOCK_FILE_NAME);
  const fd = fs.openSync(lockPath, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
  let owned = false;
  try {
    const result = spawnSync(
      'flock',
      ['--nonblock', '--exclusive', '--conflict-exit-code', String(CONFLICT_EXIT_CODE), '3'],
      { stdio: ['ignore', 'ignore', 'pipe', fd], timeout: 30_000 },
    );
    if (result.error !== undefined) {
      throw new EventDbError(
        'EDB_DIRECTORY_LOCK_FAILED',
        `cannot lock the ${purpose} directory ${absolute}: the flock command (util-linux) could not be run ` +
          `(${result.error.message})`,
        { cause: result.error },
      );
    }
    if (result.status === CONFLICT_EXIT_CODE) {
      throw directoryLockedError(absolute, purpose, parseLockHolder(readHolder(fd)));
    }
    if (result.status !== 0) {
      throw new EventDbError(
        'EDB_DIRECTORY_LOCK_FAILED',
        `cannot lock the ${purpose} directory ${absolute}: flock exited with ${String(result.status ?? result.signal)}` +
          `: ${result.stderr.toString().trim()}`,
      );
    }
    const holder = Buffer.from(formatLockHolder(process.pid, os.hostname(), new Date()));
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, holder, 0, holder.length, 0);
    owned = true;
  } finally {
    if (!owned) fs.closeSync(fd);
  }
  let released = false;
  return {
    directory: absolute,
    release(): void {
      if (released) return;
      released = true;
      fs.closeSync(fd);
    },
  };
}

function readHolder(fd: number): string {
  const buf = Buffer.alloc(512);
  const n = fs.readSync(fd, buf, 0, buf.length, 0);
  return buf.subarray(0, n).toString('utf8');
}

/**
 * Locks the data directory and, when it is another directory, the index directory. Both are
 * created if missing. Released together; on a refusal nothing stays locked.
 */
export function lockDatabaseDirectories(dbPath: string, indexPath: string): DirectoryLock {
  fs.mkdirSync(dbPath, { recursive: true });
  fs.mkdirSync(indexPath, { recursive: true });
  const data = lockDirectory(dbPath, 'data');
  if (fs.realpathSync(dbPath) === fs.realpathSync(indexPath)) return data;
  let index: DirectoryLock;
  try {
    index = lockDirectory(indexPath, 'index');
  } catch (err: unknown) {
    data.release();
    throw err;
  }
  return {
    directory: data.directory,
    release(): void {
      index.release();
      data.release();
    },
  };
}

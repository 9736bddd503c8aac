/**
 * The file I/O of backup and restore: listing directory trees, copying a file and hashing the
 * copy, hashing, durable small writes, reading a checkpoint's value.
 *
 * A copy goes to `<target>.copying`, is hashed and fsynced and then renamed into place (and the directory
 * fsynced by the caller once per step), so an interrupted backup never leaves a file under its
 * final name that holds only part of the source: the differential procedure skips names already
 * in the backup and would otherwise keep a torn copy for good.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../errors.js';
import { writeFileAtomic } from '../platform/block-file.js';
import { decodeCheckpointFile } from '../storage/format/checkpoint-file.js';

export const COPY_SUFFIX = '.copying';
const BLOCK_BYTES = 4 * 1024 * 1024;

export interface CopiedFile {
  readonly sizeBytes: number;
  readonly sha256: string;
  readonly mtimeMs: number;
}

/** Called at most about once a second during a long copy. */
export type CopyProgress = (copiedBytes: number, totalBytes: number, elapsedMs: number) => void;

/** Every file under `root`, relative, with `/` separators; empty when `root` does not exist. */
export async function listTree(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err: unknown) {
      if (isErrno(err, 'ENOENT')) return;
      throw err;
    }
    for (const entry of entries) {
      const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), rel);
      else if (entry.isFile()) out.push(rel);
    }
  };
  await walk(root, '');
  return out.sort();
}

/**
 * Copies `from` to `to` (parent directories created) and hashes the copy. The copy is the
 * kernel's (`copyFile`: copy_file_range, no bytes through this process), up to the end of the
 * file as it is then (a file growing meanwhile, the active chunk, is copied to some length the
 * checkpoint copied before it covers); the hash is of what was written, read back from the page
 * cache. ENOENT of the source is rethrown as is (the caller decides what a vanished file means).
 */
export async function copyFileHashed(from: string, to: string, onProgress?: CopyProgress): Promise<CopiedFile> {
  const temp = `${to}${COPY_SUFFIX}`;
  await fsp.mkdir(path.dirname(to), { recursive: true });
  try {
    await fsp.copyFile(from, temp);
    const startedMs = performance.now();
    const target = await fsp.open(temp, 'r+');
    let hashed: CopiedFile;
    try {
      hashed = await hashHandle(target, onProgress, startedMs);
      await target.sync();
    } finally {
      await target.close();
    }
    await fsp.rename(temp, to);
    const { mtimeMs } = await fsp.stat(to);
    return { ...hashed, mtimeMs };
  } catch (err: unknown) {
    await fsp.rm(temp, { force: true });
    throw err;
  }
}

async function hashHandle(handle: fsp.FileHandle, onProgress: CopyProgress | undefined, startedMs: number): Promise<CopiedFile> {
  const hash = createHash('sha256');
  const totalBytes = (await handle.stat()).size;
  const buffer = Buffer.allocUnsafe(BLOCK_BYTES);
  let size = 0;
  let lastReportMs = startedMs;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, BLOCK_BYTES, size);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    size += bytesRead;
    const now = performance.now();
    if (onProgress !== undefined && now - lastReportMs >= 1000) {
      lastReportMs = now;
      onProgress(size, totalBytes, now - startedMs);
    }
  }
  const { mtimeMs } = await handle.stat();
  return { sizeBytes: size, sha256: hash.digest('hex'), mtimeMs };
}

export async function hashFile(file: string): Promise<CopiedFile> {
  const handle = await fsp.open(file, 'r');
  try {
    return await hashHandle(handle, undefined, performance.now());
  } finally {
    await handle.close();
  }
}

/** Writes `content` to `file` durably: its folder made, then `<file>.tmp`, fsync, rename, directory fsync. */
export async function writeFileDurably(file: string, content: string | Buffer): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, typeof content === 'string' ? Buffer.from(content) : content, `${file}.tmp`);
}

/** Reads a file, or undefined when it does not exist. */
export async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await fsp.readFile(file);
  } catch (err: unknown) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
}

/** The value of a checkpoint file (`*.chk` of the data directory); undefined when absent or unreadable. */
export async function readCheckpoint(file: string): Promise<number | undefined> {
  const bytes = await readIfExists(file);
  return bytes === undefined ? undefined : decodeCheckpointFile(bytes)?.value;
}

/**
 * Durable file creation for the index: every file is written under a temporary name, fsynced,
 * renamed into place and the directory fsynced, so a crash leaves either the old state or the
 * complete new file. An fsync failure is fatal (never retried: the page cache may have dropped
 * the dirty pages); so is a failed write, because the index would silently stop persisting.
 */

import { randomUUID } from 'node:crypto';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FatalError, assert, isErrno } from '../../errors.js';

export const TEMP_FILE_SUFFIX = '.tmp';

export async function fsyncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } catch (err: unknown) {
    throw new FatalError('EDB_FSYNC_FAILED', 'cannot fsync index directory', {
      cause: err,
      details: { directory },
    });
  } finally {
    await handle.close();
  }
}

/** Removes a file; a file that is already gone is not an error. */
export async function removeFile(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err: unknown) {
    if (!isErrno(err, 'ENOENT')) throw err;
  }
}

/** A file being written: bytes go to `<path>.<uuid>.tmp` until commit() moves it into place. */
export class DurableFileWriter {
  private readonly handle: FileHandle;
  private done = false;
  sizeBytes = 0;

  private constructor(
    readonly path: string,
    readonly tempPath: string,
    handle: FileHandle,
  ) {
    this.handle = handle;
  }

  static async create(path: string): Promise<DurableFileWriter> {
    const tempPath = join(dirname(path), `${basename(path)}.${randomUUID()}${TEMP_FILE_SUFFIX}`);
    const handle = await open(tempPath, 'wx');
    return new DurableFileWriter(path, tempPath, handle);
  }

  /** Appends all of `bytes`, looping over partial writes. */
  async write(bytes: Uint8Array): Promise<void> {
    assert(!this.done, 'durable file written after commit or abort');
    let written = 0;
    try {
      while (written < bytes.length) {
        const length = bytes.length - written;
        const result = await this.handle.write(bytes, written, length, this.sizeBytes);
        written += result.bytesWritten;
        this.sizeBytes += result.bytesWritten;
      }
    } catch (err: unknown) {
      throw new FatalError('EDB_WRITE_FAILED', 'cannot write index file', {
        cause: err,
        details: { path: this.tempPath },
      });
    }
  }

  /** fsync, rename into place, fsync the directory. */
  async commit(): Promise<void> {
    assert(!this.done, 'durable file committed twice');
    this.done = true;
    try {
      await this.handle.sync();
    } catch (err: unknown) {
      throw new FatalError('EDB_FSYNC_FAILED', 'cannot fsync index file', {
        cause: err,
        details: { path: this.tempPath },
      });
    } finally {
      await this.handle.close();
    }
    await rename(this.tempPath, this.path);
    await fsyncDirectory(dirname(this.path));
  }

  /** Closes and deletes the temporary file; used when a write fails half-way. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.handle.close().catch(() => undefined);
    await removeFile(this.tempPath);
  }
}

/** Writes `bytes` to `path` durably (temp file, fsync, rename, fsync directory). */
export async function writeFileDurably(path: string, bytes: Uint8Array): Promise<void> {
  const writer = await DurableFileWriter.create(path);
  try {
    await writer.write(bytes);
    await writer.commit();
  } catch (err: unknown) {
    await writer.abort();
    throw err;
  }
}

/**
 * BlockFile: the one port through which storage touches file bytes. Two implementations:
 * NodeBlockFile (a real file descriptor) and MemoryBlockFile (for --mem-db and unit tests).
 *
 * Reads are synchronous positioned reads: the hot read path is served from the page cache and a
 * pread costs microseconds, far less than a hop through libuv's thread pool. Writes and syncs are
 * asynchronous so the event loop keeps serving while the disk flushes (group commit relies on it).
 * A failed sync is never retried: callers turn it into a FatalError.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

export interface IoCounters {
  readBytes: number;
  writtenBytes: number;
  readOps: number;
  writeOps: number;
}

export const ioCounters: IoCounters = { readBytes: 0, writtenBytes: 0, readOps: 0, writeOps: 0 };

export interface BlockFile {
  readonly path: string;
  sizeBytes(): number;
  /** Reads up to `length` bytes at `position`; returns the bytes actually read. */
  readSync(position: number, length: number): Buffer;
  /** Reads into `target` (from its start) up to `length` bytes; returns the count read. */
  readIntoSync(target: Buffer, position: number, length: number): number;
  write(buf: Uint8Array, position: number): Promise<void>;
  /**
   * Positioned write into the page cache without a thread-pool hop (small writes on the commit
   * path, where the hop costs more than the copy). Not durable until `sync`.
   */
  writeSync(buf: Uint8Array, position: number): void;
  /** fdatasync. Rejects on failure; the caller must treat that as fatal. */
  sync(): Promise<void>;
  /**
   * The OS file descriptor, for the log writer thread's positioned writes; undefined for files
   * that live in memory.
   */
  readonly fd: number | undefined;
  /** Accounts for a write another thread made through `fd` (size and counters). */
  noteWritten(position: number, length: number): void;
  truncate(sizeBytes: number): Promise<void>;
  close(): Promise<void>;
}

export class NodeBlockFile implements BlockFile {
  readonly path: string;
  readonly fd: number;
  private size: number;

  private constructor(filePath: string, fd: number, size: number) {
    this.path = filePath;
    this.fd = fd;
    this.size = size;
  }

  static openExisting(filePath: string, writable: boolean): NodeBlockFile {
    const fd = fs.openSync(filePath, writable ? 'r+' : 'r');
    return new NodeBlockFile(filePath, fd, fs.fstatSync(fd).size);
  }

  /** Creates the file (failing if it exists). */
  static create(filePath: string): NodeBlockFile {
    const fd = fs.openSync(filePath, 'wx+');
    return new NodeBlockFile(filePath, fd, 0);
  }

  sizeBytes(): number {
    return this.size;
  }

  readSync(position: number, length: number): Buffer {
    const buf = Buffer.allocUnsafe(length);
    const done = this.readIntoSync(buf, position, length);
    return done === length ? buf : buf.subarray(0, done);
  }

  readIntoSync(target: Buffer, position: number, length: number): number {
    let done = 0;
    while (done < length) {
      const n = fs.readSync(this.fd, target, done, length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    ioCounters.readBytes += done;
    ioCounters.readOps += 1;
    return done;
  }

  async write(buf: Uint8Array, position: number): Promise<void> {
    await writeAll(this.fd, buf, position, this.path);
    this.size = Math.max(this.size, position + buf.length);
    ioCounters.writtenBytes += buf.length;
    ioCounters.writeOps += 1;
  }

  writeSync(buf: Uint8Array, position: number): void {
    writeAllSync(this.fd, buf, position, this.path);
    this.size = Math.max(this.size, position + buf.length);
    ioCounters.writtenBytes += buf.length;
    ioCounters.writeOps += 1;
  }

  noteWritten(position: number, length: number): void {
    this.size = Math.max(this.size, position + length);
    ioCounters.writtenBytes += length;
    ioCounters.writeOps += 1;
  }

  sync(): Promise<void> {
    return new Promise((resolve, reject) => fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
  }

  async truncate(sizeBytes: number): Promise<void> {
    await new Promise<void>((resolve, reject) => fs.ftruncate(this.fd, sizeBytes, (err) => (err ? reject(err) : resolve())));
    this.size = sizeBytes;
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => fs.close(this.fd, (err) => (err ? reject(err) : resolve())));
  }
}

/** Positioned write of all of `buf`, looping over partial writes (`what` names the file in errors). */
export function writeAllSync(fd: number, buf: Uint8Array, position: number, what: string): void {
  let done = 0;
  while (done < buf.length) {
    const n = fs.writeSync(fd, buf, done, buf.length - done, position + done);
    if (n === 0) throw new Error(`write to ${what} made no progress`);
    done += n;
  }
}

/** `writeAllSync` in libuv's thread pool. */
export async function writeAll(fd: number, buf: Uint8Array, position: number, what: string): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await writeAt(fd, buf, done, position + done);
    if (bytesWritten === 0) throw new Error(`write to ${what} made no progress`);
    done += bytesWritten;
  }
}

function writeAt(fd: number, buf: Uint8Array, offset: number, position: number): Promise<{ bytesWritten: number }> {
  return new Promise((resolve, reject) =>
    fs.write(fd, buf, offset, buf.length - offset, position, (err, bytesWritten) => (err ? reject(err) : resolve({ bytesWritten }))),
  );
}

export class MemoryBlockFile implements BlockFile {
  readonly path: string;
  readonly fd = undefined;
  private buf: Buffer;
  private size = 0;

  constructor(filePath: string, initial?: Buffer) {
    this.path = filePath;
    this.buf = initial ? Buffer.from(initial) : Buffer.alloc(64 * 1024);
    this.size = initial ? initial.length : 0;
  }

  sizeBytes(): number {
    return this.size;
  }

  readSync(position: number, length: number): Buffer {
    const end = Math.min(this.size, position + length);
    return Buffer.from(this.buf.subarray(position, Math.max(position, end)));
  }

  readIntoSync(target: Buffer, position: number, length: number): number {
    const end = Math.min(this.size, position + length);
    return end > position ? this.buf.copy(target, 0, position, end) : 0;
  }

  async write(data: Uint8Array, position: number): Promise<void> {
    this.writeSync(data, position);
  }

  writeSync(data: Uint8Array, position: number): void {
    const end = position + data.length;
    if (end > this.buf.length) {
      let cap = this.buf.length;
      while (cap < end) cap *= 2;
      const grown = Buffer.alloc(cap);
      this.buf.copy(grown, 0, 0, this.size);
      this.buf = grown;
    }
    this.buf.set(data, position);
    this.size = Math.max(this.size, end);
  }

  async sync(): Promise<void> {}

  noteWritten(): void {
    throw new Error(`${this.path} lives in memory: no other thread writes it`);
  }

  async truncate(sizeBytes: number): Promise<void> {
    if (sizeBytes < this.size) this.buf.fill(0, sizeBytes, this.size);
    this.size = sizeBytes;
  }

  async close(): Promise<void> {}
}

/** fsync of a directory, so a create, rename or unlink inside it is durable. */
export async function syncDirectory(dirPath: string): Promise<void> {
  const handle = await fsp.open(dirPath, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes a whole file atomically: temp file (`tmp`, by default a fresh name), fsync, rename, fsync directory. */
export async function writeFileAtomic(
  filePath: string,
  data: Uint8Array,
  tmp = `${filePath}.${process.pid}.${Date.now()}.tmp`,
): Promise<void> {
  const handle = await fsp.open(tmp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fsp.rename(tmp, filePath);
  await syncDirectory(path.dirname(filePath));
}

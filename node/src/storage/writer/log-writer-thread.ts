/**
 * The log writer thread: the second core's share of the append path.
 *
 * The main thread decides and encodes each group-commit batch into a buffer it then hands over
 * (an ArrayBuffer transfer, no copy; V8 copies into shared memory about ten times slower). This
 * thread seals the frames (a crc32 per record), advances the active chunk's running checksum (a
 * second pass over the bytes), copies them into the page cache with a positioned write,
 * fdatasyncs them, then writes and fdatasyncs the batch's writer.chk slot: the raw disk's own
 * loop, plus the checksums and the checkpoint. Those passes over every byte
 * were about a quarter of the main thread's time with 1 KiB events, and the main thread was the
 * bottleneck of batched appends; each fdatasync handed to libuv's pool also cost the main thread
 * a thread wake-up (100-300 µs on this VM). writer.chk is written here, after the data is
 * durable, because with small batches every hop between threads lengthens the round trip
 * (64 single-event writers: +25-35% with the checkpoint here). A failed write or fdatasync
 * stops the node as before.
 *
 * Jobs are handled strictly in order (one thread, one queue), so the running checksum sees the
 * bytes in log order. Only for chunk files with a descriptor (not --mem-db), and only when the
 * compiled worker module exists (tests that run the TypeScript sources directly write inline).
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';

export interface LogWriteJob {
  readonly id: number;
  /** The batch's buffer, transferred to the thread and back. */
  readonly memory: ArrayBuffer;
  readonly offset: number;
  readonly length: number;
  readonly fd: number;
  /** File position of the first byte. */
  readonly position: number;
  /** Identifies the chunk whose running checksum the bytes extend. */
  readonly crcToken: number;
  /**
   * On the first write of a token: the checksum of the chunk's data so far, or null when the
   * chunk keeps no running checksum (it is computed from the file when the chunk completes).
   */
  readonly crcStart?: number | null;
  /** A checkpoint slot to write and fdatasync once the data is durable (writer.chk). */
  readonly checkpoint?: { readonly fd: number; readonly position: number; readonly bytes: Uint8Array };
}

export type LogWriteReply =
  | { readonly id: number; readonly crc: number | null; readonly memory: ArrayBuffer }
  | { readonly id: number; readonly error: string; readonly op: LogWriteOp; readonly code?: string };

/** What failed: the data's write or fdatasync, or the checkpoint's write + fdatasync. */
export type LogWriteOp = 'write' | 'fdatasync' | 'checkpoint';

export type LogWriteRequest = Omit<LogWriteJob, 'id' | 'memory' | 'offset' | 'length'>;

const WORKER_FILE = fileURLToPath(new URL('./log-writer-worker.js', import.meta.url));

/** Batch buffers kept for reuse (the writer has at most a few batches in flight). */
const SPARE_BUFFERS_MAX = 4;

export class LogWriterThread {
  private readonly pending = new Map<number, { resolve: (crc: number | null) => void; reject: (e: Error) => void }>();
  private readonly spare: Buffer[] = [];
  private nextId = 0;
  private dead: Error | undefined;
  private closing = false;

  private constructor(private readonly worker: Worker, log: Logger) {
    worker.on('message', (reply: LogWriteReply) => this.onReply(reply));
    worker.on('error', (err) => {
      log.error({ err }, 'log writer thread failed');
      this.die(err);
    });
    worker.on('exit', (code) => {
      if (!this.closing) this.die(new Error(`log writer thread exited (code ${code})`));
    });
    worker.unref();
  }

  /** Starts the thread, or returns undefined when the compiled worker module is not there. */
  static start(log: Logger): LogWriterThread | undefined {
    if (!fs.existsSync(WORKER_FILE)) return undefined;
    return new LogWriterThread(new Worker(WORKER_FILE), log);
  }

  /**
   * A buffer of its own (not Node's shared pool) of at least `sizeBytes`. `write` hands it to the
   * thread, which hands it back for reuse once written.
   */
  takeBuffer(sizeBytes: number): Buffer {
    for (let i = 0; i < this.spare.length; i++) {
      if (this.spare[i]!.length >= sizeBytes) return this.spare.splice(i, 1)[0]!;
    }
    return Buffer.from(new ArrayBuffer(sizeBytes));
  }

  private giveBack(buf: Buffer): void {
    if (this.spare.length < SPARE_BUFFERS_MAX) this.spare.push(buf);
    else if (this.spare.length > 0) {
      // Keep the larger buffers: a batch that needed more will likely come again.
      const smallest = this.spare.reduce((m, b, i) => (b.length < this.spare[m]!.length ? i : m), 0);
      if (this.spare[smallest]!.length < buf.length) this.spare[smallest] = buf;
    }
  }

  /**
   * Seals, writes and fdatasyncs `bytes`, a view of a buffer from takeBuffer. The buffer moves to
   * the thread: it is empty (detached) here from now on. Resolves, once the bytes are durable,
   * with the chunk's running checksum after them. A rejection carries `op`: 'write' or
   * 'fdatasync' or 'checkpoint'.
   */
  write(bytes: Buffer, request: LogWriteRequest): Promise<number | null> {
    if (this.dead) return Promise.reject(this.dead);
    const memory = bytes.buffer;
    if (!(memory instanceof ArrayBuffer) || memory.byteLength < 8192) {
      // Node's small-buffer pool is shared by unrelated buffers and must never be transferred.
      return Promise.reject(new Error('log writer thread: the batch is not in a buffer of its own (use takeBuffer)'));
    }
    const id = this.nextId++;
    const job: LogWriteJob = { ...request, id, memory, offset: bytes.byteOffset, length: bytes.length };
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage(job, [memory]);
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    this.die(new Error('log writer thread closed'));
    await this.worker.terminate();
  }

  private onReply(reply: LogWriteReply): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker.unref();
    if ('error' in reply) {
      p.reject(Object.assign(new Error(reply.error), { op: reply.op }, reply.code !== undefined ? { code: reply.code } : {}));
    } else {
      this.giveBack(Buffer.from(reply.memory));
      p.resolve(reply.crc);
    }
  }

  private die(err: Error): void {
    this.dead ??= err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}

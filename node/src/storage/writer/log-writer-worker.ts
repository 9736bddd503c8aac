/**
 * Entry of the log writer thread (see log-writer-thread.ts). For each batch the main thread
 * encoded and handed over, it seals the frames (fills every record's crc32), advances the active
 * chunk's running checksum, writes the bytes at their position through the chunk's file
 * descriptor and fdatasyncs them, then hands the buffer back. A failure is reported, never
 * retried; the main thread stops the node.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import { sealFrames } from '../format/record.js';
import type { LogWriteJob, LogWriteReply } from './log-writer-thread.js';

const port = parentPort;
if (!port) throw new Error('log-writer-worker runs only as a worker thread');

/** Running checksum of the chunk last written (one active chunk at a time). */
let crcToken = -1;
let runningCrc: number | null = null;

/** Seals, checksums and writes one batch (into the page cache); returns the checksum after it. */
function write(job: LogWriteJob): number | null {
  const buf = Buffer.from(job.memory, job.offset, job.length);
  sealFrames(buf, 0, job.length);
  if (job.crcStart !== undefined) {
    crcToken = job.crcToken;
    runningCrc = job.crcStart;
  } else if (job.crcToken !== crcToken) {
    throw new Error(`first write of chunk token ${job.crcToken} carries no starting checksum`);
  }
  if (runningCrc !== null) runningCrc = crc32(buf, runningCrc);
  let done = 0;
  while (done < job.length) {
    const n = fs.writeSync(job.fd, buf, done, job.length - done, job.position + done);
    if (n === 0) throw new Error('write made no progress');
    done += n;
  }
  return runningCrc;
}

function fail(job: LogWriteJob, err: unknown, op: 'write' | 'fdatasync'): void {
  const e = err as NodeJS.ErrnoException;
  // The chunk's checksum state is unknown after a failure: the next write must restart it.
  crcToken = -1;
  port!.postMessage({ id: job.id, error: e.message ?? String(err), op, ...(e.code !== undefined ? { code: e.code } : {}) } satisfies LogWriteReply);
}

port.on('message', (job: LogWriteJob) => {
  let crc: number | null;
  try {
    crc = write(job);
  } catch (err: unknown) {
    fail(job, err, 'write');
    return;
  }
  // The fdatasync runs in libuv's pool while this thread seals and writes the next batch: the
  // flushes of consecutive batches overlap, as the disk allows. Each one is issued after its own
  // batch's write, so it covers that batch.
  fs.fdatasync(job.fd, (err) => {
    if (err) fail(job, err, 'fdatasync');
    else port!.postMessage({ id: job.id, crc, memory: job.memory } satisfies LogWriteReply, [job.memory]);
  });
});

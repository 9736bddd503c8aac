/**
 * Entry of the log writer thread (see log-writer-thread.ts). For each batch the main thread
 * encoded and handed over, in order: seal the frames (fill every record's crc32), advance the
 * active chunk's running checksum, write the bytes at their position through the chunk's file
 * descriptor, fdatasync, then write and fdatasync the batch's writer.chk slot, and hand the
 * buffer back. A failure is reported, never retried; the main thread stops the node.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import { sealFrames } from '../format/record.js';
import { writeAllSync } from '../../platform/block-file.js';
import type { LogWriteJob, LogWriteOp, LogWriteReply } from './log-writer-thread.js';

const port = parentPort;
if (!port) throw new Error('log-writer-worker runs only as a worker thread');

/** Running checksum of the chunk last written (one active chunk at a time). */
let crcToken = -1;
let runningCrc: number | null = null;

/**
 * Seals, checksums, writes and fdatasyncs one batch, then writes and fdatasyncs its checkpoint
 * slot; returns the chunk's checksum after the batch.
 */
function handle(job: LogWriteJob): number | null {
  const buf = Buffer.from(job.memory, job.offset, job.length);
  sealFrames(buf, 0, job.length);
  if (job.crcStart !== undefined) {
    crcToken = job.crcToken;
    runningCrc = job.crcStart;
  } else if (job.crcToken !== crcToken) {
    throw new Error(`first write of chunk token ${job.crcToken} carries no starting checksum`);
  }
  if (runningCrc !== null) runningCrc = crc32(buf, runningCrc);
  writeAllSync(job.fd, buf, job.position, 'the active chunk');
  try {
    fs.fdatasyncSync(job.fd);
  } catch (err: unknown) {
    throw Object.assign(err as Error, { op: 'fdatasync' });
  }
  if (job.checkpoint) {
    try {
      writeAllSync(job.checkpoint.fd, job.checkpoint.bytes, job.checkpoint.position, 'writer.chk');
      fs.fdatasyncSync(job.checkpoint.fd);
    } catch (err: unknown) {
      throw Object.assign(err as Error, { op: 'checkpoint' });
    }
  }
  return runningCrc;
}

port.on('message', (job: LogWriteJob) => {
  let reply: LogWriteReply;
  try {
    reply = { id: job.id, crc: handle(job), memory: job.memory };
  } catch (err: unknown) {
    const e = err as NodeJS.ErrnoException & { op?: LogWriteOp };
    // The chunk's checksum state is unknown after a failure: the next write must restart it.
    crcToken = -1;
    reply = { id: job.id, error: e.message ?? String(err), op: e.op ?? 'write', ...(e.code !== undefined ? { code: e.code } : {}) };
  }
  port.postMessage(reply, 'memory' in reply ? [reply.memory] : []);
});

/**
 * Walks every record frame of a completed chunk in large blocks, handing the visitor the raw
 * frame (to copy verbatim into a new chunk), its log position and its checked payload. Yields to
 * the event loop between blocks so the node keeps serving appends and reads, and so a stop
 * request is noticed.
 */
import type { Chunk } from '../chunk/chunk.js';
import { RECORD_FRAME_OVERHEAD_BYTES } from '../limits.js';
import { crc32 } from 'node:zlib';
import { FatalError } from '../../errors.js';

const BLOCK_BYTES = 1024 * 1024;

export type FrameVisitor = (frame: Buffer, logPosition: number, payload: Buffer) => void | Promise<void>;

/**
 * The frame and payload handed to `visit` are views into a block buffer that is reused for the
 * next block: a visitor must copy what it keeps (ScavengedChunkWriter does).
 */
export async function forEachFrame(chunk: Chunk, visit: FrameVisitor, between: () => Promise<void>): Promise<void> {
  const limit = chunk.physicalDataSizeBytes;
  let physical = 0;
  let buffer = Buffer.allocUnsafe(BLOCK_BYTES);
  while (physical < limit) {
    const head = chunk.readData(physical, 4).readUInt32LE(0);
    const want = Math.min(Math.max(BLOCK_BYTES, head + RECORD_FRAME_OVERHEAD_BYTES), limit - physical);
    if (want > buffer.length) buffer = Buffer.allocUnsafe(want);
    const block = chunk.readDataInto(buffer, physical, want);
    let offset = 0;
    while (offset + RECORD_FRAME_OVERHEAD_BYTES <= block.length) {
      const len = block.readUInt32LE(offset);
      const size = len + RECORD_FRAME_OVERHEAD_BYTES;
      if (len === 0) throw corrupt(chunk, physical + offset, 'zero-length frame');
      if (offset + size > block.length) break;
      const payload = block.subarray(offset + 8, offset + 8 + len);
      if (crc32(payload) !== block.readUInt32LE(offset + 4)) throw corrupt(chunk, physical + offset, 'checksum mismatch');
      const logPosition = chunk.startPosition + chunk.logicalOffsetOfPhysical(physical + offset);
      await visit(block.subarray(offset, offset + size), logPosition, payload);
      offset += size;
    }
    if (offset === 0) throw corrupt(chunk, physical, 'unreadable frame');
    physical += offset;
    await between();
  }
}

function corrupt(chunk: Chunk, physicalOffset: number, reason: string): FatalError {
  return new FatalError('EDB_CHUNK_CORRUPT', `chunk file ${chunk.file.path} is corrupt at data offset ${physicalOffset}: ${reason}`);
}

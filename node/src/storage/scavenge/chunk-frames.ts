/**
 * Walks every record frame of a completed chunk in large blocks, handing the visitor each frame
 * as (block, offset, size) plus its log position: no per-frame allocation. Yields to the event
 * loop between blocks so the node keeps serving appends and reads, and so a stop request is
 * noticed.
 *
 * Integrity: every frame's lengths (leading and trailing) and, for scavenged chunks, its position
 * map entry are checked as it is visited; the checksum is verified for the whole chunk at once
 * (the crc32 of the data as read, continued over the position map, against the footer), which
 * costs one fast crc pass instead of one call per frame. A visitor therefore sees bytes that are
 * verified only when the walk returns: callers keep what they derive from a chunk provisional
 * (buffered state changes, a temp file) until then, so a corrupt chunk changes nothing.
 */
import type { Chunk } from '../chunk/chunk.js';
import { RECORD_FRAME_OVERHEAD_BYTES, RECORD_SIZE_BYTES_MAX } from '../limits.js';
import { crc32 } from 'node:zlib';
import { FatalError } from '../../errors.js';
import { giveBackScratch, takeScratch } from '../chunk/scratch-buffers.js';
import { crc32Combine } from './crc32-combine.js';

const BLOCK_BYTES = 1024 * 1024;

/**
 * One frame: `block[frameOffset, frameOffset + frameSizeBytes)`; its payload starts at
 * frameOffset + 8. `logicalOffset` is its log position less the chunk's start position (a small
 * integer, where a log position past 2 GiB would be a heap number for every frame).
 */
export type FrameVisitor = (block: Buffer, frameOffset: number, frameSizeBytes: number, logicalOffset: number) => void;

/**
 * After a block's frames were visited: `block[0, usedBytes)` holds exactly those frames. May
 * return the crc32 of `block[0, usedBytes)` when it computed it (in pieces, combined): the walk
 * then takes that instead of a crc pass of its own.
 */
export type BlockVisitor = (block: Buffer, usedBytes: number) => number | undefined | void;

/** Offset of the payload inside a frame. */
export const FRAME_PAYLOAD_OFFSET_BYTES = 8;

/**
 * The block handed to `visit` and `blockDone` is reused for the next block: a visitor must copy
 * what it keeps (GroupChunkWriter does). The framing (lengths, position map) is always
 * checked; the chunk's data checksum too unless `verifyChecksum` is false, for a reader that
 * verifies every frame it acts on by itself (accumulation: a chunk is verified in full when it
 * is opened and again by the execution walk before any copy of it is swapped in).
 */
export async function forEachFrame(
  chunk: Chunk, visit: FrameVisitor, between: () => Promise<void>, blockDone?: BlockVisitor, verifyChecksum = true,
): Promise<void> {
  const scratch = takeScratch(BLOCK_BYTES);
  let walked: { dataCrc32: number; frames: number };
  try {
    walked = await walkFrames(chunk, scratch, visit, between, blockDone, verifyChecksum);
  } finally {
    giveBackScratch(scratch);
  }
  const mapEntries = chunk.positionMapEntryCount;
  if (chunk.header.isScavenged && walked.frames !== mapEntries) {
    throw corrupt(chunk, chunk.physicalDataSizeBytes, `position map has ${mapEntries} entries for ${walked.frames} frames`);
  }
  if (verifyChecksum && !chunk.checksumMatchesData(walked.dataCrc32)) {
    throw new FatalError('EDB_CHUNK_CORRUPT', `chunk file ${chunk.file.path} is corrupt: data checksum does not match the footer`);
  }
}

async function walkFrames(
  chunk: Chunk, scratch: Buffer, visit: FrameVisitor, between: () => Promise<void>, blockDone: BlockVisitor | undefined, verifyChecksum: boolean,
): Promise<{ dataCrc32: number; frames: number }> {
  const limit = chunk.physicalDataSizeBytes;
  const mapEntries = chunk.positionMapEntryCount;
  const mapped = chunk.header.isScavenged;
  let buffer = scratch;
  let frames = 0;
  let physical = 0;
  let crc = 0;
  while (physical < limit) {
    const block = chunk.readDataInto(buffer, physical, Math.min(buffer.length, limit - physical));
    const n = block.length;
    let offset = 0;
    while (offset + RECORD_FRAME_OVERHEAD_BYTES <= n) {
      const len = u32At(block, offset);
      if (len === 0 || len > RECORD_SIZE_BYTES_MAX) throw corrupt(chunk, physical + offset, `bad frame length ${len}`);
      const size = len + RECORD_FRAME_OVERHEAD_BYTES;
      if (offset + size > n) break;
      if (u32At(block, offset + size - 4) !== len) throw corrupt(chunk, physical + offset, 'trailing length mismatch');
      let logical = physical + offset;
      if (mapped) {
        if (frames >= mapEntries || chunk.physicalOffsetOfMapEntry(frames) !== logical) throw corrupt(chunk, logical, 'frame not in the position map');
        logical = chunk.logicalOffsetOfMapEntry(frames);
      }
      frames++;
      visit(block, offset, size, logical);
      offset += size;
    }
    if (offset === 0) {
      // The first frame does not fit the block: read it whole into a bigger buffer.
      if (n < RECORD_FRAME_OVERHEAD_BYTES) throw corrupt(chunk, physical, 'truncated frame');
      const size = block.readUInt32LE(0) + RECORD_FRAME_OVERHEAD_BYTES;
      if (size <= buffer.length || physical + size > limit) throw corrupt(chunk, physical, 'frame runs past the data');
      buffer = Buffer.allocUnsafe(size);
      continue;
    }
    const blockCrc = blockDone?.(block, offset);
    if (typeof blockCrc === 'number') crc = crc32Combine(crc, blockCrc, offset);
    else if (verifyChecksum) crc = crc32(block.subarray(0, offset), crc);
    physical += offset;
    await between();
  }
  return { dataCrc32: crc, frames };
}

/** Little-endian u32 read without Buffer's per-call offset validation (frames are bounds-checked here). */
function u32At(b: Buffer, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x1000000;
}

/** Checks one frame's own crc32 (for the few frames a visitor decodes in full). */
export function frameChecksumOk(block: Buffer, frameOffset: number, frameSizeBytes: number): boolean {
  const payload = block.subarray(frameOffset + FRAME_PAYLOAD_OFFSET_BYTES, frameOffset + frameSizeBytes - 4);
  return crc32(payload) === block.readUInt32LE(frameOffset + 4);
}

export function corrupt(chunk: Chunk, physicalOffset: number, reason: string): FatalError {
  return new FatalError('EDB_CHUNK_CORRUPT', `chunk file ${chunk.file.path} is corrupt at data offset ${physicalOffset}: ${reason}`);
}

/**
 * Checkpoint file codec (pure). A checkpoint holds one int64 (a log position or an epoch
 * number). The file has two 512-byte slots written alternately; each slot is
 *   u32 magic | u32 sequence | i64 value | u32 crc32(first 16 bytes)
 * An update overwrites the older slot in place and fsyncs, so a torn write can only damage the
 * slot being written: the reader takes the valid slot with the higher sequence. This keeps
 * "write atomically" true with a single fsync per update, which matters because writer.chk is
 * updated on every group commit.
 */
import { crc32 } from 'node:zlib';
import { readInt64, writeInt64 } from './binary.js';

export const CHECKPOINT_MAGIC = 0x4b424445; // "EDBK"
export const CHECKPOINT_SLOT_SIZE_BYTES = 512;
export const CHECKPOINT_FILE_SIZE_BYTES = 2 * CHECKPOINT_SLOT_SIZE_BYTES;
const SLOT_BODY_BYTES = 16;

export interface CheckpointSlot {
  readonly sequence: number;
  readonly value: number;
}

export function encodeCheckpointSlot(slot: CheckpointSlot): Buffer {
  const buf = Buffer.alloc(SLOT_BODY_BYTES + 4);
  buf.writeUInt32LE(CHECKPOINT_MAGIC, 0);
  buf.writeUInt32LE(slot.sequence >>> 0, 4);
  writeInt64(buf, slot.value, 8);
  buf.writeUInt32LE(crc32(buf.subarray(0, SLOT_BODY_BYTES)), SLOT_BODY_BYTES);
  return buf;
}

export function decodeCheckpointSlot(buf: Buffer, offset: number): CheckpointSlot | undefined {
  if (buf.length < offset + SLOT_BODY_BYTES + 4) return undefined;
  if (buf.readUInt32LE(offset) !== CHECKPOINT_MAGIC) return undefined;
  if (crc32(buf.subarray(offset, offset + SLOT_BODY_BYTES)) !== buf.readUInt32LE(offset + SLOT_BODY_BYTES)) return undefined;
  return { sequence: buf.readUInt32LE(offset + 4), value: readInt64(buf, offset + 8) };
}

/** Picks the current value of a checkpoint file's bytes; undefined when no slot is valid. */
export function decodeCheckpointFile(buf: Buffer): CheckpointSlot | undefined {
  const a = decodeCheckpointSlot(buf, 0);
  const b = decodeCheckpointSlot(buf, CHECKPOINT_SLOT_SIZE_BYTES);
  if (!a) return b;
  if (!b) return a;
  // Sequences wrap at 2^32; compare with wrap-around (serial number arithmetic).
  return ((b.sequence - a.sequence) | 0) > 0 ? b : a;
}

/** Byte offset of the slot that sequence `sequence` is written to. */
export function checkpointSlotOffset(sequence: number): number {
  return (sequence % 2) * CHECKPOINT_SLOT_SIZE_BYTES;
}

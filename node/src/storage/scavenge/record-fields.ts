/**
 * Reads the few record fields a scavenge decides on straight from a frame in a block, without
 * building strings or objects per record. The offsets follow the payload layout of
 * format/record.ts (`record-fields.test.ts` checks them against its encoder and decoder).
 */
import { FRAME_PAYLOAD_OFFSET_BYTES } from './chunk-frames.js';

/**
 * Little-endian reads byte by byte: about twice as fast as Buffer's readUInt32LE (which
 * validates its offset on every call) in these per-record loops. Frames were bounds-checked by
 * the walk; a field of a corrupt frame past the block reads as NaN, and the chunk's checksum
 * fails the walk at its end anyway.
 */
function u32At(b: Buffer, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x1000000;
}

function i64At(b: Buffer, o: number): number {
  return (b[o + 4]! | (b[o + 5]! << 8) | (b[o + 6]! << 16) | (b[o + 7]! << 24)) * 0x100000000 + u32At(b, o);
}

const COMMON_BYTES = 1 + 1 + 8;
const PREPARE_FLAGS = COMMON_BYTES;
const PREPARE_TRANSACTION_POSITION = PREPARE_FLAGS + 2;
const PREPARE_EVENT_NUMBER = PREPARE_TRANSACTION_POSITION + 8 + 4;
const PREPARE_TIMESTAMP = PREPARE_EVENT_NUMBER + 8 + 16;
const PREPARE_STREAM_LENGTH = PREPARE_TIMESTAMP + 8;
const COMMIT_TRANSACTION_POSITION = COMMON_BYTES;

/** Record type of the frame at `frame` (RecordType values). */
export function frameRecordType(block: Buffer, frame: number): number {
  return block[frame + FRAME_PAYLOAD_OFFSET_BYTES]!;
}

export function prepareFlags(block: Buffer, frame: number): number {
  const at = frame + FRAME_PAYLOAD_OFFSET_BYTES + PREPARE_FLAGS;
  return block[at]! | (block[at + 1]! << 8);
}

export function prepareTransactionPosition(block: Buffer, frame: number): number {
  return i64At(block, frame + FRAME_PAYLOAD_OFFSET_BYTES + PREPARE_TRANSACTION_POSITION);
}

export function prepareEventNumber(block: Buffer, frame: number): number {
  return i64At(block, frame + FRAME_PAYLOAD_OFFSET_BYTES + PREPARE_EVENT_NUMBER);
}

export function prepareTimestampMs(block: Buffer, frame: number): number {
  return i64At(block, frame + FRAME_PAYLOAD_OFFSET_BYTES + PREPARE_TIMESTAMP);
}

/** Offset in `block` of the UTF-8 bytes of a prepare's stream name. */
export function prepareStreamStart(frame: number): number {
  return frame + FRAME_PAYLOAD_OFFSET_BYTES + PREPARE_STREAM_LENGTH + 2;
}

export function prepareStreamLength(block: Buffer, frame: number): number {
  const at = frame + FRAME_PAYLOAD_OFFSET_BYTES + PREPARE_STREAM_LENGTH;
  return block[at]! | (block[at + 1]! << 8);
}

export function commitTransactionPositionAt(block: Buffer, frame: number): number {
  return i64At(block, frame + FRAME_PAYLOAD_OFFSET_BYTES + COMMIT_TRANSACTION_POSITION);
}

/**
 * Remembers the last stream name seen as raw bytes, so that consecutive records of one stream
 * (a write's events sit together) are recognised by a byte comparison instead of decoding the
 * name again. `same` answers for the prepare at `frame`; `remember` takes it as the new last.
 */
export class StreamNameMemo {
  private bytes = Buffer.allocUnsafe(256);
  private length = -1;

  same(block: Buffer, frame: number): boolean {
    const len = prepareStreamLength(block, frame);
    if (len !== this.length) return false;
    const start = prepareStreamStart(frame);
    const bytes = this.bytes;
    for (let i = 0; i < len; i++) if (block[start + i] !== bytes[i]) return false;
    return true;
  }

  /** Remembers the prepare's stream and returns its name. */
  remember(block: Buffer, frame: number): string {
    const len = prepareStreamLength(block, frame);
    const start = prepareStreamStart(frame);
    if (len > this.bytes.length) this.bytes = Buffer.allocUnsafe(len);
    block.copy(this.bytes, 0, start, start + len);
    this.length = len;
    return block.toString('utf8', start, start + len);
  }
}

/**
 * Log record codec (pure, no I/O). A record on disk is a frame:
 *
 *   u32 payloadLength | u32 crc32(payload) | payload | u32 payloadLength
 *
 * The trailing length lets readers walk the log backward; the checksum catches torn and
 * flipped bytes. Payloads start with `u8 recordType | u8 version | i64 logPosition`, so a record
 * found at the wrong position is detected too.
 *
 * Record types:
 * - prepare (0): one event (or a tombstone), with its stream, event number, id, type, data,
 *   metadata, flags and timestamp.
 * - commit (1): ends a write; the events of the write (its prepares) become visible together.
 * - system (2): epoch records and other system data as JSON.
 */
import { crc32 } from 'node:zlib';
import { RECORD_FRAME_OVERHEAD_BYTES, RECORD_SIZE_BYTES_MAX } from '../limits.js';
import { readInt64, readUuid, utf8LengthBytes, writeInt64, writeUtf8, writeUuid } from './binary.js';

export const RecordType = { Prepare: 0, Commit: 1, System: 2 } as const;
export const RECORD_VERSION = 1;

export const PrepareFlags = {
  Data: 0x01,
  TransactionBegin: 0x02,
  TransactionEnd: 0x04,
  StreamDelete: 0x08,
  IsCommitted: 0x20,
  IsJson: 0x100,
} as const;

export const SystemRecordType = { Epoch: 1 } as const;

export interface PrepareRecord {
  readonly type: typeof RecordType.Prepare;
  readonly logPosition: number;
  readonly flags: number;
  readonly transactionPosition: number;
  readonly transactionOffset: number;
  readonly eventNumber: number;
  readonly eventId: string;
  readonly timestampMs: number;
  readonly stream: string;
  readonly eventType: string;
  readonly data: Buffer;
  readonly metadata: Buffer;
}

export interface CommitRecord {
  readonly type: typeof RecordType.Commit;
  readonly logPosition: number;
  readonly transactionPosition: number;
  readonly firstEventNumber: number;
  readonly eventCount: number;
  readonly timestampMs: number;
}

export interface SystemRecord {
  readonly type: typeof RecordType.System;
  readonly logPosition: number;
  readonly timestampMs: number;
  readonly systemRecordType: number;
  readonly data: Buffer;
}

export type LogRecord = PrepareRecord | CommitRecord | SystemRecord;

const COMMON_BYTES = 1 + 1 + 8;
const PREPARE_FIXED_BYTES = COMMON_BYTES + 2 + 8 + 4 + 8 + 16 + 8 + 2 + 2 + 4 + 4;
const COMMIT_BYTES = COMMON_BYTES + 8 + 8 + 4 + 8;
const SYSTEM_FIXED_BYTES = COMMON_BYTES + 8 + 1 + 4;

/** Input for encoding a prepare: the string fields may be given pre-encoded to save work. */
export type PrepareInput = Omit<PrepareRecord, 'type' | 'data' | 'metadata'> & {
  readonly data: Uint8Array;
  readonly metadata: Uint8Array;
};

export function preparePayloadSizeBytes(streamBytes: number, typeBytes: number, dataBytes: number, metaBytes: number): number {
  return PREPARE_FIXED_BYTES + streamBytes + typeBytes + dataBytes + metaBytes;
}

export function framedSizeBytes(payloadBytes: number): number {
  return payloadBytes + RECORD_FRAME_OVERHEAD_BYTES;
}

/**
 * Encodes a prepare record frame into `out` at `offset`; returns the frame size. With
 * `seal` false the checksum field is left for `sealFrames` (the log writer thread fills it).
 */
export function encodePrepare(out: Buffer, offset: number, r: PrepareInput, seal = true): number {
  const streamBytes = utf8LengthBytes(r.stream);
  const typeBytes = utf8LengthBytes(r.eventType);
  const payloadBytes = preparePayloadSizeBytes(streamBytes, typeBytes, r.data.length, r.metadata.length);
  checkPayloadSize(payloadBytes);
  let p = offset + 8;
  p = writeCommon(out, p, RecordType.Prepare, r.logPosition);
  out.writeUInt16LE(r.flags, p); p += 2;
  writeInt64(out, r.transactionPosition, p); p += 8;
  out.writeInt32LE(r.transactionOffset, p); p += 4;
  writeInt64(out, r.eventNumber, p); p += 8;
  writeUuid(out, r.eventId, p); p += 16;
  writeInt64(out, r.timestampMs, p); p += 8;
  out.writeUInt16LE(streamBytes, p); p += 2;
  p += writeUtf8(out, r.stream, p);
  out.writeUInt16LE(typeBytes, p); p += 2;
  p += writeUtf8(out, r.eventType, p);
  out.writeUInt32LE(r.data.length, p); p += 4;
  out.set(r.data, p); p += r.data.length;
  out.writeUInt32LE(r.metadata.length, p); p += 4;
  out.set(r.metadata, p); p += r.metadata.length;
  return finishFrame(out, offset, payloadBytes, p, seal);
}

export function encodeCommit(out: Buffer, offset: number, r: Omit<CommitRecord, 'type'>, seal = true): number {
  let p = offset + 8;
  p = writeCommon(out, p, RecordType.Commit, r.logPosition);
  writeInt64(out, r.transactionPosition, p); p += 8;
  writeInt64(out, r.firstEventNumber, p); p += 8;
  out.writeInt32LE(r.eventCount, p); p += 4;
  writeInt64(out, r.timestampMs, p); p += 8;
  return finishFrame(out, offset, COMMIT_BYTES, p, seal);
}

export function commitFramedSizeBytes(): number {
  return framedSizeBytes(COMMIT_BYTES);
}

export function systemFramedSizeBytes(dataBytes: number): number {
  return framedSizeBytes(SYSTEM_FIXED_BYTES + dataBytes);
}

export function encodeSystem(out: Buffer, offset: number, r: Omit<SystemRecord, 'type'>, seal = true): number {
  const payloadBytes = SYSTEM_FIXED_BYTES + r.data.length;
  checkPayloadSize(payloadBytes);
  let p = offset + 8;
  p = writeCommon(out, p, RecordType.System, r.logPosition);
  writeInt64(out, r.timestampMs, p); p += 8;
  out.writeUInt8(r.systemRecordType, p); p += 1;
  out.writeUInt32LE(r.data.length, p); p += 4;
  out.set(r.data, p); p += r.data.length;
  return finishFrame(out, offset, payloadBytes, p, seal);
}

/**
 * Fills the checksum of every frame in `buf[start, end)`, which must hold whole frames encoded
 * with `seal` false, back to back. Throws (touching nothing further) at anything that is not a
 * frame: a zero or oversized length, or a trailing length that disagrees.
 */
export function sealFrames(buf: Buffer, start: number, end: number): number {
  let p = start;
  let frames = 0;
  while (p < end) {
    if (p + RECORD_FRAME_OVERHEAD_BYTES > end) throw new Error(`sealFrames: ${end - p} stray bytes at offset ${p}`);
    const payloadBytes = buf.readUInt32LE(p);
    const frameEnd = p + payloadBytes + RECORD_FRAME_OVERHEAD_BYTES;
    if (payloadBytes === 0 || payloadBytes > RECORD_SIZE_BYTES_MAX || frameEnd > end || buf.readUInt32LE(frameEnd - 4) !== payloadBytes) {
      throw new Error(`sealFrames: no frame at offset ${p}`);
    }
    buf.writeUInt32LE(crc32(buf.subarray(p + 8, frameEnd - 4)), p + 4);
    p = frameEnd;
    frames += 1;
  }
  return frames;
}

function checkPayloadSize(payloadBytes: number): void {
  if (payloadBytes > RECORD_SIZE_BYTES_MAX) {
    throw new RangeError(`record of ${payloadBytes} bytes exceeds the limit of ${RECORD_SIZE_BYTES_MAX}`);
  }
}

function writeCommon(out: Buffer, p: number, type: number, logPosition: number): number {
  out.writeUInt8(type, p);
  out.writeUInt8(RECORD_VERSION, p + 1);
  writeInt64(out, logPosition, p + 2);
  return p + COMMON_BYTES;
}

function finishFrame(out: Buffer, offset: number, payloadBytes: number, end: number, seal: boolean): number {
  // Pair assertion: the computed size and the bytes written must agree.
  if (end - offset - 8 !== payloadBytes) throw new Error(`record size mismatch: ${end - offset - 8} != ${payloadBytes}`);
  out.writeUInt32LE(payloadBytes, offset);
  out.writeUInt32LE(seal ? crc32(out.subarray(offset + 8, end)) : 0, offset + 4);
  out.writeUInt32LE(payloadBytes, end);
  return payloadBytes + RECORD_FRAME_OVERHEAD_BYTES;
}

/** Result of decoding the frame at a position: a record, the end of written data, or damage. */
export type FrameResult =
  | { readonly kind: 'record'; readonly record: LogRecord; readonly frameSizeBytes: number }
  | { readonly kind: 'end' }
  | { readonly kind: 'torn'; readonly reason: string };

/**
 * How many leading bytes of `buf` are whole frames (by their length prefixes): where a piece of the
 * log may be cut so that no record is split between two pieces.
 */
export function wholeFramesLength(buf: Buffer): number {
  let offset = 0;
  while (offset + 4 <= buf.length) {
    const payloadBytes = buf.readUInt32LE(offset);
    if (payloadBytes === 0) break;
    const size = payloadBytes + RECORD_FRAME_OVERHEAD_BYTES;
    if (offset + size > buf.length) break;
    offset += size;
  }
  return offset;
}

/**
 * Decodes the frame at `offset` of `buf` (which holds data up to `limit`). A zero length means
 * no record was written there. Anything else that does not check out is reported as torn.
 */
export function decodeFrame(buf: Buffer, offset: number, limit: number, expectedLogPosition: number): FrameResult {
  const checked = checkFrame(buf, offset, limit);
  if (checked.kind !== 'payload') return checked;
  const record = decodePayload(checked.payload);
  if (record.logPosition !== expectedLogPosition) return misplaced(record.logPosition, expectedLogPosition);
  return { kind: 'record', record, frameSizeBytes: checked.frameSizeBytes };
}

/** Checks a frame's lengths and checksum; returns its payload without decoding it. */
function checkFrame(buf: Buffer, offset: number, limit: number):
  | { readonly kind: 'payload'; readonly payload: Buffer; readonly frameSizeBytes: number }
  | { readonly kind: 'end' } | { readonly kind: 'torn'; readonly reason: string } {
  if (offset + 4 > limit) return { kind: 'end' };
  const payloadBytes = buf.readUInt32LE(offset);
  if (payloadBytes === 0) return { kind: 'end' };
  if (payloadBytes > RECORD_SIZE_BYTES_MAX || offset + payloadBytes + RECORD_FRAME_OVERHEAD_BYTES > limit) {
    return { kind: 'torn', reason: `frame length ${payloadBytes} runs past the written data` };
  }
  const payload = buf.subarray(offset + 8, offset + 8 + payloadBytes);
  if (crc32(payload) !== buf.readUInt32LE(offset + 4)) return { kind: 'torn', reason: 'checksum mismatch' };
  if (buf.readUInt32LE(offset + 8 + payloadBytes) !== payloadBytes) return { kind: 'torn', reason: 'trailing length mismatch' };
  return { kind: 'payload', payload, frameSizeBytes: payloadBytes + RECORD_FRAME_OVERHEAD_BYTES };
}

function misplaced(found: number, expected: number): { readonly kind: 'torn'; readonly reason: string } {
  return { kind: 'torn', reason: `record says position ${found}, found at ${expected}` };
}

/** Decodes a checked payload. Buffers in the result are copies, safe to keep. */
export function decodePayload(payload: Buffer): LogRecord {
  const type = payload.readUInt8(0);
  const version = payload.readUInt8(1);
  if (version !== RECORD_VERSION) throw new Error(`unknown record version ${version}`);
  const logPosition = readInt64(payload, 2);
  let p = COMMON_BYTES;
  switch (type) {
    case RecordType.Prepare: return decodePrepare(payload, p, logPosition);
    case RecordType.Commit:
      return {
        type: RecordType.Commit, logPosition,
        transactionPosition: readInt64(payload, p),
        firstEventNumber: readInt64(payload, p + 8),
        eventCount: payload.readInt32LE(p + 16),
        timestampMs: readInt64(payload, p + 20),
      };
    case RecordType.System: {
      const timestampMs = readInt64(payload, p); p += 8;
      const systemRecordType = payload.readUInt8(p); p += 1;
      const len = payload.readUInt32LE(p); p += 4;
      return { type: RecordType.System, logPosition, timestampMs, systemRecordType, data: Buffer.from(payload.subarray(p, p + len)) };
    }
    default: throw new Error(`unknown record type ${type}`);
  }
}

function decodePrepare(payload: Buffer, start: number, logPosition: number): PrepareRecord {
  let p = start;
  const flags = payload.readUInt16LE(p); p += 2;
  const transactionPosition = readInt64(payload, p); p += 8;
  const transactionOffset = payload.readInt32LE(p); p += 4;
  const eventNumber = readInt64(payload, p); p += 8;
  const eventId = readUuid(payload, p); p += 16;
  const timestampMs = readInt64(payload, p); p += 8;
  const streamLen = payload.readUInt16LE(p); p += 2;
  const stream = payload.toString('utf8', p, p + streamLen); p += streamLen;
  const typeLen = payload.readUInt16LE(p); p += 2;
  const eventType = payload.toString('utf8', p, p + typeLen); p += typeLen;
  const dataLen = payload.readUInt32LE(p); p += 4;
  const data = Buffer.from(payload.subarray(p, p + dataLen)); p += dataLen;
  const metaLen = payload.readUInt32LE(p); p += 4;
  const metadata = Buffer.from(payload.subarray(p, p + metaLen)); p += metaLen;
  if (p !== payload.length) throw new Error(`prepare record has ${payload.length - p} trailing bytes`);
  return {
    type: RecordType.Prepare, logPosition, flags, transactionPosition, transactionOffset,
    eventNumber, eventId, timestampMs, stream, eventType, data, metadata,
  };
}

/** Reads the stream name of a prepare payload without decoding the rest (index rebuild, collision checks). */
export function peekPrepareStream(payload: Buffer): string {
  const p = COMMON_BYTES + 2 + 8 + 4 + 8 + 16 + 8;
  const len = payload.readUInt16LE(p);
  return payload.toString('utf8', p + 2, p + 2 + len);
}

/** The fields index catch-up needs, read without copying data (the frame is already checked). */
export interface IndexFields {
  readonly type: number;
  readonly logPosition: number;
  readonly stream: string;
  readonly eventNumber: number;
}

export function decodeIndexFields(payload: Buffer): IndexFields {
  const type = payload.readUInt8(0);
  const logPosition = readInt64(payload, 2);
  if (type !== RecordType.Prepare) return { type, logPosition, stream: '', eventNumber: -1 };
  const eventNumber = readInt64(payload, COMMON_BYTES + 2 + 8 + 4);
  return { type, logPosition, stream: peekPrepareStream(payload), eventNumber };
}

/** Checks a frame like decodeFrame but returns only the index fields. */
export function decodeFrameIndexFields(buf: Buffer, offset: number, limit: number, expectedLogPosition: number):
  | { readonly kind: 'record'; readonly fields: IndexFields; readonly frameSizeBytes: number }
  | { readonly kind: 'end' } | { readonly kind: 'torn'; readonly reason: string } {
  const checked = checkFrame(buf, offset, limit);
  if (checked.kind !== 'payload') return checked;
  const fields = decodeIndexFields(checked.payload);
  if (fields.logPosition !== expectedLogPosition) return misplaced(fields.logPosition, expectedLogPosition);
  return { kind: 'record', fields, frameSizeBytes: checked.frameSizeBytes };
}

/** The fixed fields of a prepare payload, read without decoding data (scavenge decisions). */
export interface PrepareHeader {
  readonly flags: number;
  readonly transactionPosition: number;
  readonly eventNumber: number;
  readonly timestampMs: number;
  readonly stream: string;
}

export function decodePrepareHeader(payload: Buffer): PrepareHeader {
  let p = COMMON_BYTES;
  const flags = payload.readUInt16LE(p); p += 2;
  const transactionPosition = readInt64(payload, p); p += 8 + 4;
  const eventNumber = readInt64(payload, p); p += 8 + 16;
  const timestampMs = readInt64(payload, p);
  return { flags, transactionPosition, eventNumber, timestampMs, stream: peekPrepareStream(payload) };
}

/** Transaction position of a commit payload. */
export function commitTransactionPosition(payload: Buffer): number {
  return readInt64(payload, COMMON_BYTES);
}

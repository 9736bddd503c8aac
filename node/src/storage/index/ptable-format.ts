/**
 * The layout of an immutable index table ("PTable") file, named by a random UUID:
 *
 *   header   32 bytes: magic "EDBPTABL", uint32 format version, uint32 min compatible version,
 *            uint32 entry size (24), uint32 midpoint stride, zero padding
 *   entries  entryCount x 24 bytes, sorted by (hash desc, eventNumber desc, logPosition desc)
 *   midpoints midpointCount x 24 bytes: uint64 hash, int64 eventNumber, uint64 entry index; the
 *            entries at every `stride`-th index plus the last one, for binary search
 *   footer   48 bytes: magic "EDBPTEND", uint64 entryCount, uint64 midpointCount,
 *            uint64 distinct hash count, uint32 format version, 8 reserved bytes,
 *            uint32 crc32 of every byte of the file before it
 *
 * The filter for the table lives beside it in `<UUID>.bloomfilter` (see bloom-filter-file.ts).
 */

import { FatalError, assert } from '../../errors.js';
import { ENTRY_SIZE_BYTES } from './index-entry-codec.js';

export const PTABLE_HEADER_SIZE_BYTES = 32;
export const PTABLE_FOOTER_SIZE_BYTES = 48;
export const PTABLE_FORMAT_VERSION = 1;
export const PTABLE_MIN_COMPATIBLE_VERSION = 1;
export const MIDPOINT_SIZE_BYTES = 24;
const HEADER_MAGIC = 'EDBPTABL';
const FOOTER_MAGIC = 'EDBPTEND';
/** Midpoints kept in memory per table are bounded to about this many (24 bytes each). */
const MIDPOINT_COUNT_TARGET_MAX = 1 << 20;
const MIDPOINT_STRIDE_MIN = 128;

export interface PTableHeader {
  readonly formatVersion: number;
  readonly midpointStride: number;
}

export interface PTableFooter {
  readonly entryCount: number;
  readonly midpointCount: number;
  readonly hashCount: number;
  readonly checksum: number;
}

/** Entries between midpoints: at least 128, more for huge tables to bound midpoint memory. */
export function midpointStrideFor(entryCountMax: number): number {
  return Math.max(MIDPOINT_STRIDE_MIN, Math.ceil(entryCountMax / MIDPOINT_COUNT_TARGET_MAX));
}

export function ptableSizeBytes(entryCount: number, midpointCount: number): number {
  return (
    PTABLE_HEADER_SIZE_BYTES +
    entryCount * ENTRY_SIZE_BYTES +
    midpointCount * MIDPOINT_SIZE_BYTES +
    PTABLE_FOOTER_SIZE_BYTES
  );
}

export function encodePTableHeader(header: PTableHeader): Buffer {
  assert(header.midpointStride >= 1, 'midpoint stride is positive');
  const bytes = Buffer.alloc(PTABLE_HEADER_SIZE_BYTES);
  bytes.write(HEADER_MAGIC, 0, 'latin1');
  bytes.writeUInt32LE(header.formatVersion, 8);
  bytes.writeUInt32LE(PTABLE_MIN_COMPATIBLE_VERSION, 12);
  bytes.writeUInt32LE(ENTRY_SIZE_BYTES, 16);
  bytes.writeUInt32LE(header.midpointStride, 20);
  return bytes;
}

export function corruptTable(fileName: string, reason: string): FatalError {
  return new FatalError('EDB_INDEX_CORRUPT', `index table ${fileName} is corrupt: ${reason}`, {
    details: { fileName, reason },
  });
}

export function decodePTableHeader(bytes: Buffer, fileName: string): PTableHeader {
  if (bytes.length < PTABLE_HEADER_SIZE_BYTES) throw corruptTable(fileName, 'short header');
  if (bytes.toString('latin1', 0, 8) !== HEADER_MAGIC) throw corruptTable(fileName, 'bad magic');
  const formatVersion = bytes.readUInt32LE(8);
  const minCompatibleVersion = bytes.readUInt32LE(12);
  if (minCompatibleVersion > PTABLE_FORMAT_VERSION) {
    throw corruptTable(fileName, 'format version too new');
  }
  if (bytes.readUInt32LE(16) !== ENTRY_SIZE_BYTES) throw corruptTable(fileName, 'bad entry size');
  const midpointStride = bytes.readUInt32LE(20);
  if (midpointStride < 1) throw corruptTable(fileName, 'bad midpoint stride');
  return { formatVersion, midpointStride };
}

/** Encodes the footer without its checksum (the last 4 bytes are filled in by the writer). */
export function encodePTableFooter(footer: Omit<PTableFooter, 'checksum'>): Buffer {
  assert(footer.midpointCount <= footer.entryCount + 1, 'midpoints do not outnumber entries');
  const bytes = Buffer.alloc(PTABLE_FOOTER_SIZE_BYTES);
  bytes.write(FOOTER_MAGIC, 0, 'latin1');
  bytes.writeBigUInt64LE(BigInt(footer.entryCount), 8);
  bytes.writeBigUInt64LE(BigInt(footer.midpointCount), 16);
  bytes.writeBigUInt64LE(BigInt(footer.hashCount), 24);
  bytes.writeUInt32LE(PTABLE_FORMAT_VERSION, 32);
  return bytes;
}

export function decodePTableFooter(bytes: Buffer, fileName: string): PTableFooter {
  if (bytes.length < PTABLE_FOOTER_SIZE_BYTES) throw corruptTable(fileName, 'short footer');
  if (bytes.toString('latin1', 0, 8) !== FOOTER_MAGIC) throw corruptTable(fileName, 'bad footer');
  const footer = {
    entryCount: Number(bytes.readBigUInt64LE(8)),
    midpointCount: Number(bytes.readBigUInt64LE(16)),
    hashCount: Number(bytes.readBigUInt64LE(24)),
    checksum: bytes.readUInt32LE(PTABLE_FOOTER_SIZE_BYTES - 4),
  };
  if (footer.hashCount > footer.entryCount || footer.midpointCount > footer.entryCount + 1) {
    throw corruptTable(fileName, 'inconsistent footer counts');
  }
  return footer;
}

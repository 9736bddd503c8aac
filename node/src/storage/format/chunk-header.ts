/**
 * Chunk header and footer codecs (pure). A chunk file is
 *
 *   header (128 B) | data (records) | [position map] | footer (128 B, completed chunks only)
 *
 * The header names the logical chunk range the file covers; the footer, written when the chunk
 * is completed (sealed), records the data size and a crc32 over data and map. Both carry a magic
 * number, a format version and their own checksum.
 */
import { crc32 } from 'node:zlib';
import { CHUNK_FOOTER_SIZE_BYTES, CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import { readInt64, readUuid, writeInt64, writeUuid } from './binary.js';

export const CHUNK_HEADER_MAGIC = 0x43424445; // "EDBC"
export const CHUNK_FOOTER_MAGIC = 0x46424445; // "EDBF"
export const CHUNK_FORMAT_VERSION = 1;
const HEADER_CRC_OFFSET = CHUNK_HEADER_SIZE_BYTES - 4;
const FOOTER_CRC_OFFSET = CHUNK_FOOTER_SIZE_BYTES - 4;

export interface ChunkHeader {
  readonly chunkSizeBytes: number;
  readonly chunkStartNumber: number;
  readonly chunkEndNumber: number;
  readonly isScavenged: boolean;
  readonly chunkId: string;
}

export interface ChunkFooter {
  readonly isCompleted: boolean;
  /** Bytes of record data physically in the file. */
  readonly physicalDataSizeBytes: number;
  /** Bytes of the logical range the data spans (equal unless scavenged). */
  readonly logicalDataSizeBytes: number;
  /** Entries in the position map (scavenged chunks). */
  readonly mapCount: number;
  /** crc32 over the data and the map. */
  readonly dataCrc32: number;
}

export function encodeChunkHeader(h: ChunkHeader): Buffer {
  const buf = Buffer.alloc(CHUNK_HEADER_SIZE_BYTES);
  buf.writeUInt32LE(CHUNK_HEADER_MAGIC, 0);
  buf.writeUInt8(2, 4); // file type: chunk
  buf.writeUInt8(CHUNK_FORMAT_VERSION, 5);
  buf.writeUInt32LE(h.chunkSizeBytes, 6);
  buf.writeUInt32LE(h.chunkStartNumber, 10);
  buf.writeUInt32LE(h.chunkEndNumber, 14);
  buf.writeUInt8(h.isScavenged ? 1 : 0, 18);
  writeUuid(buf, h.chunkId, 19);
  buf.writeUInt32LE(crc32(buf.subarray(0, HEADER_CRC_OFFSET)), HEADER_CRC_OFFSET);
  return buf;
}

export function decodeChunkHeader(buf: Buffer): ChunkHeader {
  if (buf.length < CHUNK_HEADER_SIZE_BYTES) throw new Error('chunk header is truncated');
  if (buf.readUInt32LE(0) !== CHUNK_HEADER_MAGIC) throw new Error('chunk header has a bad magic number');
  if (crc32(buf.subarray(0, HEADER_CRC_OFFSET)) !== buf.readUInt32LE(HEADER_CRC_OFFSET)) {
    throw new Error('chunk header checksum mismatch');
  }
  const version = buf.readUInt8(5);
  if (version !== CHUNK_FORMAT_VERSION) throw new Error(`unsupported chunk format version ${version}`);
  const h: ChunkHeader = {
    chunkSizeBytes: buf.readUInt32LE(6),
    chunkStartNumber: buf.readUInt32LE(10),
    chunkEndNumber: buf.readUInt32LE(14),
    isScavenged: buf.readUInt8(18) === 1,
    chunkId: readUuid(buf, 19),
  };
  if (h.chunkEndNumber < h.chunkStartNumber) throw new Error('chunk header range is inverted');
  return h;
}

export function encodeChunkFooter(f: ChunkFooter): Buffer {
  const buf = Buffer.alloc(CHUNK_FOOTER_SIZE_BYTES);
  buf.writeUInt32LE(CHUNK_FOOTER_MAGIC, 0);
  buf.writeUInt8(f.isCompleted ? 1 : 0, 4);
  writeInt64(buf, f.physicalDataSizeBytes, 5);
  writeInt64(buf, f.logicalDataSizeBytes, 13);
  buf.writeUInt32LE(f.mapCount, 21);
  buf.writeUInt32LE(f.dataCrc32, 25);
  buf.writeUInt32LE(crc32(buf.subarray(0, FOOTER_CRC_OFFSET)), FOOTER_CRC_OFFSET);
  return buf;
}

export function decodeChunkFooter(buf: Buffer): ChunkFooter {
  if (buf.length < CHUNK_FOOTER_SIZE_BYTES) throw new Error('chunk footer is truncated');
  if (buf.readUInt32LE(0) !== CHUNK_FOOTER_MAGIC) throw new Error('chunk footer has a bad magic number');
  if (crc32(buf.subarray(0, FOOTER_CRC_OFFSET)) !== buf.readUInt32LE(FOOTER_CRC_OFFSET)) {
    throw new Error('chunk footer checksum mismatch');
  }
  return {
    isCompleted: buf.readUInt8(4) === 1,
    physicalDataSizeBytes: readInt64(buf, 5),
    logicalDataSizeBytes: readInt64(buf, 13),
    mapCount: buf.readUInt32LE(21),
    dataCrc32: buf.readUInt32LE(25),
  };
}

const CHUNK_NAME_RE = /^chunk-(\d{6})\.(\d{6})$/;

export function chunkFileName(chunkNumber: number, version: number): string {
  return `chunk-${String(chunkNumber).padStart(6, '0')}.${String(version).padStart(6, '0')}`;
}

export function parseChunkFileName(name: string): { chunkNumber: number; version: number } | undefined {
  const m = CHUNK_NAME_RE.exec(name);
  if (!m) return undefined;
  return { chunkNumber: Number(m[1]), version: Number(m[2]) };
}

/**
 * `<UUID>.bloomfilter`: the bloom filter of the stream hashes in one table, so lookups for
 * streams absent from the table skip it. Layout: magic "EDBBLOOM", uint32 format version,
 * uint32 probe count, uint64 bit count, the bit array, uint32 crc32 of everything before it.
 * A missing or damaged filter is not fatal: the table is then searched without one.
 */

import { crc32 } from 'node:zlib';
import { assert } from '../../errors.js';
import { BloomFilter } from './bloom-filter.js';

const BLOOM_MAGIC = 'EDBBLOOM';
const BLOOM_FORMAT_VERSION = 1;
const BLOOM_HEADER_SIZE_BYTES = 24;

export const BLOOM_FILE_SUFFIX = '.bloomfilter';

export function encodeBloomFilterFile(filter: BloomFilter): Buffer {
  const sizeBytes = BLOOM_HEADER_SIZE_BYTES + filter.bits.length + 4;
  const bytes = Buffer.alloc(sizeBytes);
  bytes.write(BLOOM_MAGIC, 0, 'latin1');
  bytes.writeUInt32LE(BLOOM_FORMAT_VERSION, 8);
  bytes.writeUInt32LE(filter.probeCount, 12);
  bytes.writeBigUInt64LE(BigInt(filter.bitCount), 16);
  bytes.set(filter.bits, BLOOM_HEADER_SIZE_BYTES);
  bytes.writeUInt32LE(crc32(bytes.subarray(0, sizeBytes - 4)), sizeBytes - 4);
  assert(decodeBloomFilterFile(bytes) !== undefined, 'encoded bloom filter decodes');
  return bytes;
}

/** Returns the filter, or undefined when the bytes are not a valid filter file. */
export function decodeBloomFilterFile(bytes: Buffer): BloomFilter | undefined {
  if (bytes.length < BLOOM_HEADER_SIZE_BYTES + 5) return undefined;
  if (bytes.toString('latin1', 0, 8) !== BLOOM_MAGIC) return undefined;
  if (bytes.readUInt32LE(8) !== BLOOM_FORMAT_VERSION) return undefined;
  const probeCount = bytes.readUInt32LE(12);
  const bitCount = Number(bytes.readBigUInt64LE(16));
  if (bitCount !== (bytes.length - BLOOM_HEADER_SIZE_BYTES - 4) * 8) return undefined;
  if (probeCount < 1 || probeCount > 32) return undefined;
  const checksum = bytes.readUInt32LE(bytes.length - 4);
  if (crc32(bytes.subarray(0, bytes.length - 4)) !== checksum) return undefined;
  const bits = new Uint8Array(bitCount / 8);
  bits.set(bytes.subarray(BLOOM_HEADER_SIZE_BYTES, bytes.length - 4));
  return new BloomFilter(bits, probeCount);
}

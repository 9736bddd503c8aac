/**
 * The 64-bit stream hash used as the index key, computed as EventStoreDB does:
 * `(XXHash32(name) << 32) | Murmur3_32(name)`, both seeded 0xc58f1a7b, over the UTF-16LE bytes of
 * the stream name. The string variants read the UTF-16 code units directly (two code units form
 * one 32-bit little-endian word), so no byte buffer is allocated on the hot path. The byte
 * variants exist for tests and for anything that already holds bytes; both must agree.
 */

import type { StreamHasher } from './stream-index-port.js';

export const STREAM_HASH_SEED = 0xc58f1a7b;

const XXH_PRIME1 = 0x9e3779b1;
const XXH_PRIME2 = 0x85ebca77;
const XXH_PRIME3 = 0xc2b2ae3d;
const XXH_PRIME4 = 0x27d4eb2f;
const XXH_PRIME5 = 0x165667b1;

const MURMUR_C1 = 0xcc9e2d51;
const MURMUR_C2 = 0x1b873593;

function rotl32(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function xxhRound(acc: number, lane: number): number {
  return Math.imul(rotl32((acc + Math.imul(lane, XXH_PRIME2)) | 0, 13), XXH_PRIME1);
}

function xxhAvalanche(hash: number): number {
  let h = hash;
  h ^= h >>> 15;
  h = Math.imul(h, XXH_PRIME2);
  h ^= h >>> 13;
  h = Math.imul(h, XXH_PRIME3);
  h ^= h >>> 16;
  return h >>> 0;
}

function xxhMergeLanes(v1: number, v2: number, v3: number, v4: number): number {
  return (rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18)) | 0;
}

/** Reads the 32-bit little-endian word at UTF-16 code unit `unitIndex` (two code units). */
function wordAt(text: string, unitIndex: number): number {
  return text.charCodeAt(unitIndex) | (text.charCodeAt(unitIndex + 1) << 16);
}

/** XXHash32 of the UTF-16LE bytes of `text`. */
export function xxHash32Utf16(text: string, seed: number = STREAM_HASH_SEED): number {
  const unitCount = text.length;
  let i = 0;
  let h: number;
  if (unitCount >= 8) {
    let v1 = (seed + XXH_PRIME1 + XXH_PRIME2) | 0;
    let v2 = (seed + XXH_PRIME2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - XXH_PRIME1) | 0;
    const stripeEnd = unitCount - 8;
    for (; i <= stripeEnd; i += 8) {
      v1 = xxhRound(v1, wordAt(text, i));
      v2 = xxhRound(v2, wordAt(text, i + 2));
      v3 = xxhRound(v3, wordAt(text, i + 4));
      v4 = xxhRound(v4, wordAt(text, i + 6));
    }
    h = xxhMergeLanes(v1, v2, v3, v4);
  } else {
    h = (seed + XXH_PRIME5) | 0;
  }
  h = (h + unitCount * 2) | 0;
  for (; i + 2 <= unitCount; i += 2) {
    h = (h + Math.imul(wordAt(text, i), XXH_PRIME3)) | 0;
    h = Math.imul(rotl32(h, 17), XXH_PRIME4);
  }
  if (i < unitCount) {
    const unit = text.charCodeAt(i);
    h = (h + Math.imul(unit & 0xff, XXH_PRIME5)) | 0;
    h = Math.imul(rotl32(h, 11), XXH_PRIME1);
    h = (h + Math.imul(unit >>> 8, XXH_PRIME5)) | 0;
    h = Math.imul(rotl32(h, 11), XXH_PRIME1);
  }
  return xxhAvalanche(h);
}

function murmurMixK(k: number): number {
  return Math.imul(rotl32(Math.imul(k, MURMUR_C1), 15), MURMUR_C2);
}

function murmurMixH(h: number, k: number): number {
  const x = rotl32(h ^ murmurMixK(k), 13);
  return (Math.imul(x, 5) + 0xe6546b64) | 0;
}

function murmurFinalize(hash: number, lengthBytes: number): number {
  let h = hash ^ lengthBytes;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Murmur3 x86 32-bit of the UTF-16LE bytes of `text`. */
export function murmur3Utf16(text: string, seed: number = STREAM_HASH_SEED): number {
  const unitCount = text.length;
  let h = seed | 0;
  let i = 0;
  for (; i + 2 <= unitCount; i += 2) h = murmurMixH(h, wordAt(text, i));
  if (i < unitCount) h ^= murmurMixK(text.charCodeAt(i));
  return murmurFinalize(h, unitCount * 2);
}

function readWord(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) | 0;
}

/** XXHash32 of arbitrary bytes (reference form of the published algorithm). */
export function xxHash32(bytes: Uint8Array, seed: number): number {
  const length = bytes.length;
  let i = 0;
  let h: number;
  if (length >= 16) {
    let v1 = (seed + XXH_PRIME1 + XXH_PRIME2) | 0;
    let v2 = (seed + XXH_PRIME2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - XXH_PRIME1) | 0;
    for (; i <= length - 16; i += 16) {
      v1 = xxhRound(v1, readWord(bytes, i));
      v2 = xxhRound(v2, readWord(bytes, i + 4));
      v3 = xxhRound(v3, readWord(bytes, i + 8));
      v4 = xxhRound(v4, readWord(bytes, i + 12));
    }
    h = xxhMergeLanes(v1, v2, v3, v4);
  } else {
    h = (seed + XXH_PRIME5) | 0;
  }
  h = (h + length) | 0;
  for (; i + 4 <= length; i += 4) {
    h = (h + Math.imul(readWord(bytes, i), XXH_PRIME3)) | 0;
    h = Math.imul(rotl32(h, 17), XXH_PRIME4);
  }
  for (; i < length; i += 1) {
    h = (h + Math.imul(bytes[i]!, XXH_PRIME5)) | 0;
    h = Math.imul(rotl32(h, 11), XXH_PRIME1);
  }
  return xxhAvalanche(h);
}

/** Murmur3 x86 32-bit of arbitrary bytes (reference form of the published algorithm). */
export function murmur3(bytes: Uint8Array, seed: number): number {
  const length = bytes.length;
  let h = seed | 0;
  let i = 0;
  for (; i + 4 <= length; i += 4) h = murmurMixH(h, readWord(bytes, i));
  const tailLength = length - i;
  if (tailLength > 0) {
    let k = 0;
    if (tailLength >= 3) k ^= bytes[i + 2]! << 16;
    if (tailLength >= 2) k ^= bytes[i + 1]! << 8;
    k ^= bytes[i]!;
    h ^= murmurMixK(k);
  }
  return murmurFinalize(h, length);
}

/** The default stream hasher: `(xxHash32 << 32) | murmur3`, as an unsigned 64-bit bigint. */
export const streamHash: StreamHasher = (streamName: string): bigint => {
  const high = xxHash32Utf16(streamName);
  const low = murmur3Utf16(streamName);
  return (BigInt(high) << 32n) | BigInt(low);
};

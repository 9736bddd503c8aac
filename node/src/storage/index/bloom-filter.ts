/**
 * A bloom filter over 64-bit keys given as two 32-bit halves (a stream hash, or a name hashed by
 * the stream hasher). Probes use double hashing (Kirsch-Mitzenmacher) on two mixed 32-bit values,
 * so even poorly distributed keys (tests force tiny hashes) spread over the bit array.
 *
 * Sizing: about 8.2 bits per key and 6 probes give a ~2% false-positive rate, the target used by
 * the table filters. The bit array is a Uint8Array so it can be written to disk as-is.
 */

import { assert } from '../../errors.js';

export const BLOOM_BITS_PER_KEY = 8.2;
export const BLOOM_PROBE_COUNT = 6;
const BLOOM_BITS_MIN = 1024;

function fmix32(value: number): number {
  let h = value;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Bit count for `keyCount` keys at the target rate, a multiple of 8, clamped to `bitCountMax`. */
export function bloomBitCountFor(keyCount: number, bitCountMax: number): number {
  const wanted = Math.max(BLOOM_BITS_MIN, Math.ceil(keyCount * BLOOM_BITS_PER_KEY));
  const clamped = Math.min(wanted, bitCountMax);
  return Math.ceil(clamped / 8) * 8;
}

export class BloomFilter {
  readonly bits: Uint8Array;
  readonly bitCount: number;
  readonly probeCount: number;

  constructor(bits: Uint8Array, probeCount: number = BLOOM_PROBE_COUNT) {
    assert(bits.length > 0, 'bloom filter has at least one byte');
    assert(probeCount >= 1 && probeCount <= 32, 'bloom probe count in 1..32');
    this.bits = bits;
    this.bitCount = bits.length * 8;
    this.probeCount = probeCount;
  }

  static withBitCount(bitCount: number, probeCount: number = BLOOM_PROBE_COUNT): BloomFilter {
    return new BloomFilter(new Uint8Array(Math.ceil(bitCount / 8)), probeCount);
  }

  /** Sets the key's bits; returns true when at least one bit was not set before. */
  add(keyHigh: number, keyLow: number): boolean {
    const first = fmix32(keyLow ^ 0x5bd1e995);
    const step = (fmix32(keyHigh ^ Math.imul(keyLow, 0x27d4eb2f)) | 1) >>> 0;
    const bitCount = this.bitCount;
    const bits = this.bits;
    let changed = false;
    for (let probe = 0; probe < this.probeCount; probe += 1) {
      const bit = (first + probe * step) % bitCount;
      const mask = 1 << (bit & 7);
      const byte = bits[bit >>> 3]!;
      if ((byte & mask) === 0) {
        bits[bit >>> 3] = byte | mask;
        changed = true;
      }
    }
    return changed;
  }

  mightContain(keyHigh: number, keyLow: number): boolean {
    const first = fmix32(keyLow ^ 0x5bd1e995);
    const step = (fmix32(keyHigh ^ Math.imul(keyLow, 0x27d4eb2f)) | 1) >>> 0;
    const bitCount = this.bitCount;
    const bits = this.bits;
    for (let probe = 0; probe < this.probeCount; probe += 1) {
      const bit = (first + probe * step) % bitCount;
      if ((bits[bit >>> 3]! & (1 << (bit & 7))) === 0) return false;
    }
    return true;
  }
}

/**
 * The in-memory midpoint cache of a table: the (hash, eventNumber) keys of every `stride`-th entry
 * and of the last one, in table order. A lookup binary-searches it to find the one page of
 * entries to read, so a table costs ~24 bytes of memory per `stride` entries, never its size.
 */

import { assert } from '../../errors.js';
import { ENTRY_SIZE_WORDS, readUint53, writeUint53, type HashKey } from './index-entry-codec.js';
import { MIDPOINT_SIZE_BYTES } from './ptable-format.js';

export class Midpoints {
  private readonly hashHigh: Uint32Array;
  private readonly hashLow: Uint32Array;
  private readonly eventNumber: Float64Array;
  private readonly entryIndex: Float64Array;

  constructor(readonly count: number) {
    this.hashHigh = new Uint32Array(count);
    this.hashLow = new Uint32Array(count);
    this.eventNumber = new Float64Array(count);
    this.entryIndex = new Float64Array(count);
  }

  set(midpoint: number, words: Uint32Array, word: number, entryIndex: number): void {
    this.hashLow[midpoint] = words[word]!;
    this.hashHigh[midpoint] = words[word + 1]!;
    this.eventNumber[midpoint] = readUint53(words, word + 2);
    this.entryIndex[midpoint] = entryIndex;
  }

  entryIndexOf(midpoint: number): number {
    return this.entryIndex[midpoint]!;
  }

  /**
   * The entry index to start scanning from for entries at or below (hash, eventNumber): the
   * index of the last midpoint strictly above the key, or 0 when there is none.
   */
  scanStart(key: HashKey, eventNumber: number): number {
    let low = 0;
    let high = this.count;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.isAbove(mid, key, eventNumber)) low = mid + 1;
      else high = mid;
    }
    return low === 0 ? 0 : this.entryIndex[low - 1]!;
  }

  private isAbove(midpoint: number, key: HashKey, eventNumber: number): boolean {
    const hashHigh = this.hashHigh[midpoint]!;
    if (hashHigh !== key.hashHigh) return hashHigh > key.hashHigh;
    const hashLow = this.hashLow[midpoint]!;
    if (hashLow !== key.hashLow) return hashLow > key.hashLow;
    return this.eventNumber[midpoint]! > eventNumber;
  }

  encode(): Buffer {
    const arrayBuffer = new ArrayBuffer(this.count * MIDPOINT_SIZE_BYTES);
    const words = new Uint32Array(arrayBuffer);
    for (let midpoint = 0; midpoint < this.count; midpoint += 1) {
      const word = midpoint * ENTRY_SIZE_WORDS;
      words[word] = this.hashLow[midpoint]!;
      words[word + 1] = this.hashHigh[midpoint]!;
      writeUint53(words, word + 2, this.eventNumber[midpoint]!);
      writeUint53(words, word + 4, this.entryIndex[midpoint]!);
    }
    return Buffer.from(arrayBuffer);
  }

  /** Decodes `count` midpoints; `bytes` must be word-aligned. Validates the indexes' order. */
  static decode(bytes: Buffer, count: number, entryCount: number): Midpoints | undefined {
    assert(bytes.byteOffset % 4 === 0, 'midpoint bytes are word-aligned');
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, count * ENTRY_SIZE_WORDS);
    const midpoints = new Midpoints(count);
    let previousIndex = -1;
    for (let midpoint = 0; midpoint < count; midpoint += 1) {
      const word = midpoint * ENTRY_SIZE_WORDS;
      const entryIndex = readUint53(words, word + 4);
      if (entryIndex <= previousIndex || entryIndex >= entryCount) return undefined;
      midpoints.set(midpoint, words, word, entryIndex);
      previousIndex = entryIndex;
    }
    return midpoints;
  }
}

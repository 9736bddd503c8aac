/**
 * The 24-byte on-disk index entry and its sort order, shared by the memtable dump, the table
 * reader and the merger. Layout (little-endian): uint64 stream hash | int64 event number |
 * int64 log position. Tables are sorted by (hash desc, eventNumber desc, logPosition desc).
 *
 * Hot loops address entries through a Uint32Array view (six words per entry) instead of Buffer
 * accessors or bigints: word 0/1 = hash low/high, 2/3 = event number low/high, 4/5 = position
 * low/high. That requires a little-endian host, which is asserted at load.
 */

import { endianness } from 'node:os';
import { assert } from '../../errors.js';
import type { IndexEntry } from './stream-index-port.js';

export const ENTRY_SIZE_BYTES = 24;
export const ENTRY_SIZE_WORDS = 6;
const TWO_POW_32 = 4294967296;

assert(endianness() === 'LE', 'the index codec needs a little-endian host');

/** A 64-bit stream hash split into two unsigned 32-bit halves, for fast comparisons. */
export interface HashKey {
  readonly hashHigh: number;
  readonly hashLow: number;
}

export function splitHash(hash: bigint): HashKey {
  return { hashHigh: Number(hash >> 32n), hashLow: Number(BigInt.asUintN(32, hash)) };
}

export function joinHash(hashHigh: number, hashLow: number): bigint {
  return (BigInt(hashHigh) << 32n) | BigInt(hashLow);
}

/** Writes a non-negative safe integer as two words at `word` (low, high). */
export function writeUint53(words: Uint32Array, word: number, value: number): void {
  words[word] = value >>> 0;
  words[word + 1] = Math.floor(value / TWO_POW_32);
}

export function readUint53(words: Uint32Array, word: number): number {
  return words[word]! + words[word + 1]! * TWO_POW_32;
}

export function assertEntryNumbers(eventNumber: number, logPosition: number): void {
  assert(Number.isSafeInteger(eventNumber) && eventNumber >= 0, 'event number is an integer >= 0');
  assert(Number.isSafeInteger(logPosition) && logPosition >= 0, 'log position is an integer >= 0');
}

/** Encodes entry `entryIndex` of `words`. Numbers must already be checked. */
export function encodeEntry(
  words: Uint32Array,
  entryIndex: number,
  key: HashKey,
  eventNumber: number,
  logPosition: number,
): void {
  const word = entryIndex * ENTRY_SIZE_WORDS;
  words[word] = key.hashLow;
  words[word + 1] = key.hashHigh;
  writeUint53(words, word + 2, eventNumber);
  writeUint53(words, word + 4, logPosition);
}

export function decodeEntry(words: Uint32Array, entryIndex: number): IndexEntry {
  const word = entryIndex * ENTRY_SIZE_WORDS;
  return {
    streamHash: joinHash(words[word + 1]!, words[word]!),
    eventNumber: readUint53(words, word + 2),
    logPosition: readUint53(words, word + 4),
  };
}

/**
 * Compares entry `entryIndex` of `words` with the key (hash, eventNumber, logPosition) in table
 * order: negative when the entry sorts first (is greater), 0 when equal, positive when after.
 */
export function compareEntryToKey(
  words: Uint32Array,
  entryIndex: number,
  key: HashKey,
  eventNumber: number,
  logPosition: number,
): number {
  const word = entryIndex * ENTRY_SIZE_WORDS;
  const high = words[word + 1]!;
  if (high !== key.hashHigh) return high > key.hashHigh ? -1 : 1;
  const low = words[word]!;
  if (low !== key.hashLow) return low > key.hashLow ? -1 : 1;
  const entryEventNumber = readUint53(words, word + 2);
  if (entryEventNumber !== eventNumber) return entryEventNumber > eventNumber ? -1 : 1;
  const entryLogPosition = readUint53(words, word + 4);
  if (entryLogPosition !== logPosition) return entryLogPosition > logPosition ? -1 : 1;
  return 0;
}

/** Compares two encoded entries in table order (negative: `a` sorts first). */
export function compareEntries(
  aWords: Uint32Array,
  aIndex: number,
  bWords: Uint32Array,
  bIndex: number,
): number {
  const a = aIndex * ENTRY_SIZE_WORDS;
  const b = bIndex * ENTRY_SIZE_WORDS;
  // Most significant word first: hash high, hash low, then the 53-bit numbers high word first.
  let x = aWords[a + 1]!;
  let y = bWords[b + 1]!;
  if (x === y) {
    x = aWords[a]!;
    y = bWords[b]!;
  }
  if (x === y) return compareNumbers(aWords, a + 2, bWords, b + 2);
  return x > y ? -1 : 1;
}

function compareNumbers(aWords: Uint32Array, a: number, bWords: Uint32Array, b: number): number {
  const aEventNumber = readUint53(aWords, a);
  const bEventNumber = readUint53(bWords, b);
  if (aEventNumber !== bEventNumber) return aEventNumber > bEventNumber ? -1 : 1;
  const aLogPosition = readUint53(aWords, a + 2);
  const bLogPosition = readUint53(bWords, b + 2);
  if (aLogPosition !== bLogPosition) return aLogPosition > bLogPosition ? -1 : 1;
  return 0;
}

/** Allocates a zero-filled, word-aligned buffer able to hold `entryCount` entries. */
export function allocEntryBuffer(entryCount: number): { bytes: Buffer; words: Uint32Array } {
  const arrayBuffer = new ArrayBuffer(entryCount * ENTRY_SIZE_BYTES);
  return { bytes: Buffer.from(arrayBuffer), words: new Uint32Array(arrayBuffer) };
}

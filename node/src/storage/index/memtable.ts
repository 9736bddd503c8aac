/**
 * The in-memory table: index entries added since the last flush, grouped per stream hash.
 * Each hash owns one flat array [eventNumber, logPosition, ...] kept in ascending
 * (eventNumber, logPosition) order. Appends in log order almost always arrive sorted; when they
 * do not (two streams sharing a hash, or a replayed older event) the list is marked unsorted and
 * sorted lazily on the next read, so add() stays O(1). All entries are kept, duplicates too.
 */

import type { IndexEntry } from './stream-index-port.js';
import type { IndexSource, RangeQuery } from './range-query.js';
import { allocEntryBuffer, encodeEntry, splitHash } from './index-entry-codec.js';

interface HashEntries {
  numbers: number[];
  sorted: boolean;
}

export class MemTable implements IndexSource {
  private readonly byHash = new Map<bigint, HashEntries>();
  private entryCountValue = 0;
  /** Log position just past the last record whose entries were added here. */
  upToLogPosition: number;

  constructor(upToLogPosition: number) {
    this.upToLogPosition = upToLogPosition;
  }

  get entryCount(): number {
    return this.entryCountValue;
  }

  get hashCount(): number {
    return this.byHash.size;
  }

  add(streamHash: bigint, eventNumber: number, logPosition: number): void {
    let entries = this.byHash.get(streamHash);
    if (entries === undefined) {
      entries = { numbers: [eventNumber, logPosition], sorted: true };
      this.byHash.set(streamHash, entries);
    } else {
      const numbers = entries.numbers;
      const lastEventNumber = numbers[numbers.length - 2]!;
      if (
        eventNumber < lastEventNumber ||
        (eventNumber === lastEventNumber && logPosition < numbers[numbers.length - 1]!)
      ) {
        entries.sorted = false;
      }
      numbers.push(eventNumber, logPosition);
    }
    this.entryCountValue += 1;
  }

  collect(query: RangeQuery, out: IndexEntry[]): void {
    const entries = this.byHash.get(query.streamHash);
    if (entries === undefined) return;
    const numbers = memTableSorted(entries);
    let pair = memTableLowerBound(numbers, query.beforeEventNumber, query.beforeLogPosition) - 1;
    let taken = 0;
    for (; pair >= 0 && taken < query.limit; pair -= 1) {
      const eventNumber = numbers[pair * 2]!;
      if (eventNumber < query.minEventNumber) break;
      out.push({ streamHash: query.streamHash, eventNumber, logPosition: numbers[pair * 2 + 1]! });
      taken += 1;
    }
  }

  /** Drops the entries `keep` rejects; returns how many were dropped. */
  retain(keep: (entry: IndexEntry) => boolean): number {
    let removed = 0;
    for (const [streamHash, entries] of this.byHash) {
      const kept: number[] = [];
      const numbers = entries.numbers;
      for (let i = 0; i < numbers.length; i += 2) {
        const eventNumber = numbers[i]!;
        const logPosition = numbers[i + 1]!;
        if (keep({ streamHash, eventNumber, logPosition })) kept.push(eventNumber, logPosition);
      }
      removed += (numbers.length - kept.length) / 2;
      if (kept.length === 0) this.byHash.delete(streamHash);
      else entries.numbers = kept;
    }
    this.entryCountValue -= removed;
    return removed;
  }

  /**
   * Encodes all entries in table order (hash desc, eventNumber desc, logPosition desc) as
   * chunks of at most `chunkEntryCount` entries. Each chunk is a fresh buffer the caller owns.
   */
  *encodeSorted(chunkEntryCount: number): Generator<Buffer> {
    const hashes = BigUint64Array.from(this.byHash.keys()).sort();
    let chunk = allocEntryBuffer(chunkEntryCount);
    let filled = 0;
    for (let hashIndex = hashes.length - 1; hashIndex >= 0; hashIndex -= 1) {
      const streamHash = hashes[hashIndex]!;
      const key = splitHash(streamHash);
      const numbers = memTableSorted(this.byHash.get(streamHash)!);
      for (let pair = numbers.length / 2 - 1; pair >= 0; pair -= 1) {
        encodeEntry(chunk.words, filled, key, numbers[pair * 2]!, numbers[pair * 2 + 1]!);
        filled += 1;
        if (filled === chunkEntryCount) {
          yield chunk.bytes;
          chunk = allocEntryBuffer(chunkEntryCount);
          filled = 0;
        }
      }
    }
    if (filled > 0) yield chunk.bytes.subarray(0, filled * 24);
  }
}

function memTableSorted(entries: HashEntries): number[] {
  if (entries.sorted) return entries.numbers;
  const numbers = entries.numbers;
  const pairCount = numbers.length / 2;
  const order = Array.from({ length: pairCount }, (_, pair) => pair);
  order.sort(
    (a, b) => numbers[a * 2]! - numbers[b * 2]! || numbers[a * 2 + 1]! - numbers[b * 2 + 1]!,
  );
  const sorted = new Array<number>(numbers.length);
  for (let i = 0; i < pairCount; i += 1) {
    sorted[i * 2] = numbers[order[i]! * 2]!;
    sorted[i * 2 + 1] = numbers[order[i]! * 2 + 1]!;
  }
  entries.numbers = sorted;
  entries.sorted = true;
  return sorted;
}

/** Index of the first pair >= (eventNumber, logPosition) in an ascending pair list. */
function memTableLowerBound(numbers: number[], eventNumber: number, logPosition: number): number {
  let low = 0;
  let high = numbers.length / 2;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const midEventNumber = numbers[mid * 2]!;
    const below =
      midEventNumber < eventNumber ||
      (midEventNumber === eventNumber && numbers[mid * 2 + 1]! < logPosition);
    if (below) low = mid + 1;
    else high = mid;
  }
  return low;
}

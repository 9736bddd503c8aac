import { describe, expect, it } from 'vitest';
import {
  ENTRY_SIZE_BYTES,
  allocEntryBuffer,
  compareEntries,
  compareEntryToKey,
  decodeEntry,
  encodeEntry,
  joinHash,
  splitHash,
} from './index-entry-codec.js';
import {
  decodePTableFooter,
  decodePTableHeader,
  encodePTableFooter,
  encodePTableHeader,
} from './ptable-format.js';

describe('index entry codec', () => {
  it('round-trips hashes, event numbers and positions at their extremes', () => {
    const cases = [
      { streamHash: 0n, eventNumber: 0, logPosition: 0 },
      { streamHash: (1n << 64n) - 1n, eventNumber: Number.MAX_SAFE_INTEGER, logPosition: 2 ** 32 },
      { streamHash: 0x80000000_00000001n, eventNumber: 2 ** 32 - 1, logPosition: 12_345 },
    ];
    const buffer = allocEntryBuffer(cases.length);
    cases.forEach(({ streamHash, eventNumber, logPosition }, i) => {
      encodeEntry(buffer.words, i, splitHash(streamHash), eventNumber, logPosition);
    });
    cases.forEach((entry, i) => expect(decodeEntry(buffer.words, i)).toEqual(entry));
    expect(buffer.bytes.length).toBe(cases.length * ENTRY_SIZE_BYTES);
    // Little-endian layout: uint64 hash first.
    expect(buffer.bytes.readBigUInt64LE(ENTRY_SIZE_BYTES)).toBe((1n << 64n) - 1n);
    expect(buffer.bytes.readBigUInt64LE(ENTRY_SIZE_BYTES * 2 + 8)).toBe(2n ** 32n - 1n);
    expect(joinHash(0xfedcba98, 0x76543210)).toBe(0xfedcba9876543210n);
  });

  it('orders by hash, then event number, then position, all descending and unsigned', () => {
    const buffer = allocEntryBuffer(4);
    encodeEntry(buffer.words, 0, splitHash(0xf000000000000000n), 1, 5);
    encodeEntry(buffer.words, 1, splitHash(0x0fffffffffffffffn), 9, 5);
    encodeEntry(buffer.words, 2, splitHash(0x0fffffffffffffffn), 8, 7);
    encodeEntry(buffer.words, 3, splitHash(0x0fffffffffffffffn), 8, 6);
    for (let i = 0; i < 3; i += 1) {
      expect(compareEntries(buffer.words, i, buffer.words, i + 1)).toBe(-1);
      expect(compareEntries(buffer.words, i + 1, buffer.words, i)).toBe(1);
    }
    const key = splitHash(0x0fffffffffffffffn);
    expect(compareEntryToKey(buffer.words, 2, key, 8, 7)).toBe(0);
    expect(compareEntryToKey(buffer.words, 2, key, 8, Infinity)).toBe(1);
    expect(compareEntryToKey(buffer.words, 0, key, 100, 0)).toBe(-1);
  });
});

describe('table header and footer codec', () => {
  it('round-trips and rejects a bad magic', () => {
    const header = encodePTableHeader({ formatVersion: 1, midpointStride: 128 });
    expect(decodePTableHeader(header, 'f')).toEqual({ formatVersion: 1, midpointStride: 128 });
    const footer = encodePTableFooter({ entryCount: 1000, midpointCount: 9, hashCount: 77 });
    footer.writeUInt32LE(0xdeadbeef, footer.length - 4);
    expect(decodePTableFooter(footer, 'f')).toEqual({
      entryCount: 1000, midpointCount: 9, hashCount: 77, checksum: 0xdeadbeef,
    });
    header[0] = 0;
    expect(() => decodePTableHeader(header, 'table-x')).toThrow('table-x');
  });
});

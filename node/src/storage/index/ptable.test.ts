import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BloomFilter } from './bloom-filter.js';
import { decodeBloomFilterFile, encodeBloomFilterFile } from './bloom-filter-file.js';
import { ENTRY_SIZE_BYTES, splitHash } from './index-entry-codec.js';
import { decodeIndexMap, encodeIndexMap, readIndexMap, writeIndexMap } from './index-map.js';
import { MemTable } from './memtable.js';
import { PTable } from './ptable.js';
import { PTABLE_HEADER_SIZE_BYTES } from './ptable-format.js';
import { mergeSortedChunks } from './ptable-merge.js';
import { writePTable } from './ptable-writer.js';
import type { IndexEntry } from './stream-index-port.js';

const log = pino({ level: 'silent' });
let directory = '';

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'edb-ptable-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

function memTableOf(entries: [bigint, number, number][]): MemTable {
  const mem = new MemTable(0);
  for (const [hash, eventNumber, logPosition] of entries) mem.add(hash, eventNumber, logPosition);
  return mem;
}

async function tableOf(mem: MemTable, chunkEntryCount = 7): Promise<PTable> {
  const written = await writePTable({
    directory,
    entryCountMax: mem.entryCount,
    hashCountMax: mem.hashCount,
    bloomBitCountMax: 2 ** 20,
    chunks: mem.encodeSorted(chunkEntryCount),
  });
  return PTable.fromWritten(directory, written!);
}

function rangeOf(source: MemTable | PTable, hash: bigint, from: number, to: number): IndexEntry[] {
  const out: IndexEntry[] = [];
  source.collect(
    {
      streamHash: hash,
      key: splitHash(hash),
      beforeEventNumber: to,
      beforeLogPosition: Infinity,
      minEventNumber: from,
      limit: Infinity,
    },
    out,
  );
  return out;
}

const BIG_HASH = 0xfedcba9876543210n;

describe('PTable', () => {
  it('round-trips entries with full 64-bit hashes and 53-bit numbers', async () => {
    const big = Number.MAX_SAFE_INTEGER;
    const mem = memTableOf([
      [BIG_HASH, 0, 10], [BIG_HASH, 1, big], [BIG_HASH, 2 ** 40, 30], [1n, 5, 50], [0n, 0, 0],
    ]);
    const written = await tableOf(mem);
    expect(rangeOf(written, BIG_HASH, 0, Infinity)).toEqual(rangeOf(mem, BIG_HASH, 0, Infinity));
    const positions = rangeOf(written, BIG_HASH, 0, Infinity).map((e) => e.logPosition);
    expect(positions).toEqual([30, big, 10]);
    written.close();
    const fileName = written.fileName;
    const opened = await PTable.open({ directory, fileName, verifyChecksum: true, log });
    for (const hash of [BIG_HASH, 1n, 0n, 2n]) {
      expect(rangeOf(opened, hash, 0, Infinity)).toEqual(rangeOf(mem, hash, 0, Infinity));
    }
    expect(opened.hashCount).toBe(3);
    opened.close();
  });

  it('finds ranges across many pages with a midpoint cache (stride 128)', async () => {
    const entries: [bigint, number, number][] = [];
    for (let i = 0; i < 20_000; i += 1) entries.push([BigInt(i % 13), Math.floor(i / 13), i]);
    const mem = memTableOf(entries);
    const table = await tableOf(mem, 4096);
    const queries = [[0n, 0, 2000], [5n, 100, 100], [12n, 1500, 1600], [3n, 1537, 9999]] as const;
    for (const [hash, from, to] of queries) {
      expect(rangeOf(table, hash, from, to)).toEqual(rangeOf(mem, hash, from, to));
    }
    await table.loadCache();
    expect(table.isCached).toBe(true);
    for (const [hash, from, to] of queries) {
      expect(rangeOf(table, hash, from, to)).toEqual(rangeOf(mem, hash, from, to));
    }
    table.close();
  });

  it('raises EDB_INDEX_CORRUPT naming the file when a byte is flipped', async () => {
    const mem = memTableOf([[1n, 0, 10], [2n, 0, 20], [3n, 1, 30]]);
    const table = await tableOf(mem);
    table.close();
    const path = join(directory, table.fileName);
    const bytes = await readFile(path);
    bytes[PTABLE_HEADER_SIZE_BYTES + ENTRY_SIZE_BYTES + 9]! ^= 0x01;
    await writeFile(path, bytes);
    const opening = PTable.open({ directory, fileName: table.fileName, verifyChecksum: true, log });
    await expect(opening).rejects.toMatchObject({ code: 'EDB_INDEX_CORRUPT' });
    await expect(opening).rejects.toThrow(table.fileName);
  });

  it('is searched without a filter when its bloom filter file is missing or damaged', async () => {
    const mem = memTableOf([[1n, 0, 10], [2n, 0, 20]]);
    const table = await tableOf(mem);
    table.close();
    const filterPath = join(directory, `${table.fileName}.bloomfilter`);
    const filterBytes = await readFile(filterPath);
    filterBytes[30]! ^= 0xff;
    await writeFile(filterPath, filterBytes);
    const fileName = table.fileName;
    const damaged = await PTable.open({ directory, fileName, verifyChecksum: true, log });
    expect(damaged.bloom).toBeUndefined();
    const expected = [{ streamHash: 2n, eventNumber: 0, logPosition: 20 }];
    expect(rangeOf(damaged, 2n, 0, 5)).toEqual(expected);
    damaged.close();
    await rm(filterPath);
    const missing = await PTable.open({ directory, fileName, verifyChecksum: true, log });
    expect(missing.mightContain(splitHash(99n))).toBe(true);
    missing.close();
  });

  it('merges tables keeping collisions and dropping exact duplicates', async () => {
    const a = await tableOf(memTableOf([[9n, 0, 10], [9n, 1, 30], [4n, 0, 20]]));
    const b = await tableOf(memTableOf([[9n, 1, 40], [9n, 1, 30], [4n, 1, 50]]));
    const written = await writePTable({
      directory,
      entryCountMax: 6,
      hashCountMax: 4,
      bloomBitCountMax: 2 ** 20,
      chunks: mergeSortedChunks([a.readChunks(2), b.readChunks(2)], 2),
    });
    const merged = PTable.fromWritten(directory, written!);
    expect(merged.entryCount).toBe(5);
    expect(rangeOf(merged, 9n, 0, 9).map((e) => [e.eventNumber, e.logPosition])).toEqual([
      [1, 40], [1, 30], [0, 10],
    ]);
    for (const table of [a, b, merged]) table.close();
  });
});

describe('bloom filter', () => {
  it('has a false-positive rate near the 2% target and no false negatives', () => {
    const keyCount = 50_000;
    const filter = BloomFilter.withBitCount(Math.ceil(keyCount * 8.2));
    for (let key = 0; key < keyCount; key += 1) filter.add(key * 7, key);
    for (let key = 0; key < keyCount; key += 1) {
      expect(filter.mightContain(key * 7, key)).toBe(true);
    }
    let falsePositives = 0;
    const probeCount = 200_000;
    for (let probe = 0; probe < probeCount; probe += 1) {
      if (filter.mightContain(probe * 7 + 3, probe + keyCount)) falsePositives += 1;
    }
    const rate = falsePositives / probeCount;
    expect(rate).toBeGreaterThan(0.005);
    expect(rate).toBeLessThan(0.03);
  });

  it('round-trips through its file and rejects a flipped byte', () => {
    const filter = BloomFilter.withBitCount(4096);
    filter.add(1, 2);
    const bytes = encodeBloomFilterFile(filter);
    expect(decodeBloomFilterFile(bytes)?.mightContain(1, 2)).toBe(true);
    bytes[40]! ^= 0x10;
    expect(decodeBloomFilterFile(bytes)).toBeUndefined();
  });
});

describe('indexmap', () => {
  const map = {
    persistedLogPosition: 123_456_789,
    tables: [
      { level: 0, fileName: '3f0c2b1e-8d4a-4c6b-9e2f-0a1b2c3d4e5f' },
      { level: 2, fileName: 'a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d' },
    ],
  };

  it('round-trips and is read as empty when missing', async () => {
    expect(decodeIndexMap(encodeIndexMap(map))).toEqual(map);
    expect(await readIndexMap(directory)).toEqual({ persistedLogPosition: 0, tables: [] });
    await writeIndexMap(directory, map);
    expect(await readIndexMap(directory)).toEqual(map);
  });

  it('raises EDB_INDEX_CORRUPT naming the file when a byte is flipped', async () => {
    await writeIndexMap(directory, map);
    const path = join(directory, 'indexmap');
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace('123456789', '123456788'));
    const reading = readIndexMap(directory);
    await expect(reading).rejects.toMatchObject({ code: 'EDB_INDEX_CORRUPT' });
    await expect(reading).rejects.toThrow('indexmap');
  });
});

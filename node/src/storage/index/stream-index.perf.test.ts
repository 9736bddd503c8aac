import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { openStreamIndex } from './open-stream-index.js';
import { streamHash } from './stream-hash.js';
import type { IndexEntry } from './stream-index-port.js';
import type { PersistentStreamIndex } from './stream-index.js';

const ENTRY_COUNT = 1_000_000;
const HASH_COUNT = 100_000;
const BATCH_SIZE = 10;
const LOOKUP_COUNT = 50_000;

function measureLookups(index: PersistentStreamIndex, hashes: bigint[]): number {
  const startMs = performance.now();
  let found = 0;
  for (let i = 0; i < LOOKUP_COUNT; i += 1) {
    const hash = hashes[(i * 7919) % HASH_COUNT]!;
    found += index.getRange(hash, 0, Number.MAX_SAFE_INTEGER).length;
  }
  expect(found).toBe(LOOKUP_COUNT * (ENTRY_COUNT / HASH_COUNT));
  return LOOKUP_COUNT / ((performance.now() - startMs) / 1000);
}

describe('stream index at scale', () => {
  it('adds 1,000,000 entries across 100,000 hashes and looks them up', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'edb-index-perf-'));
    const log = pino({ level: 'silent' });
    const index = await openStreamIndex({
      indexPath: directory, log, memOnly: false, maxMemTableSize: 250_000,
    });
    const hashes = Array.from({ length: HASH_COUNT }, (_, i) => streamHash(`stream-${i}`));
    const batch: IndexEntry[] = [];
    const addStartMs = performance.now();
    for (let i = 0; i < ENTRY_COUNT; i += 1) {
      const hashIndex = i % HASH_COUNT;
      const eventNumber = Math.floor(i / HASH_COUNT);
      batch.push({ streamHash: hashes[hashIndex]!, eventNumber, logPosition: i * 100 });
      if (batch.length === BATCH_SIZE) {
        index.add(batch, i * 100 + 100);
        batch.length = 0;
      }
    }
    const addRate = ENTRY_COUNT / ((performance.now() - addStartMs) / 1000);
    const mixedRate = measureLookups(index, hashes);
    const flushStartMs = performance.now();
    await index.flush();
    const flushMs = performance.now() - flushStartMs;
    const tableRate = measureLookups(index, hashes);
    const mergeStartMs = performance.now();
    await index.mergeAll();
    const mergeMs = performance.now() - mergeStartMs;
    const mergedRate = measureLookups(index, hashes);
    const figures = {
      addsPerSecond: Math.round(addRate),
      lookupsPerSecondWhileFlushing: Math.round(mixedRate),
      lookupsPerSecondFromTables: Math.round(tableRate),
      lookupsPerSecondOneTable: Math.round(mergedRate),
      flushWaitMs: Math.round(flushMs),
      mergeAllMs: Math.round(mergeMs),
      stats: index.stats(),
    };
    console.log(JSON.stringify(figures));
    expect(index.stats().tableCount).toBe(1);
    expect(addRate).toBeGreaterThan(50_000);
    await index.close();
    await rm(directory, { recursive: true, force: true });
  }, 120_000);
});

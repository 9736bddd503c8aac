import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStreamIndex, type OpenStreamIndexOptions } from './open-stream-index.js';
import type { PersistentStreamIndex } from './stream-index.js';
import type { IndexEntry } from './stream-index-port.js';

const log = pino({ level: 'silent' });
let directory = '';
const opened: PersistentStreamIndex[] = [];

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'edb-index-'));
});

afterEach(async () => {
  for (const index of opened.splice(0)) await index.close().catch(() => undefined);
  await rm(directory, { recursive: true, force: true });
});

async function open(options: Partial<OpenStreamIndexOptions> = {}): Promise<PersistentStreamIndex> {
  const index = await openStreamIndex({ indexPath: directory, log, memOnly: false, ...options });
  opened.push(index);
  return index;
}

/** Deterministic PRNG (mulberry32) so failures replay. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The reference model: all entries, answered by filtering and sorting. */
function modelRange(model: IndexEntry[], hash: bigint, from: number, to: number): IndexEntry[] {
  const found = model
    .filter((e) => e.streamHash === hash && e.eventNumber >= from && e.eventNumber <= to)
    .sort((a, b) => b.eventNumber - a.eventNumber || b.logPosition - a.logPosition);
  return found.filter(
    (e, i) =>
      i === 0 ||
      found[i - 1]!.eventNumber !== e.eventNumber ||
      found[i - 1]!.logPosition !== e.logPosition,
  );
}

function entry(streamHash: bigint, eventNumber: number, logPosition: number): IndexEntry {
  return { streamHash, eventNumber, logPosition };
}

/**
 * Adds `count` entries, one per write, round-robin over the hashes 0..streams-1, `spacing` log
 * bytes apart; returns them (the model the index must agree with).
 */
function addRoundRobin(index: PersistentStreamIndex, count: number, streams: number, spacing: number): IndexEntry[] {
  const model: IndexEntry[] = [];
  for (let i = 0; i < count; i += 1) {
    const added = entry(BigInt(i % streams), Math.floor(i / streams), i * spacing);
    model.push(added);
    index.add([added], i * spacing + spacing);
  }
  return model;
}

describe('PersistentStreamIndex', () => {
  it('keeps all entries of two streams that share a hash, in memory and in tables', async () => {
    const hasher = (name: string): bigint => (name.startsWith('shared') ? 42n : 7n);
    const index = await open({ hasher, maxMemTableSize: 4 });
    const a = index.hasher('shared-a');
    const b = index.hasher('shared-b');
    expect(a).toBe(b);
    index.add([entry(a, 0, 100), entry(b, 0, 200)], 300);
    index.add([entry(a, 1, 300), entry(b, 1, 400)], 500);
    index.add([entry(b, 2, 500)], 600);
    const expected = [
      entry(42n, 2, 500), entry(42n, 1, 400), entry(42n, 1, 300),
      entry(42n, 0, 200), entry(42n, 0, 100),
    ];
    expect(index.getRange(42n, 0, 10)).toEqual(expected);
    await index.flush();
    expect(index.stats().tableCount).toBeGreaterThan(0);
    expect(index.getRange(42n, 0, 10)).toEqual(expected);
    expect([...index.iterateDescending(42n)]).toEqual(expected);
    expect(index.getRange(42n, 1, 1)).toEqual(expected.slice(1, 3));
  });

  it('gives identical lookups after flush and reopen from the directory', async () => {
    const index = await open({ maxMemTableSize: 1000, tableCacheSizeBytesMax: 0 });
    const random = prng(7);
    const model: IndexEntry[] = [];
    const next = new Map<bigint, number>();
    for (let position = 0; position < 5000; position += 1) {
      const hash = BigInt(Math.floor(random() * 300)) * 0x9e3779b97f4a7c15n % (1n << 64n);
      const eventNumber = next.get(hash) ?? 0;
      next.set(hash, eventNumber + 1);
      const added = entry(hash, eventNumber, position * 10);
      model.push(added);
      index.add([added], position * 10 + 10);
    }
    await index.flush();
    expect(index.persistedLogPosition).toBe(50_000);
    const before = [...next.keys()].map((hash) => index.getRange(hash, 0, Infinity));
    await index.close();
    const reopened = await open({ maxMemTableSize: 1000 });
    expect(reopened.persistedLogPosition).toBe(50_000);
    expect(reopened.addedLogPosition).toBe(50_000);
    const after = [...next.keys()].map((hash) => reopened.getRange(hash, 0, Infinity));
    expect(after).toEqual(before);
    for (const hash of next.keys()) {
      expect(reopened.getRange(hash, 0, Infinity)).toEqual(modelRange(model, hash, 0, Infinity));
    }
  });

  it('merges levels in the background and matches a reference model (randomised)', async () => {
    for (const seed of [1, 2, 3]) {
      const random = prng(seed);
      // Odd seeds read tables page by page, even seeds hold them in memory.
      const tableCacheSizeBytesMax = seed % 2 === 1 ? 0 : 1 << 20;
      const maxMemTableSize = 50 + Math.floor(random() * 200);
      const index = await open({ maxMemTableSize, tableCacheSizeBytesMax });
      const model: IndexEntry[] = [];
      let position = 0;
      for (let batch = 0; batch < 400; batch += 1) {
        const entries: IndexEntry[] = [];
        for (let i = 0; i < 1 + Math.floor(random() * 8); i += 1) {
          const hash = BigInt(Math.floor(random() * 40));
          entries.push(entry(hash, Math.floor(random() * 60), position));
          position += 1 + Math.floor(random() * 100);
        }
        model.push(...entries);
        index.add(entries, position);
        if (random() < 0.02) await index.flush();
        if (random() < 0.1) {
          // Let background flushes and merges run part-way, then check a stream mid-flight.
          await new Promise((resolve) => setImmediate(resolve));
          const hash = BigInt(Math.floor(random() * 40));
          expect([...index.iterateDescending(hash)]).toEqual(modelRange(model, hash, 0, Infinity));
        }
      }
      for (let query = 0; query < 200; query += 1) {
        const hash = BigInt(Math.floor(random() * 42));
        const from = Math.floor(random() * 70) - 5;
        const to = from + Math.floor(random() * 40);
        expect(index.getRange(hash, from, to)).toEqual(modelRange(model, hash, from, to));
      }
      await index.mergeAll();
      expect(index.stats().tableCount).toBe(1);
      expect(index.stats().memTableEntries).toBe(0);
      for (let hash = 0n; hash < 42n; hash += 1n) {
        const all = modelRange(model, hash, 0, Infinity);
        expect(index.getRange(hash, 0, Infinity)).toEqual(all);
        expect([...index.iterateDescending(hash)]).toEqual(all);
      }
      await index.close();
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('recovers by replaying from persistedLogPosition after losing the memtables', async () => {
    const random = prng(11);
    const model: IndexEntry[] = [];
    let index = await open({ maxMemTableSize: 37 });
    let position = 0;
    for (let round = 0; round < 6; round += 1) {
      for (let batch = 0; batch < 60; batch += 1) {
        const added = entry(BigInt(Math.floor(random() * 9)), Math.floor(random() * 30), position);
        model.push(added);
        position += 1 + Math.floor(random() * 50);
        index.add([added], position);
      }
      for (let hash = 0n; hash < 9n; hash += 1n) {
        const all = modelRange(model, hash, 0, Infinity);
        expect([...index.iterateDescending(hash)]).toEqual(all);
      }
      // A crash loses the memtables; close() only waits for the background work.
      await index.close();
      index = await open({ maxMemTableSize: 37 });
      const replayFrom = index.persistedLogPosition;
      expect(index.addedLogPosition).toBe(replayFrom);
      for (const replayed of model.filter((e) => e.logPosition >= replayFrom)) {
        index.add([replayed], replayed.logPosition + 1);
      }
      for (let hash = 0n; hash < 9n; hash += 1n) {
        expect(index.getRange(hash, 0, Infinity)).toEqual(modelRange(model, hash, 0, Infinity));
      }
    }
  });

  it('does not lose entries when memtables fill faster than they flush', async () => {
    const index = await open({ maxMemTableSize: 10 });
    const model = addRoundRobin(index, 400, 3, 1);
    expect(index.stats().frozenMemTableCount).toBeGreaterThan(1);
    for (let hash = 0n; hash < 3n; hash += 1n) {
      const all = modelRange(model, hash, 0, Infinity);
      expect(index.getRange(hash, 0, Infinity)).toEqual(all);
      // Each source holds fewer entries than a batch, together more: nothing may be skipped.
      expect([...index.iterateDescending(hash)]).toEqual(all);
    }
    await index.flush();
    expect(index.stats()).toMatchObject({ memTableEntries: 0, frozenMemTableCount: 0 });
    const levels = index.tableLevels();
    expect(new Set(levels).size).toBe(levels.length);
    for (let hash = 0n; hash < 3n; hash += 1n) {
      expect(index.getRange(hash, 0, Infinity)).toEqual(modelRange(model, hash, 0, Infinity));
    }
  });

});

describe('PersistentStreamIndex.removeEntries', () => {
  it('rewrites the tables without the rejected entries, and keeps later adds', async () => {
    for (const memOnly of [false, true]) {
      const index = await open({ maxMemTableSize: 7, memOnly });
      const model = addRoundRobin(index, 100, 4, 10);
      const keep = (e: IndexEntry): boolean => e.eventNumber >= 10 || e.streamHash === 3n;
      const { removedEntryCount } = await index.removeEntries(keep);
      expect(removedEntryCount).toBe(30);
      if (!memOnly) expect(index.stats().tableCount).toBe(1);
      index.add([entry(0n, 25, 5000)], 5010);
      const kept = [...model.filter(keep), entry(0n, 25, 5000)];
      for (let hash = 0n; hash < 4n; hash += 1n) {
        expect(index.getRange(hash, 0, Infinity)).toEqual(modelRange(kept, hash, 0, Infinity));
      }
      const all = await index.removeEntries(() => false);
      expect(all.removedEntryCount).toBe(kept.length);
      expect(index.stats()).toMatchObject({ tableCount: 0, memTableEntries: 0 });
      expect(index.getRange(0n, 0, Infinity)).toEqual([]);
      await index.close();
    }
  });
});

describe('PersistentStreamIndex.prepareRemoveEntries', () => {
  it('commit: the filtered table replaces the merged ones; tables flushed meanwhile stay; reopen agrees', async () => {
    const index = await open({ maxMemTableSize: 7 });
    const model = addRoundRobin(index, 100, 4, 10);
    const keep = (e: IndexEntry): boolean => e.eventNumber >= 10 || e.streamHash === 3n;
    const prepared = await index.prepareRemoveEntries(keep);
    expect(prepared!.removedEntryCount).toBe(30);
    // Until the commit, reads see everything, and adds (and their flushes) go on.
    expect(index.getRange(0n, 0, Infinity)).toEqual(modelRange(model, 0n, 0, Infinity));
    const later: IndexEntry[] = [];
    for (let position = 100; position < 120; position += 1) {
      const added = entry(BigInt(position % 4), Math.floor(position / 4), position * 10);
      later.push(added);
      index.add([added], position * 10 + 10);
    }
    await index.flush();
    expect(await prepared!.commit()).toBe(true);
    const expected = [...model.filter(keep), ...later];
    for (let hash = 0n; hash < 4n; hash += 1n) {
      expect(index.getRange(hash, 0, Infinity)).toEqual(modelRange(expected, hash, 0, Infinity));
    }
    await index.close();
    opened.splice(opened.indexOf(index), 1);
    const reopened = await open({ maxMemTableSize: 7 });
    for (let hash = 0n; hash < 4n; hash += 1n) {
      expect(reopened.getRange(hash, 0, Infinity)).toEqual(modelRange(expected, hash, 0, Infinity));
    }
  });

  it('abort: nothing changes and the prepared table file is deleted; level merging resumes', async () => {
    const index = await open({ maxMemTableSize: 4 });
    const model = addRoundRobin(index, 40, 5, 1);
    await index.flush();
    const filesBefore = (await readdir(directory)).sort();
    const prepared = await index.prepareRemoveEntries(() => false);
    expect(prepared!.removedEntryCount).toBe(40);
    await prepared!.abort();
    expect((await readdir(directory)).sort()).toEqual(filesBefore);
    for (let hash = 0n; hash < 5n; hash += 1n) {
      expect(index.getRange(hash, 0, Infinity)).toEqual(modelRange(model, hash, 0, Infinity));
    }
    for (let position = 40; position < 60; position += 1) index.add([entry(9n, position, position)], position + 1);
    await index.flush();
    const levels = index.tableLevels();
    expect(new Set(levels).size).toBe(levels.length);
  });

  it('is not offered by an in-memory index', async () => {
    const index = await open({ memOnly: true });
    expect(await index.prepareRemoveEntries(() => true)).toBeUndefined();
  });
});

describe('PersistentStreamIndex full merges', () => {
  it('rewrites every table in one merge: the flush before it does not cascade level merges', async () => {
    for (const run of ['removeEntries', 'mergeAll'] as const) {
      const messages: string[] = [];
      const capture = pino({ level: 'info' }, { write: (line: string) => { messages.push(JSON.parse(line).msg as string); } });
      const index = await open({ maxMemTableSize: 4, log: capture });
      const model: IndexEntry[] = [];
      // 28 entries: tables on levels 2, 1 and 0, so one more flushed table would cascade 3 merges.
      for (let position = 0; position < 31; position += 1) {
        const added = entry(BigInt(position % 5), Math.floor(position / 5), position);
        model.push(added);
        index.add([added], position + 1);
        if (position === 27) {
          await index.flush();
          expect(index.tableLevels().sort()).toEqual([0, 1, 2]);
        }
      }
      messages.length = 0;
      const keep = (e: IndexEntry): boolean => run === 'mergeAll' || e.eventNumber !== 2;
      if (run === 'removeEntries') expect((await index.removeEntries(keep)).removedEntryCount).toBe(5);
      else await index.mergeAll();
      expect(messages.filter((m) => m === 'index tables merged')).toHaveLength(1);
      expect(index.tableLevels()).toHaveLength(1);
      for (let hash = 0n; hash < 5n; hash += 1n) {
        expect(index.getRange(hash, 0, Infinity)).toEqual(modelRange(model.filter(keep), hash, 0, Infinity));
      }
      // Level merging carries on afterwards as usual.
      for (let position = 31; position < 47; position += 1) index.add([entry(7n, position, position)], position + 1);
      await index.flush();
      const levels = index.tableLevels();
      expect(new Set(levels).size).toBe(levels.length);
      await index.close();
      await rm(directory, { recursive: true, force: true });
      directory = await mkdtemp(join(tmpdir(), 'edb-index-'));
    }
  });
});

describe('PersistentStreamIndex.removeEntries pacing', () => {
  it('awaits `between` after each written piece of the new table, and the result is complete', async () => {
    const index = await open({ maxMemTableSize: 100_000 });
    const count = 140_000;
    for (let position = 0; position < count; position += 1000) {
      index.add(Array.from({ length: 1000 }, (_, i) => entry(BigInt((position + i) % 7), Math.floor((position + i) / 7), position + i)), position + 1000);
    }
    let pauses = 0;
    const between = async (): Promise<void> => {
      pauses += 1;
      await new Promise((resolve) => setTimeout(resolve, 1));
    };
    const { removedEntryCount } = await index.removeEntries((e) => e.logPosition % 2 === 0, between);
    expect(removedEntryCount).toBe(count / 2);
    expect(pauses).toBe(5); // 70,000 kept, in paced pieces of 16,384 entries
    expect(index.getRange(3n, 0, Infinity).length).toBe(10_000);
  });
});

describe('PersistentStreamIndex files', () => {
  it('deletes replaced table files only after the new indexmap is written', async () => {
    const index = await open({ maxMemTableSize: 5 });
    for (let position = 0; position < 40; position += 1) {
      index.add([entry(BigInt(position % 3), position, position)], position + 1);
    }
    await index.mergeAll();
    const files = (await readdir(directory)).sort();
    const tables = files.filter((name) => !name.endsWith('.bloomfilter') && name !== 'indexmap');
    expect(tables).toHaveLength(1);
    expect(files.filter((name) => name.endsWith('.tmp'))).toHaveLength(0);
  });

  it('skips tables whose bloom filter excludes the hash', async () => {
    const index = await open({ maxMemTableSize: 100 });
    for (let position = 0; position < 100; position += 1) {
      const hash = (BigInt(position) * 0x9e3779b97f4a7c15n) % (1n << 64n);
      index.add([entry(hash, 0, position)], position + 1);
    }
    await index.flush();
    for (let i = 0; i < 100; i += 1) index.getRange(BigInt(i) * 0x51ed27n + 12345n, 0, 10);
    expect(index.stats().bloomFilterNegatives).toBeGreaterThan(90);
  });

  it('resetAbove deletes the durable index when it covers more than the log', async () => {
    const index = await open({ maxMemTableSize: 5 });
    for (let position = 0; position < 20; position += 1) {
      index.add([entry(1n, position, position * 10)], position * 10 + 10);
    }
    await index.flush();
    expect(await index.resetAbove(1000)).toBe(false);
    expect(index.getRange(1n, 0, 100)).toHaveLength(20);
    expect(await index.resetAbove(50)).toBe(true);
    expect(index.persistedLogPosition).toBe(0);
    expect(index.addedLogPosition).toBe(0);
    expect(index.getRange(1n, 0, 100)).toEqual([]);
    expect(await readdir(directory)).toEqual([]);
    await index.close();
    const reopened = await open();
    expect(reopened.persistedLogPosition).toBe(0);
  });

  it('removes leftovers of an interrupted flush or merge at open', async () => {
    const index = await open({ maxMemTableSize: 3 });
    index.add([entry(1n, 0, 0), entry(1n, 1, 10), entry(1n, 2, 20)], 30);
    await index.flush();
    await index.close();
    const stray = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    await writeFile(join(directory, stray), 'x');
    await writeFile(join(directory, `${stray}.bloomfilter`), 'x');
    await writeFile(join(directory, 'indexmap.1234.tmp'), 'x');
    const before = (await readdir(directory)).length;
    const reopened = await open();
    expect((await readdir(directory)).length).toBe(before - 3);
    expect(reopened.getRange(1n, 0, 5)).toHaveLength(3);
  });

  it('refuses to open with EDB_INDEX_CORRUPT when a listed table has a flipped byte', async () => {
    const index = await open({ maxMemTableSize: 3 });
    index.add([entry(1n, 0, 0), entry(1n, 1, 10), entry(1n, 2, 20)], 30);
    await index.flush();
    await index.close();
    const table = (await readdir(directory)).find((name) => /^[0-9a-f-]{36}$/.test(name))!;
    const bytes = await readFile(join(directory, table));
    bytes[40]! ^= 0x04;
    await writeFile(join(directory, table), bytes);
    const opening = open();
    await expect(opening).rejects.toMatchObject({ code: 'EDB_INDEX_CORRUPT' });
    await expect(opening).rejects.toThrow(table);
  });

  it('reports a background write failure from flush and from every later add', async () => {
    const index = await open({ maxMemTableSize: 2 });
    await rm(directory, { recursive: true, force: true });
    index.add([entry(1n, 0, 0), entry(1n, 1, 10)], 20);
    await expect(index.flush()).rejects.toMatchObject({ name: 'FatalError' });
    expect(() => index.add([entry(1n, 2, 20)], 30)).toThrow('index background work failed');
    expect(index.getRange(1n, 0, 5)).toHaveLength(2);
    await expect(index.close()).rejects.toThrow();
    opened.splice(opened.indexOf(index), 1);
  });

  it('keeps everything in memory when memOnly and writes no file', async () => {
    const indexPath = join(directory, 'none');
    const index = await openStreamIndex({ indexPath, log, memOnly: true, maxMemTableSize: 2 });
    for (let position = 0; position < 10; position += 1) {
      index.add([entry(5n, position, position)], position + 1);
    }
    await index.flush();
    await index.mergeAll();
    expect(index.getRange(5n, 3, 4).map((e) => e.eventNumber)).toEqual([4, 3]);
    expect(index.persistedLogPosition).toBe(10);
    expect(await readdir(directory)).toEqual([]);
    await index.close();
  });
});

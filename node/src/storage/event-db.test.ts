import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { engineOptions, jsonEvent, openTestEngine, tempDir } from '../../../test/support/engine-fixture.js';
import { RecordingListener } from '../../../test/support/scavenge-fixture.js';
import { replayLogBytes, type ChunkExtent, type Engine } from './event-db.js';
import type { AppendResult } from './event-db-types.js';

const engines: Engine[] = [];
async function fresh(overrides = {}, deps = {}): Promise<{ db: Engine; dir: string }> {
  const dir = tempDir();
  const db = await openTestEngine(engineOptions(dir, overrides), deps);
  engines.push(db);
  return { db, dir };
}
afterEach(async () => {
  for (const db of engines.splice(0)) await db.close().catch(() => undefined);
});

type Outcome = 'ok' | 'wrong' | 'deleted';
function outcome(r: AppendResult): Outcome {
  return r.kind === 'success' ? 'ok' : r.kind === 'wrong-expected-version' ? 'wrong' : 'deleted';
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function readNumbers(db: Engine, stream: string): Promise<number[] | string> {
  const r = await db.readStream(stream, 0, 4096, 'forward');
  return r.kind === 'success' ? r.events.map((e) => e.eventNumber) : r.kind;
}

describe('expected version', () => {
  const setups = {
    new: async (_db: Engine) => {},
    existing: async (db: Engine) => { await db.append('s', -1, [jsonEvent(0), jsonEvent(1)]); },
    'soft-deleted': async (db: Engine) => { await db.append('s', -1, [jsonEvent(0), jsonEvent(1)]); await db.deleteStream('s', -2, false); },
    'hard-deleted': async (db: Engine) => { await db.append('s', -1, [jsonEvent(0), jsonEvent(1)]); await db.deleteStream('s', -2, true); },
  };
  // Expected outcomes per stream state for -2 (any), -1 (no stream), -4 (stream exists), 1 (the last event), 7 (wrong).
  const matrix: Record<keyof typeof setups, Record<string, Outcome>> = {
    new: { '-2': 'ok', '-1': 'ok', '-4': 'wrong', '1': 'wrong', '7': 'wrong' },
    existing: { '-2': 'ok', '-1': 'wrong', '-4': 'ok', '1': 'ok', '7': 'wrong' },
    'soft-deleted': { '-2': 'ok', '-1': 'ok', '-4': 'deleted', '1': 'ok', '7': 'wrong' },
    'hard-deleted': { '-2': 'deleted', '-1': 'deleted', '-4': 'deleted', '1': 'deleted', '7': 'deleted' },
  };
  for (const [state, row] of Object.entries(matrix)) {
    for (const [expected, want] of Object.entries(row)) {
      it(`${state} stream with expected version ${expected} -> ${want}`, async () => {
        const { db } = await fresh();
        await setups[state as keyof typeof setups](db);
        const r = await db.append('s', Number(expected), [jsonEvent('x')]);
        expect(outcome(r)).toBe(want);
        if (r.kind === 'wrong-expected-version') expect(r.currentVersion).toBe(state === 'new' ? -1 : 1);
      });
    }
  }

  it('recreating a soft-deleted stream continues numbering and hides the old events', async () => {
    const { db } = await fresh();
    await db.append('s', -1, [jsonEvent(0), jsonEvent(1)]);
    await db.deleteStream('s', 1, false);
    expect(await readNumbers(db, 's')).toBe('stream-not-found');
    const r = await db.append('s', -2, [jsonEvent(2)]);
    expect(r).toMatchObject({ kind: 'success', firstEventNumber: 2 });
    expect(await readNumbers(db, 's')).toEqual([2]);
    const meta = await db.getStreamMetadata('s');
    expect(meta.metadata.truncateBefore).toBe(2);
  });
});

describe('idempotency', () => {
  it('a retry with the same ids at the same expected version writes nothing and succeeds', async () => {
    const { db } = await fresh();
    const events = [jsonEvent(0), jsonEvent(1), jsonEvent(2)];
    const first = await db.append('s', -1, events);
    const retry = await db.append('s', -1, events);
    expect(retry).toMatchObject({ kind: 'success', firstEventNumber: 0, lastEventNumber: 2, idempotent: true });
    expect(first).toMatchObject({ kind: 'success', firstEventNumber: 0, lastEventNumber: 2 });
    await db.append('s', 2, [jsonEvent(3)]);
    expect(await db.append('s', 0, events.slice(1))).toMatchObject({ kind: 'success', idempotent: true, firstEventNumber: 1 });
    expect(await readNumbers(db, 's')).toEqual([0, 1, 2, 3]);
  });

  it('a retry with expected version any is recognised by its event ids', async () => {
    const { db } = await fresh();
    const events = [jsonEvent('a'), jsonEvent('b')];
    await db.append('s', -2, events);
    await db.append('other', -2, [jsonEvent('c')]);
    expect(await db.append('s', -2, events)).toMatchObject({ kind: 'success', idempotent: true, firstEventNumber: 0 });
    expect(await readNumbers(db, 's')).toEqual([0, 1]);
  });

  it('concurrent retries inside one group-commit batch do not duplicate', async () => {
    const { db } = await fresh();
    const events = [jsonEvent('a')];
    const results = await Promise.all([db.append('s', -1, events), db.append('s', -1, events), db.append('s', -1, events)]);
    expect(results.map(outcome)).toEqual(['ok', 'ok', 'ok']);
    expect(await readNumbers(db, 's')).toEqual([0]);
  });
});

describe('deletes and metadata', () => {
  it('deleted and truncated events disappear from stream reads but stay in $all', async () => {
    const { db } = await fresh();
    await db.append('gone', -1, [jsonEvent(0), jsonEvent(1)]);
    await db.append('hard', -1, [jsonEvent(0)]);
    await db.append('capped', -1, [0, 1, 2, 3, 4].map((n) => jsonEvent(n)));
    await db.deleteStream('gone', -2, false);
    await db.deleteStream('hard', -2, true);
    await db.setStreamMetadata('capped', -2, { $maxCount: 2 });
    expect(await readNumbers(db, 'gone')).toBe('stream-not-found');
    expect(await readNumbers(db, 'hard')).toBe('stream-deleted');
    expect(await readNumbers(db, 'capped')).toEqual([3, 4]);
    const all = await db.readAll(undefined, 1000, 'forward');
    const count = (s: string) => all.events.filter((e) => e.stream === s).length;
    expect(count('gone')).toBe(2);
    expect(count('hard')).toBe(2); // the event and the tombstone
    expect(count('capped')).toBe(5);
    expect(all.events.some((e) => e.stream === '$$capped' && e.eventType === '$metadata')).toBe(true);
  });

  it('$tb hides events before it and $maxAge hides old events', async () => {
    let now = 1_000_000_000_000;
    const { db } = await fresh({}, { nowMs: () => now });
    await db.append('t', -1, [0, 1, 2, 3].map((n) => jsonEvent(n)));
    await db.setStreamMetadata('t', -2, { $tb: 2 });
    expect(await readNumbers(db, 't')).toEqual([2, 3]);
    await db.append('aged', -1, [jsonEvent('old')]);
    now += 60_000;
    await db.append('aged', 0, [jsonEvent('new')]);
    await db.setStreamMetadata('aged', -2, { $maxAge: 30 });
    expect(await readNumbers(db, 'aged')).toEqual([1]);
  });

  it('soft-deleting a stream that does not exist answers wrong expected version', async () => {
    const { db } = await fresh();
    expect(await db.deleteStream('never', -2, false)).toEqual({ kind: 'wrong-expected-version', currentVersion: -1 });
  });

  it('writes to the metastream of a hard-deleted stream are refused', async () => {
    const { db } = await fresh();
    await db.append('h', -1, [jsonEvent(0)]);
    await db.deleteStream('h', 0, true);
    expect(await db.setStreamMetadata('h', -2, { $maxCount: 1 })).toEqual({ kind: 'stream-deleted' });
    expect(await db.streamState('h')).toEqual({ kind: 'hard-deleted' });
  });

  it('reads backward page by page to the start', async () => {
    const { db } = await fresh();
    await db.append('p', -1, Array.from({ length: 10 }, (_, i) => jsonEvent(i)));
    const seen: number[] = [];
    let from = -1;
    for (let i = 0; i < 10; i++) {
      const r = await db.readStream('p', from, 3, 'backward');
      if (r.kind !== 'success') throw new Error(r.kind);
      seen.push(...r.events.map((e) => e.eventNumber));
      if (r.isEndOfStream) break;
      from = r.nextEventNumber;
    }
    expect(seen).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });
});

describe('hash collisions', () => {
  it('two streams with the same hash both read right', async () => {
    const { db } = await fresh({}, { hasher: () => 42n });
    await db.append('alpha', -1, [jsonEvent('a0'), jsonEvent('a1')]);
    await db.append('beta', -1, [jsonEvent('b0')]);
    await db.append('alpha', 1, [jsonEvent('a2')]);
    expect(await readNumbers(db, 'alpha')).toEqual([0, 1, 2]);
    expect(await readNumbers(db, 'beta')).toEqual([0]);
    expect(await db.append('beta', 0, [jsonEvent('b1')])).toMatchObject({ kind: 'success', firstEventNumber: 1 });
    const beta = await db.readStream('beta', 0, 10, 'forward');
    expect(beta.kind === 'success' && beta.events.map((e) => JSON.parse(e.data.toString()))).toEqual(['b0', 'b1']);
    expect(db.stats().readIndex.hashCollisions).toBeGreaterThan(0);
  });
});

describe('durability and recovery', () => {
  it('reopens after many chunks and reads everything back', async () => {
    const dir = tempDir();
    const options = engineOptions(dir, { chunkSizeBytes: 8 * 1024 });
    let db = await openTestEngine(options);
    const writes = await Promise.all(Array.from({ length: 300 }, (_, i) => db.append(`s-${i % 13}`, -2, [jsonEvent({ i, pad: 'x'.repeat(100) })])));
    expect(writes.every((w) => w.kind === 'success')).toBe(true);
    // Every acknowledged append is visible, including those that had to wait for a new chunk
    // (regression: such a request was once acknowledged as an idempotent retry of itself).
    const live = await db.readAll(undefined, 4096, 'forward');
    expect(live.events.filter((e) => e.stream.startsWith('s-')).length).toBe(300);
    await db.close();
    expect(fs.readdirSync(options.dbPath).filter((f) => f.startsWith('chunk-')).length).toBeGreaterThan(5);
    db = await openTestEngine(options);
    engines.push(db);
    let total = 0;
    for (let s = 0; s < 13; s++) total += ((await readNumbers(db, `s-${s}`)) as number[]).length;
    expect(total).toBe(300);
    const all = await db.readAll(undefined, 4096, 'forward');
    expect(all.events.filter((e) => e.stream.startsWith('s-')).length).toBe(300);
  });

  it('preallocates the next chunk once the active one is half full, and leaves exact files behind', async () => {
    const dir = tempDir();
    const chunkSizeBytes = 16 * 1024;
    const options = engineOptions(dir, { chunkSizeBytes });
    const db = await openTestEngine(options);
    const files = (): Record<string, number> => Object.fromEntries(fs.readdirSync(options.dbPath)
      .filter((f) => f.startsWith('chunk-')).map((f) => [f, fs.statSync(path.join(options.dbPath, f)).size]));
    const temps = (): string[] => Object.keys(files()).filter((f) => f.endsWith('.prealloc.tmp'));
    let i = 0;
    const appendUntil = async (done: (offsetInChunk: number, chunkNumber: number) => boolean): Promise<void> => {
      for (;;) {
        const writer = db.stats().writerCheckpoint;
        if (done(writer % chunkSizeBytes, Math.floor(writer / chunkSizeBytes))) return;
        await db.append('p', -2, [jsonEvent({ i: i++, pad: 'z'.repeat(300) })]);
      }
    };
    // A new log under half a chunk holds no chunk of zeros.
    await appendUntil((offset) => offset > chunkSizeBytes / 4);
    expect(temps()).toEqual([]);
    // Past half: the next chunk is zero-filled; the chunk that then starts was preallocated in full.
    await appendUntil((offset) => offset >= chunkSizeBytes / 2);
    await until(() => temps().length === 1);
    await appendUntil((offset, chunk) => chunk === 1 && offset < chunkSizeBytes / 2);
    const live = files();
    const active = Object.keys(live).filter((f) => !f.endsWith('.tmp')).sort().pop()!;
    expect(active).toMatch(/^chunk-000001\./);
    expect(live[active]).toBe(128 + chunkSizeBytes);
    expect(temps()).toEqual([]); // chunk 2 not before chunk 1 is half full
    await appendUntil((offset) => offset >= chunkSizeBytes / 2);
    await until(() => temps().length === 1);
    await db.close();
    const closed = files();
    expect(Object.keys(closed).some((f) => f.endsWith('.tmp'))).toBe(false);
    expect(closed[active]).toBeLessThan(128 + chunkSizeBytes); // trimmed to its data at clean close
    const reopened = await openTestEngine(options);
    engines.push(reopened);
    expect(((await readNumbers(reopened, 'p')) as number[]).length).toBe(i);
    expect(await reopened.append('p', i - 1, [jsonEvent('after')])).toMatchObject({ kind: 'success', firstEventNumber: i });
  });

  it('does not zero-fill the next chunk while a scavenge runs, and its scavenge point adds no second chunk of zeros', async () => {
    const dir = tempDir();
    const chunkSizeBytes = 64 * 1024;
    const options = engineOptions(dir, { chunkSizeBytes });
    const db = await openTestEngine(options);
    engines.push(db);
    let i = 0;
    const appendUntil = async (done: (offsetInChunk: number) => boolean): Promise<void> => {
      while (!done(db.stats().writerCheckpoint % chunkSizeBytes)) await db.append('p', -2, [jsonEvent({ i: i++, pad: 'z'.repeat(300) })]);
    };
    const temps = (): string[] => fs.readdirSync(options.dbPath).filter((f) => f.endsWith('.prealloc.tmp'));
    const chunkFiles = (): number => fs.readdirSync(options.dbPath).filter((f) => /^chunk-\d+\.\d+$/.test(f)).length;
    // Small writes past half a chunk: the next chunk is being zero-filled.
    await appendUntil((offset) => offset >= chunkSizeBytes / 2);
    await until(() => temps().length === 1);
    const before = chunkFiles();
    // Throttled to 1 %, the scavenge is still running while its new chunk fills past half.
    const handle = db.startScavenge(crypto.randomUUID(), { threads: 1, threshold: 0, throttlePercent: 1, syncOnly: false }, new RecordingListener());
    // The scavenge point took the prepared file as its new chunk and nothing was prepared after it.
    await until(() => db.stats().writerCheckpoint > chunkSizeBytes);
    expect(chunkFiles()).toBe(before + 1);
    expect(temps()).toEqual([]);
    await appendUntil((offset) => offset >= chunkSizeBytes / 2);
    await new Promise((r) => setTimeout(r, 100));
    expect(temps()).toEqual([]);
    expect((await handle.stop()).result).toBe('Stopped'); // it was running all along
    expect((await readNumbers(db, 'p') as number[]).length).toBe(i);
  });

  it('does not zero-fill the next chunk under bulk writes: files stay exactly as long as their contents', async () => {
    const dir = tempDir();
    const chunkSizeBytes = 1024 * 1024;
    const options = engineOptions(dir, { chunkSizeBytes });
    const db = await openTestEngine(options);
    const pad = 'b'.repeat(1000);
    // Batches of ~330 KiB, so the recent flushes are large by the time the next chunks start.
    for (let b = 0; b < 40; b++) await db.append('bulk', -2, Array.from({ length: 300 }, (_, i) => jsonEvent({ i, pad })));
    const sizes = Object.fromEntries(fs.readdirSync(options.dbPath)
      .filter((f) => f.startsWith('chunk-')).map((f) => [f, fs.statSync(path.join(options.dbPath, f)).size]));
    const names = Object.keys(sizes).sort();
    expect(names.length).toBeGreaterThan(2);
    expect(names.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const active = names.pop()!;
    const activeStart = Number(active.slice(6, 12)) * chunkSizeBytes;
    expect(sizes[active]).toBe(128 + db.stats().writerCheckpoint - activeStart); // no zero tail
    await db.close();
    const reopened = await openTestEngine(options);
    engines.push(reopened);
    const read = await reopened.readStream('bulk', 0, 20_000, 'forward');
    expect(read.kind === 'success' ? read.events.length : -1).toBe(12_000);
  });

  it('stops with an error naming the file when a completed chunk is corrupt', async () => {
    const dir = tempDir();
    const options = engineOptions(dir, { chunkSizeBytes: 4096 });
    const db = await openTestEngine(options);
    for (let i = 0; i < 40; i++) await db.append('c', -2, [jsonEvent({ i, pad: 'y'.repeat(200) })]);
    await db.close();
    const file = path.join(options.dbPath, 'chunk-000000.000000');
    const bytes = fs.readFileSync(file);
    bytes[500] = bytes[500]! ^ 0xff;
    fs.writeFileSync(file, bytes);
    await expect(openTestEngine(options)).rejects.toThrow(/chunk-000000\.000000.*corrupt|corrupt.*chunk-000000\.000000/);
  });

  it('discards bytes past writer.chk (an unacknowledged torn tail)', async () => {
    const dir = tempDir();
    const options = engineOptions(dir);
    let db = await openTestEngine(options);
    await db.append('t', -1, [jsonEvent(0)]);
    await db.close();
    const file = path.join(options.dbPath, 'chunk-000000.000000');
    fs.appendFileSync(file, Buffer.from([0x40, 0, 0, 0, 1, 2, 3])); // half a frame
    db = await openTestEngine(options);
    engines.push(db);
    expect(await readNumbers(db, 't')).toEqual([0]);
    expect(await db.append('t', 0, [jsonEvent(1)])).toMatchObject({ kind: 'success', firstEventNumber: 1 });
  });

  it('works with the stream existence filter disabled (size 0)', async () => {
    const dir = tempDir();
    let db = await openTestEngine(engineOptions(dir, { streamExistenceFilterSizeBytes: 0 }));
    await db.append('e', -1, [jsonEvent(0)]);
    expect(await db.streamState('absent')).toEqual({ kind: 'no-stream' });
    await db.close();
    db = await openTestEngine(engineOptions(dir, { streamExistenceFilterSizeBytes: 0 }));
    engines.push(db);
    expect(await readNumbers(db, 'e')).toEqual([0]);
    expect(fs.existsSync(path.join(dir, 'index', 'stream-existence', 'streamExistenceFilter.dat'))).toBe(false);
  });

  it('--mem-db writes nothing to disk', async () => {
    const dir = tempDir();
    const { db } = await fresh({ memDb: true, dbPath: path.join(dir, 'db'), indexPath: path.join(dir, 'index') });
    await db.append('m', -1, [jsonEvent(0)]);
    expect(await readNumbers(db, 'm')).toEqual([0]);
    expect(fs.existsSync(path.join(dir, 'db'))).toBe(false);
  });

  it('rejects bad input without writing', async () => {
    const { db } = await fresh({ maxEventSizeBytes: 1000 });
    await expect(db.append('s', -2, [{ ...jsonEvent(0), eventId: 'nope' }])).rejects.toThrow(/not a UUID/);
    await expect(db.append('s', -2, [jsonEvent('z'.repeat(2000))])).rejects.toThrow(/limit is 1000/);
    await expect(db.append('s', -3, [jsonEvent(0)])).rejects.toThrow(/expected version/);
    await expect(db.append('', -2, [jsonEvent(0)])).rejects.toThrow(/empty/);
    expect(await readNumbers(db, 's')).toBe('stream-not-found');
  });
});

describe('replay bound', () => {
  const MiB = 1024 * 1024;
  // Chunks of 256 MiB: chunk 0 completed early by a scavenge point after 10 MiB, chunk 1 full, chunk 2 active.
  const chunks: ChunkExtent[] = [
    { endPosition: 256 * MiB, logicalDataEndPosition: 10 * MiB },
    { endPosition: 512 * MiB, logicalDataEndPosition: 512 * MiB },
    { endPosition: 768 * MiB, logicalDataEndPosition: 600 * MiB },
  ];
  const chunkAt = (p: number): ChunkExtent | undefined => chunks[Math.floor(p / (256 * MiB))];

  it('counts the written log between two positions, not the unwritten tail of a chunk completed early', () => {
    expect(replayLogBytes(4 * MiB, 256 * MiB, chunkAt)).toBe(6 * MiB); // up to the rollover
    expect(replayLogBytes(4 * MiB, 300 * MiB, chunkAt)).toBe(6 * MiB + 44 * MiB);
    expect(replayLogBytes(4 * MiB, 600 * MiB, chunkAt)).toBe(6 * MiB + 256 * MiB + 88 * MiB);
    expect(replayLogBytes(20 * MiB, 300 * MiB, chunkAt)).toBe(44 * MiB); // starting inside the tail
    expect(replayLogBytes(300 * MiB, 400 * MiB, chunkAt)).toBe(100 * MiB); // within one chunk
    expect(replayLogBytes(600 * MiB, 600 * MiB, chunkAt)).toBe(0);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { capturingLog, engineOptions, jsonEvent, openTestEngine, tempDir } from '../../../../test/support/engine-fixture.js';
import { RecordingListener, scavenge } from '../../../../test/support/scavenge-fixture.js';
import type { Engine } from '../event-db.js';
import type { EventDbOptions } from '../event-db-types.js';

const CHUNK = 16 * 1024;
const engines: Engine[] = [];
afterEach(async () => { for (const db of engines.splice(0)) await db.close().catch(() => undefined); });

async function open(dir: string, overrides: Partial<EventDbOptions> = {}, deps = {}): Promise<Engine> {
  const db = await openTestEngine(engineOptions(dir, { chunkSizeBytes: CHUNK, ...overrides }), deps);
  engines.push(db);
  return db;
}

/** Writes `count` events of ~300 bytes to `stream`. */
async function fill(db: Engine, stream: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 10) {
    const n = Math.min(10, count - i);
    const r = await db.append(stream, -2, Array.from({ length: n }, (_, k) => jsonEvent({ i: i + k, pad: 'p'.repeat(250) })));
    if (r.kind !== 'success') throw new Error(r.kind);
  }
}

async function allFor(db: Engine, stream: string): Promise<number[]> {
  const all = await db.readAll(undefined, 100_000, 'forward');
  return all.events.filter((e) => e.stream === stream).map((e) => e.eventNumber);
}

async function streamNumbers(db: Engine, stream: string): Promise<number[] | string> {
  const r = await db.readStream(stream, 0, 4096, 'forward');
  return r.kind === 'success' ? r.events.map((e) => e.eventNumber) : r.kind;
}

/** Chunk files proper (not a next chunk being zero-filled, `*.prealloc.tmp`). */
function chunkFiles(dir: string): string[] {
  return fs.readdirSync(path.join(dir, 'db')).filter((f) => /^chunk-\d{6}\.\d{6}$/.test(f)).sort();
}

describe('scavenge removals', () => {
  it('removes soft-deleted events from $all, keeping the last event; stream reads unchanged', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'gone', 100);
    await fill(db, 'kept', 100);
    await db.deleteStream('gone', -2, false);
    expect((await allFor(db, 'gone')).length).toBe(100);
    const { outcome } = await scavenge(db);
    expect(outcome.result).toBe('Success');
    expect(outcome.spaceSavedBytes).toBeGreaterThan(0);
    expect(await allFor(db, 'gone')).toEqual([99]);
    expect(await streamNumbers(db, 'gone')).toBe('stream-not-found');
    expect((await streamNumbers(db, 'kept') as number[]).length).toBe(100);
    expect((await allFor(db, 'kept')).length).toBe(100);
  });

  it('removes everything of a hard-deleted stream but its tombstone, and its metadata', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'h', 80);
    await db.setStreamMetadata('h', -2, { custom: 1 });
    await fill(db, 'other', 40);
    await db.deleteStream('h', -2, true);
    await scavenge(db);
    const all = await db.readAll(undefined, 100_000, 'forward');
    expect(all.events.filter((e) => e.stream === 'h').map((e) => e.eventType)).toEqual(['$streamDeleted']);
    expect(all.events.filter((e) => e.stream === '$$h')).toEqual([]);
    expect(await streamNumbers(db, 'h')).toBe('stream-deleted');
    expect(await db.append('h', -2, [jsonEvent(1)])).toEqual({ kind: 'stream-deleted' });
  });

  it('applies $maxCount and $tb', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'mc', 60);
    await fill(db, 'tb', 60);
    await db.setStreamMetadata('mc', -2, { $maxCount: 5 });
    await db.setStreamMetadata('tb', -2, { $tb: 50 });
    await scavenge(db);
    expect(await allFor(db, 'mc')).toEqual([55, 56, 57, 58, 59]);
    expect(await allFor(db, 'tb')).toEqual([50, 51, 52, 53, 54, 55, 56, 57, 58, 59]);
    expect(await streamNumbers(db, 'mc')).toEqual([55, 56, 57, 58, 59]);
  });

  it('decides $maxAge with the scavenge point EffectiveNow', async () => {
    let now = 1_700_000_000_000;
    const dir = tempDir();
    const db = await open(dir, {}, { nowMs: () => now });
    await fill(db, 'aged', 50);          // written at t0
    now += 120_000;
    await fill(db, 'aged', 10);          // written at t0 + 2 min
    await db.setStreamMetadata('aged', -2, { $maxAge: 60 });
    await scavenge(db);                  // the point is written now: t0 + 2 min
    expect(await allFor(db, 'aged')).toEqual([50, 51, 52, 53, 54, 55, 56, 57, 58, 59]);
  });
});

describe('scavenge index stage', () => {
  const entriesDeleted = (listener: RecordingListener): unknown => listener.calls.find((c) => c.kind === 'indexExecuted')?.info['entriesDeleted'];

  // throttlePercent 100 writes the index table while the last copies are made durable (committed
  // after them); 99 runs the index stage after execution: both must drop the same entries.
  it.each([100, 99])('drops exactly the entries of removed records, keeping those in chunks scavenged by an earlier run (throttle %i)', async (throttlePercent) => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'h', 80);
    await db.setStreamMetadata('h', -2, { custom: 1 });
    await fill(db, 'other', 40);
    await fill(db, 's2', 50);
    await db.deleteStream('h', -2, true);
    const first = await scavenge(db, { throttlePercent });
    expect(first.outcome.result).toBe('Success');
    expect(entriesDeleted(first.listener)).toBe(81); // h's 80 events and its metadata record
    await db.deleteStream('s2', -2, true);
    await fill(db, 'later', 30);
    const second = await scavenge(db, { throttlePercent });
    expect(second.outcome.result).toBe('Success');
    expect(entriesDeleted(second.listener)).toBe(50);
    expect((await streamNumbers(db, 'other') as number[]).length).toBe(40);
    expect((await streamNumbers(db, 'later') as number[]).length).toBe(30);
    expect(await streamNumbers(db, 's2')).toBe('stream-deleted');
    await db.close();
    engines.splice(engines.indexOf(db), 1);
    const reopened = await open(dir);
    expect(await streamNumbers(reopened, 'other')).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });
});

describe('scavenge thresholds and merging', () => {
  it('threshold -1 rewrites every chunk before the point, even with nothing to remove', async () => {
    const dir = tempDir();
    const db = await open(dir, { disableScavengeMerging: true });
    await fill(db, 'a', 150);
    const before = chunkFiles(dir);
    const { listener } = await scavenge(db, { threshold: -1 });
    expect(listener.count('chunkExecuted')).toBeGreaterThanOrEqual(before.length - 1);
    expect(chunkFiles(dir).filter((f) => f.endsWith('.000001')).length).toBeGreaterThan(1);
    expect((await allFor(db, 'a')).length).toBe(150);
  });

  it('threshold 0 rewrites only chunks with something to remove', async () => {
    const dir = tempDir();
    const db = await open(dir, { disableScavengeMerging: true });
    await fill(db, 'a', 150);
    await fill(db, 'b', 10);
    await db.deleteStream('b', -2, false);
    const { listener } = await scavenge(db, { threshold: 0 });
    expect(listener.count('chunkExecuted')).toBe(1);
    expect(await allFor(db, 'b')).toEqual([9]);
  });

  it('a positive threshold leaves light chunks alone, so some deleted events remain', async () => {
    const dir = tempDir();
    const db = await open(dir, { disableScavengeMerging: true });
    await fill(db, 'heavy', 100);       // several chunks full of events to delete
    await fill(db, 'filler', 40);
    await fill(db, 'light', 2);         // 2 events to delete, weight 4 at most
    await fill(db, 'filler2', 60);
    await db.deleteStream('heavy', -2, true);
    await db.deleteStream('light', -2, true);
    await scavenge(db, { threshold: 20 });
    expect(await allFor(db, 'heavy')).toEqual([Number.MAX_SAFE_INTEGER]);
    expect((await allFor(db, 'light')).length).toBe(3); // both events and the tombstone survive
  });

  it('merges small scavenged chunks unless merging is disabled', async () => {
    for (const disable of [false, true]) {
      const dir = tempDir();
      const db = await open(dir, { disableScavengeMerging: disable });
      await fill(db, 'x', 200);
      await fill(db, 'keep', 5);
      await db.deleteStream('x', -2, true);
      const before = chunkFiles(dir).length;
      const { listener } = await scavenge(db);
      const after = chunkFiles(dir).length;
      if (disable) { expect(listener.count('chunksMerged')).toBe(0); expect(after).toBe(before + 1); }
      else { expect(listener.count('chunksMerged')).toBeGreaterThan(0); expect(after).toBeLessThan(before); }
      expect((await allFor(db, 'keep')).length).toBe(5);
      await db.close();
      const reopened = await open(dir);
      expect((await allFor(reopened, 'keep')).length).toBe(5);
      expect(await allFor(reopened, 'x')).toEqual([Number.MAX_SAFE_INTEGER]);
    }
  });
});

describe('merging while executing (threads=1)', () => {
  it('merges neighbours as it rewrites them; a chunk whose kept data turns out not to fit starts the next merged chunk', async () => {
    const dir = tempDir();
    const { log, lines } = capturingLog();
    const db = await open(dir, {}, { log });
    // Per round, about three chunks keeping 40%, 0% and 70% of their data: predicted from the
    // previous chunk's share, the third joins a group it does not fit.
    const kept: string[] = [];
    for (let round = 0; round < 4; round++) {
      await fill(db, `keep-a${round}`, 16);
      kept.push(`keep-a${round}`);
      await fill(db, `gone-${round}`, 64);
      await fill(db, `keep-b${round}`, 28);
      kept.push(`keep-b${round}`);
      await fill(db, `gone2-${round}`, 12);
      await db.deleteStream(`gone-${round}`, -2, true);
      await db.deleteStream(`gone2-${round}`, -2, true);
    }
    const before = chunkFiles(dir).length;
    const { outcome, listener } = await scavenge(db);
    expect(outcome.result).toBe('Success');
    expect(lines.some((l) => String(l['msg']).startsWith('chunk does not fit'))).toBe(true);
    expect(listener.count('chunksMerged')).toBeGreaterThan(0);
    expect(chunkFiles(dir).length).toBeLessThan(before);
    const check = async (e: Engine): Promise<void> => {
      for (const s of kept) expect((await allFor(e, s)).length, s).toBe(s.startsWith('keep-a') ? 16 : 28);
      for (let round = 0; round < 4; round++) expect(await allFor(e, `gone-${round}`)).toEqual([Number.MAX_SAFE_INTEGER]);
      const all = await e.readAll(undefined, 100_000, 'forward');
      const positions = all.events.map((ev) => ev.logPosition);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
    };
    await check(db);
    await db.close();
    await check(await open(dir));
  });
});

describe('checksums of rewritten chunks', () => {
  it('are right for few long kept runs and for many short ones (the reopen verifies every chunk)', async () => {
    for (const eventsPerWrite of [1, 10]) {
      const dir = tempDir();
      const db = await open(dir, { chunkSizeBytes: 64 * 1024 });
      for (let i = 0; i < 400 / eventsPerWrite; i++) {
        for (const stream of ['keep', 'gone']) {
          const r = await db.append(stream, -2, Array.from({ length: eventsPerWrite }, () => jsonEvent({ i, pad: 'q'.repeat(100) })));
          if (r.kind !== 'success') throw new Error(r.kind);
        }
      }
      await db.deleteStream('gone', -2, true);
      expect((await scavenge(db)).outcome.result).toBe('Success');
      await db.close();
      const reopened = await open(dir, { chunkSizeBytes: 64 * 1024 });
      expect((await allFor(reopened, 'keep')).length).toBe(400);
      expect(await allFor(reopened, 'gone')).toEqual([Number.MAX_SAFE_INTEGER]);
    }
  });
});

describe('scavenge lifecycle', () => {
  it('stops when asked and the next run resumes and finishes the job', async () => {
    const dir = tempDir();
    const db = await open(dir, { disableScavengeMerging: true });
    await fill(db, 'x', 400);
    await fill(db, 'keep', 5);
    await db.deleteStream('x', -2, true);
    const listener = new RecordingListener();
    const handle = db.startScavenge(crypto.randomUUID(), { threads: 1, threshold: 0, throttlePercent: 50, syncOnly: false }, listener);
    await new Promise((r) => setTimeout(r, 30));
    const stopped = await handle.stop();
    expect(stopped.result).toBe('Stopped');
    const second = await scavenge(db);
    expect(second.outcome.result).toBe('Success');
    expect(second.listener.calls[0]?.info['scavengePoint']).toEqual(listener.calls[0]?.info['scavengePoint']);
    expect(await allFor(db, 'x')).toEqual([Number.MAX_SAFE_INTEGER]);
  });

  it('throttlePercent 50 rests about as long as it works; 100 never rests', async () => {
    const pacing: Record<number, { activeMs: number; restMs: number }> = {};
    for (const throttlePercent of [100, 50]) {
      const dir = tempDir();
      const { log, lines } = capturingLog();
      const db = await open(dir, { disableScavengeMerging: true }, { log });
      // Enough chunks that the work is measurable (scavenging 400 events took about 20 ms).
      await fill(db, 'x', 1500);
      await db.deleteStream('x', -2, true);
      expect((await scavenge(db, { throttlePercent })).outcome.result).toBe('Success');
      const line = lines.find((l) => l['msg'] === 'scavenge pacing')!;
      pacing[throttlePercent] = { activeMs: line['activeMs'] as number, restMs: line['restMs'] as number };
    }
    expect(pacing[100]!.restMs).toBe(0);
    expect(pacing[50]!.activeMs).toBeGreaterThan(20);
    // Timers may fire late, never early: the rest is at least the work, and not wildly more.
    expect(pacing[50]!.restMs).toBeGreaterThanOrEqual(pacing[50]!.activeMs * 0.9);
    expect(pacing[50]!.restMs).toBeLessThan(pacing[50]!.activeMs * 2 + 200);
  });

  it('refuses a second concurrent scavenge', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'x', 100);
    const handle = db.startScavenge(crypto.randomUUID(), { threads: 1, threshold: 0, throttlePercent: 100, syncOnly: false }, new RecordingListener());
    expect(() => db.startScavenge(crypto.randomUUID(), { threads: 1, threshold: 0, throttlePercent: 100, syncOnly: false }, new RecordingListener())).toThrow(/already running/);
    await handle.done;
  });

  it('syncOnly does nothing without an unreached point, and writes no point', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'x', 50);
    await db.deleteStream('x', -2, true);
    const { outcome, listener } = await scavenge(db, { syncOnly: true });
    expect(outcome.result).toBe('Success');
    expect(listener.calls[0]?.info['scavengePoint']).toBeUndefined();
    expect(await streamNumbers(db, '$scavengePoints')).toBe('stream-not-found');
    expect((await allFor(db, 'x')).length).toBe(51);
  });

  it('syncOnly runs to an existing unreached point', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'x', 50);
    await db.deleteStream('x', -2, true);
    await db.writeScavengePoint(0); // as replicated from another node
    const { listener } = await scavenge(db, { syncOnly: true });
    expect(listener.calls[0]?.info['scavengePoint']).toMatchObject({ number: 0 });
    expect(await allFor(db, 'x')).toEqual([Number.MAX_SAFE_INTEGER]);
  });

  it('a second scavenge accumulates only chunks added since the first', async () => {
    const dir = tempDir();
    const { log, lines } = capturingLog();
    const db = await open(dir, { disableScavengeMerging: true }, { log });
    await fill(db, 'a', 150);
    await scavenge(db);
    const accumulated = (): number[] => lines.filter((l) => l['msg'] === 'accumulation done').map((l) => l['chunks'] as number);
    expect(accumulated()[0]).toBeGreaterThanOrEqual(3);
    await fill(db, 'b', 30);
    await db.deleteStream('b', -2, true);
    const second = await scavenge(db);
    expect(second.listener.calls[0]?.info['scavengePoint']).toMatchObject({ number: 1 });
    expect(accumulated()[1]).toBeLessThan(accumulated()[0]!);
    expect(accumulated()[1]).toBeGreaterThanOrEqual(1);
    expect(await allFor(db, 'b')).toEqual([Number.MAX_SAFE_INTEGER]);
    expect((await allFor(db, 'a')).length).toBe(150);
  });

  it("logs each chunk's weight with the text 'with weight', for scavenged and skipped chunks", async () => {
    const dir = tempDir();
    const { log, lines } = capturingLog();
    const db = await open(dir, { disableScavengeMerging: true }, { log });
    await fill(db, 'a', 100);
    await fill(db, 'd', 20);
    await db.deleteStream('d', -2, true);
    await scavenge(db, { threshold: 0 });
    const weightLines = lines.map((l) => String(l['msg'])).filter((m) => m.includes('with weight'));
    expect(weightLines.some((m) => m.startsWith('scavenged chunk'))).toBe(true);
    expect(weightLines.some((m) => m.startsWith('skipping chunk') && m.endsWith('with weight 0'))).toBe(true);
  });

  it('a reader paging through $all across chunk swaps sees every kept event once, in order', async () => {
    const dir = tempDir();
    const db = await open(dir);
    for (let s = 0; s < 30; s++) {
      await fill(db, `k-${s}`, 10);
      await fill(db, `d-${s}`, 10);
    }
    for (let s = 0; s < 30; s++) await db.deleteStream(`d-${s}`, -2, true);
    const kept = (await db.readAll(undefined, 100_000, 'forward')).events.filter((e) => e.stream.startsWith('k-')).map((e) => e.eventId);
    const handle = db.startScavenge(crypto.randomUUID(), { threads: 1, threshold: 0, throttlePercent: 100, syncOnly: false }, new RecordingListener());
    let finished = false;
    void handle.done.then(() => { finished = true; });
    let passes = 0;
    while (passes < 50 && (!finished || passes < 2)) {
      const seen: string[] = [];
      let pos: { commitPosition: number; preparePosition: number } | undefined;
      for (let page = 0; page < 10_000; page++) {
        const r = await db.readAll(pos, 7, 'forward');
        for (const e of r.events) if (e.stream.startsWith('k-')) seen.push(e.eventId);
        if (r.isEnd) break;
        pos = r.nextPosition;
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(seen).toEqual(kept);
      passes++;
    }
    expect((await handle.done).result).toBe('Success');
    expect((await db.readAll(undefined, 100_000, 'forward')).events.filter((e) => e.stream.startsWith('d-')).length).toBe(30);
  });

  it('keeps appends and reads working during a scavenge', async () => {
    const dir = tempDir();
    const db = await open(dir);
    await fill(db, 'x', 300);
    await db.deleteStream('x', -2, true);
    const handle = db.startScavenge(crypto.randomUUID(), { threads: 2, threshold: 0, throttlePercent: 100, syncOnly: false }, new RecordingListener());
    let appended = 0;
    let running = true;
    void handle.done.then(() => { running = false; });
    while (running && appended < 2000) {
      expect(await db.append('live', -2, [jsonEvent(appended)])).toMatchObject({ kind: 'success' });
      appended++;
      const r = await db.readStream('live', 0, 4096, 'forward');
      expect(r.kind === 'success' && r.events.length).toBe(appended);
    }
    expect((await handle.done).result).toBe('Success');
    expect((await allFor(db, 'live')).length).toBe(appended);
  });
});

describe('scavenge and corruption', () => {
  const sealedChunkFiles = (dir: string): string[] => chunkFiles(dir).filter((f) => /^chunk-\d{6}\.\d{6}$/.test(f));

  /** Flips the byte after the first (or last) `needle` in the chunk files, under the open engine. */
  function flipByteOf(dir: string, needle: string, fromEnd = false): string {
    const names = chunkFiles(dir);
    for (const name of fromEnd ? names.reverse() : names) {
      const file = path.join(dir, 'db', name);
      const bytes = fs.readFileSync(file);
      const at = fromEnd ? bytes.lastIndexOf(needle) : bytes.indexOf(needle);
      if (at < 0) continue;
      const fd = fs.openSync(file, 'r+');
      try {
        fs.writeSync(fd, Buffer.from([bytes[at + needle.length]! ^ 0x55]), 0, 1, at + needle.length);
      } finally {
        fs.closeSync(fd);
      }
      return name;
    }
    throw new Error(`${needle} not found`);
  }

  it('a flipped byte in a chunk it rewrites fails the scavenge loudly and swaps nothing in', async () => {
    const dir = tempDir();
    const fatal: Error[] = [];
    const db = await open(dir, {}, { onFatal: (err: Error) => { fatal.push(err); } });
    await fill(db, 'gone', 60);
    await fill(db, 'kept', 60);
    await db.deleteStream('gone', -2, false);
    const before = sealedChunkFiles(dir);
    const damaged = flipByteOf(dir, '"pad":"pppp'); // inside an event's data, after the opening
    const { outcome } = await scavenge(db);
    expect(outcome.result).toBe('Errored');
    expect(outcome.error).toMatch(/corrupt/);
    expect(fatal.map((e) => e.message).join()).toMatch(new RegExp(damaged.replace('.', '\\.')));
    // The scavenge point started one more chunk; nothing was replaced by a scavenged version.
    const after = sealedChunkFiles(dir);
    expect(after.filter((f) => before.includes(f))).toEqual(before);
    expect(after.filter((f) => !f.endsWith('.000000'))).toEqual([]);
  });

  it('a flipped byte in a tombstone stops accumulation before anything is decided from it', async () => {
    const dir = tempDir();
    const fatal: Error[] = [];
    // Without merging each chunk is swapped on its own: a tombstone taken from corrupt bytes
    // would have its stream's earlier chunks rewritten before the walk reached the damage.
    const db = await open(dir, { disableScavengeMerging: true }, { onFatal: (err: Error) => { fatal.push(err); } });
    await fill(db, 'victim', 100);
    await db.deleteStream('victim', -2, true);
    await fill(db, 'after', 60);
    const before = sealedChunkFiles(dir);
    flipByteOf(dir, 'victim', true); // the last record naming it: the tombstone's stream name
    const { outcome } = await scavenge(db);
    expect(outcome.result).toBe('Errored');
    expect(fatal.length).toBe(1);
    // The scavenge point started one more chunk; nothing was replaced by a scavenged version.
    const after = sealedChunkFiles(dir);
    expect(after.filter((f) => before.includes(f))).toEqual(before);
    expect(after.filter((f) => !f.endsWith('.000000'))).toEqual([]);
  });
});

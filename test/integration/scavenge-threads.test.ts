/**
 * Chunk execution on worker threads (threads > 1). Workers run the compiled build, so this test
 * loads the engine from dist/ (`make build` first): vitest's TypeScript sources have no worker
 * module and fall back to in-thread execution.
 */
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { capturingLog, engineOptions, jsonEvent, tempDir } from '../support/engine-fixture.js';
import { RecordingListener } from '../support/scavenge-fixture.js';
import type * as EventDbModule from '../../node/src/storage/event-db.js';

const DIST_ENGINE = path.resolve('dist/node/src/storage/event-db.js');

type Engine = Awaited<ReturnType<typeof EventDbModule.openEngine>>;

/** The compiled engine (so worker threads run) on a fresh directory, logging into `lines`. */
async function openDist(options: { disableScavengeMerging?: boolean } = {}): Promise<{ db: Engine; dir: string; lines: Record<string, unknown>[] }> {
  expect(fs.existsSync(DIST_ENGINE), 'build first: make build').toBe(true);
  const { openEngine } = (await import(DIST_ENGINE)) as typeof EventDbModule;
  const dir = tempDir();
  const { log, lines } = capturingLog('info');
  const db = await openEngine(engineOptions(dir, { chunkSizeBytes: 32 * 1024, ...options }), { log, onFatal: (e) => { throw e; } });
  return { db, dir, lines };
}

/** Appends `eventsPerStream` events to each of `count` streams named `prefix-N`; `after(N)` may delete or cap it. */
async function fill(db: Engine, prefix: string, count: number, eventsPerStream: number, after: (s: number) => Promise<unknown>): Promise<void> {
  for (let s = 0; s < count; s++) {
    await db.append(`${prefix}-${s}`, -1, Array.from({ length: eventsPerStream }, (_, i) => jsonEvent({ s, i, pad: 'q'.repeat(200) })));
    await after(s);
  }
}

async function scavengeWith(db: Engine, threads: number): Promise<void> {
  const handle = db.startScavenge(crypto.randomUUID(), { threads, threshold: 0, throttlePercent: 100, syncOnly: false }, new RecordingListener());
  expect((await handle.done).result).toBe('Success');
}

describe('scavenge with threads > 1', () => {
  it('rewrites chunks on worker threads with the same result as one thread', async () => {
    const results: Record<number, { all: string[]; files: string[] }> = {};
    for (const threads of [1, 3]) {
      const { db, dir, lines } = await openDist({ disableScavengeMerging: true });
      await fill(db, 's', 60, 10, async (s) => {
        if (s % 3 === 0) await db.deleteStream(`s-${s}`, -2, true);
        if (s % 3 === 1) await db.setStreamMetadata(`s-${s}`, -2, { $maxCount: 2 });
      });
      await scavengeWith(db, threads);
      expect(lines.some((l) => l['msg'] === 'chunk execution on worker threads')).toBe(threads > 1);
      const all = await db.readAll(undefined, 100_000, 'forward');
      results[threads] = {
        all: all.events.filter((e) => e.stream.startsWith('s-')).map((e) => `${e.stream}@${e.eventNumber}`),
        files: fs.readdirSync(path.join(dir, 'db')).filter((f) => f.startsWith('chunk-')).sort(),
      };
      await db.close();
    }
    expect(results[3]!.all).toEqual(results[1]!.all);
    expect(results[3]!.files).toEqual(results[1]!.files);
    expect(results[1]!.all.filter((e) => e.startsWith('s-1@')).length).toBe(2);
  });

  it('rewrites chunks on different threads at the same time', async () => {
    const { db, lines } = await openDist({ disableScavengeMerging: true });
    // Enough chunks (about 80) that each thread works far longer than the threads take to start.
    await fill(db, 'p', 1000, 10, async (s) => { if (s % 2 === 0) await db.deleteStream(`p-${s}`, -2, true); });
    await scavengeWith(db, 2);
    await db.close();
    // Each chunk's line says which thread rewrote it and when: two threads, and rewrites of
    // different threads overlapping in time.
    const rewrites = lines.filter((l) => String(l['msg']).startsWith('scavenged chunk'))
      .map((l) => ({ thread: l['threadId'] as number, from: l['rewriteStartedAtMs'] as number, to: l['rewriteFinishedAtMs'] as number }));
    expect(rewrites.length).toBeGreaterThan(40);
    expect(new Set(rewrites.map((r) => r.thread)).size).toBe(2);
    const overlapping = rewrites.filter((a) => rewrites.some((b) => a.thread !== b.thread && a.from < b.to && b.from < a.to));
    expect(overlapping.length).toBeGreaterThan(rewrites.length / 4);
  });

  it('merges neighbouring chunks on the worker threads while rewriting them', async () => {
    const outcome: Record<number, { all: string[]; files: number }> = {};
    for (const threads of [1, 2]) {
      const { db, dir, lines } = await openDist();
      // 90% of the streams deleted: the kept data of several neighbouring chunks fits one chunk.
      await fill(db, 'm', 100, 5, async (s) => { if (s % 10 !== 0) await db.deleteStream(`m-${s}`, -2, true); });
      const chunksBefore = fs.readdirSync(path.join(dir, 'db')).filter((f) => f.startsWith('chunk-')).length;
      await scavengeWith(db, threads);
      const executionDone = lines.findIndex((l) => l['msg'] === 'chunk execution done');
      const mergedWhileRewriting = lines.slice(0, executionDone).filter((l) => l['msg'] === 'chunks merged');
      expect(mergedWhileRewriting.length).toBeGreaterThan(0);
      const files = fs.readdirSync(path.join(dir, 'db')).filter((f) => /^chunk-\d{6}\.\d{6}$/.test(f)).length;
      expect(files).toBeLessThan(chunksBefore / 2);
      outcome[threads] = {
        all: (await db.readAll(undefined, 100_000, 'forward')).events.filter((e) => e.stream.startsWith('m-')).map((e) => `${e.stream}@${e.eventNumber}`),
        files,
      };
      await db.close();
    }
    expect(outcome[2]!.all).toEqual(outcome[1]!.all);
    expect(outcome[2]!.all.filter((e) => e.startsWith('m-10@'))).toHaveLength(5);
  });
});

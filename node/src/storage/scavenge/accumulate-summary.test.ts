import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { capturingLog, engineOptions, jsonEvent, openTestEngine, tempDir } from '../../../../test/support/engine-fixture.js';
import { scavenge } from '../../../../test/support/scavenge-fixture.js';
import type { Engine } from '../event-db.js';
import {
  ChunkSummaryNotes, SUMMARY_ENTRIES_MAX, decodeChunkSummary, encodeChunkSummary, type ChunkSummary,
} from '../chunk/chunk-summary.js';

const CHUNK = 16 * 1024;
const engines: Engine[] = [];
afterEach(async () => { for (const db of engines.splice(0)) await db.close().catch(() => undefined); });

async function open(dir: string, deps = {}): Promise<Engine> {
  const db = await openTestEngine(engineOptions(dir, { chunkSizeBytes: CHUNK, disableScavengeMerging: true }), deps);
  engines.push(db);
  return db;
}

async function fill(db: Engine, stream: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 10) {
    const r = await db.append(stream, -2, Array.from({ length: Math.min(10, count - i) }, (_, k) => jsonEvent({ i: i + k, pad: 'p'.repeat(250) })));
    if (r.kind !== 'success') throw new Error(r.kind);
  }
}

function summariesDir(dir: string): string {
  return path.join(dir, 'index', 'scavenging', 'chunk-summaries');
}

/** A log with every kind of removal, over many chunks; closed. */
async function buildLog(dir: string): Promise<void> {
  const db = await open(dir);
  await fill(db, 'soft', 40);
  await fill(db, 'hard', 40);
  await db.setStreamMetadata('hard', -2, { custom: 1 });
  await fill(db, 'mc', 60);
  await db.setStreamMetadata('mc', -2, { $maxCount: 5 });
  await fill(db, 'tb', 60);
  await db.setStreamMetadata('tb', -2, { $tb: 50 });
  await db.setStreamMetadata('mc', -2, { $maxCount: 7 }); // replaces the first metadata record
  await fill(db, 'kept', 80);
  await db.deleteStream('soft', -2, false);
  await db.deleteStream('hard', -2, true);
  await fill(db, 'tail', 60);
  await db.close();
  engines.splice(engines.indexOf(db), 1);
}

/** Scavenges the log in `dir`; what $all holds afterwards and the accumulation log line. */
async function scavenged(dir: string): Promise<{ all: string[]; chunks: number; fromSummaries: number; warnings: string[] }> {
  const { log, lines } = capturingLog();
  const db = await open(dir, { log });
  const { outcome } = await scavenge(db);
  expect(outcome.result).toBe('Success');
  // The scavenge point's own event differs from run to run (a fresh id).
  const all = (await db.readAll(undefined, 100_000, 'forward')).events.filter((e) => e.stream !== '$scavengePoints')
    .map((e) => `${e.stream}@${e.eventNumber}:${e.eventId}`);
  const done = lines.find((l) => l['msg'] === 'accumulation done')!;
  const warnings = lines.filter((l) => l['level'] === 40).map((l) => String(l['msg']));
  return { all, chunks: done['chunks'] as number, fromSummaries: done['fromSummaries'] as number, warnings };
}

function copyDir(from: string): string {
  const to = tempDir();
  fs.cpSync(from, to, { recursive: true });
  return to;
}

describe('accumulation from chunk summaries', () => {
  it('removes exactly what reading the chunks removes, without reading them', async () => {
    const dir = tempDir();
    await buildLog(dir);
    expect(fs.readdirSync(summariesDir(dir)).length).toBeGreaterThan(5);
    const withoutSummaries = copyDir(dir);
    fs.rmSync(summariesDir(withoutSummaries), { recursive: true });

    const fromSummaries = await scavenged(dir);
    const fromChunks = await scavenged(withoutSummaries);
    expect(fromChunks.fromSummaries).toBe(0);
    // Every completed chunk but the one active when the node opened came from its summary.
    expect(fromSummaries.fromSummaries).toBe(fromSummaries.chunks - 1);
    expect(fromSummaries.all).toEqual(fromChunks.all);
    expect(fromSummaries.all.some((e) => e.startsWith('soft@'))).toBe(true); // the last event of a soft-deleted stream stays
    expect(fromSummaries.all.filter((e) => e.startsWith('hard@'))).toHaveLength(1); // the tombstone
    expect(fromSummaries.all.filter((e) => e.startsWith('mc@'))).toHaveLength(7);
    expect(fromSummaries.all.filter((e) => e.startsWith('tb@'))).toHaveLength(10);
    // Once accumulated, a chunk's summary is let go.
    expect(fs.readdirSync(summariesDir(dir))).toEqual([]);
  });

  it('does not trust a summary whose positions do not hold metadata records or tombstones, nor a torn one', async () => {
    const dir = tempDir();
    await buildLog(dir);
    const reference = await scavenged(copyDir(dir));
    const files = fs.readdirSync(summariesDir(dir)).sort();
    // One summary claims an ordinary event (the first record of its chunk) is a metadata record.
    const lying = path.join(summariesDir(dir), files[1]!);
    const s = decodeChunkSummary(fs.readFileSync(lying))!;
    fs.writeFileSync(lying, encodeChunkSummary({ ...s, positions: [s.chunkStartNumber * CHUNK, ...s.positions] }));
    // Another is torn.
    const torn = path.join(summariesDir(dir), files[2]!);
    fs.writeFileSync(torn, fs.readFileSync(torn).subarray(0, 40));
    const result = await scavenged(dir);
    expect(result.warnings).toContain('the chunk summary does not match the chunk: reading the chunk');
    expect(result.fromSummaries).toBe(reference.fromSummaries - 2);
    expect(result.all).toEqual(reference.all);
  });

  it('notes no summary for the chunk that was active when the node started', async () => {
    const dir = tempDir();
    let db = await open(dir);
    await fill(db, 'a', 20); // part of chunk 0
    await db.close();
    engines.splice(engines.indexOf(db), 1);
    db = await open(dir);
    await fill(db, 'b', 200); // completes chunk 0 and three more
    const chunkNumbers = fs.readdirSync(summariesDir(dir)).map((f) => Number(/chunk-(\d+)/.exec(f)![1])).sort((x, y) => x - y);
    expect(chunkNumbers[0]).toBe(1);
    expect(chunkNumbers.length).toBeGreaterThan(2);
    // Chunk 0 was completed with the checksum taken at start-up and continued: the next open
    // verifies every completed chunk against its footer.
    await db.close();
    engines.splice(engines.indexOf(db), 1);
    db = await open(dir);
    expect((await db.readAll(undefined, 100_000, 'forward')).events.length).toBe(220);
  });
});

describe('chunk summary format and notes', () => {
  const summary: ChunkSummary = {
    chunkStartNumber: 3, chunkId: '6c1e2f3a-0000-4000-8000-000000000001', dataSizeBytes: 1234, minTimestampMs: 5, maxTimestampMs: 9,
    streams: ['a', 'é$', '$$b'], positions: [3 * CHUNK + 10, 3 * CHUNK + 400],
  };

  it('reads back what it wrote and refuses any changed byte', () => {
    const bytes = encodeChunkSummary(summary);
    expect(decodeChunkSummary(bytes)).toEqual(summary);
    for (const at of [2, 40, bytes.length - 3]) {
      const changed = Buffer.from(bytes);
      changed[at] = changed[at]! ^ 0x01;
      expect(decodeChunkSummary(changed)).toBeUndefined();
    }
    expect(decodeChunkSummary(bytes.subarray(0, bytes.length - 1))).toBeUndefined();
  });

  it('notes a chunk from its first record only, and gives up past the entry limit', () => {
    const fromStart = new ChunkSummaryNotes(0, true);
    fromStart.noteWrite('x', 7);
    fromStart.noteWrite('y', 3);
    fromStart.notePosition(100);
    expect(fromStart.finish('id', 500, 1)).toMatchObject({ chunkStartNumber: 0, streams: ['x', 'y'], positions: [100], minTimestampMs: 3, maxTimestampMs: 7 });
    // The next chunk is noted from its start.
    fromStart.noteWrite('z', 1);
    expect(fromStart.finish('id2', 600, 2)).toMatchObject({ chunkStartNumber: 1, streams: ['z'] });

    const midway = new ChunkSummaryNotes(4, false);
    midway.noteWrite('x', 1);
    expect(midway.finish('id', 1, 5)).toBeUndefined();

    const many = new ChunkSummaryNotes(0, true);
    for (let i = 0; i <= SUMMARY_ENTRIES_MAX; i++) many.noteWrite(`s-${i}`, 1);
    expect(many.finish('id', 1, 1)).toBeUndefined();
  });
});

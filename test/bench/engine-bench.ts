/**
 * Storage engine bench (in-process, real files on this machine's disk). Every load loop is
 * bounded in time and count. The raw limits of the same disk are measured in the same run so
 * the engine's figures can be read as a fraction of what the machine can do.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { openEngine, type Engine } from '../../node/src/storage/event-db.js';
import type { EventDbOptions, NewEvent } from '../../node/src/storage/event-db-types.js';
import { percentile, type BenchMetric, type BenchSection } from './bench-types.js';

const log = pino({ level: 'warn' });
const RUN_MS = Number(process.env['BENCH_ENGINE_RUN_MS'] ?? 3000);

function options(dir: string, overrides: Partial<EventDbOptions> = {}): EventDbOptions {
  return {
    dbPath: path.join(dir, 'db'), indexPath: path.join(dir, 'index'), memDb: false, chunkSizeBytes: 256 * 1024 * 1024,
    maxMemTableSize: 1_000_000, maxEventSizeBytes: 4 * 1024 * 1024, streamExistenceFilterSizeBytes: 32 * 1024 * 1024,
    hashCollisionReadLimit: 100, ...overrides,
  };
}

async function open(dir: string, overrides: Partial<EventDbOptions> = {}): Promise<Engine> {
  return openEngine(options(dir, overrides), { log, onFatal: (err) => { throw err; } });
}

/** Events carry no metadata: one shared empty buffer (a client-side allocation per event is not the engine's cost). */
const EMPTY_METADATA = Buffer.alloc(0);
const bodies = new Map<number, Buffer>();

/** An event of about `sizeBytes` of JSON data; the body is built once per size, ids are fresh. */
function makeEvent(sizeBytes: number, n: number): NewEvent {
  let data = bodies.get(sizeBytes);
  if (!data) {
    const body = JSON.stringify({ orderId: n, customer: 'c-1', amount: 977, note: '' });
    data = Buffer.from(JSON.stringify({ orderId: n, customer: 'c-1', amount: 977, note: 'x'.repeat(Math.max(0, sizeBytes - body.length - 2)) }));
    bodies.set(sizeBytes, data);
  }
  return { eventId: crypto.randomUUID(), eventType: 'OrderPlaced', data, metadata: EMPTY_METADATA, isJson: true };
}

/** Raw disk: sequential 1 MiB writes each followed by fdatasync, for `ms` milliseconds. */
function rawSequentialMBps(dir: string, ms: number): number {
  const file = path.join(dir, 'raw.dat');
  const fd = fs.openSync(file, 'w');
  const block = Buffer.alloc(1024 * 1024, 7);
  let bytes = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms && bytes < 4 * 1024 ** 3) {
    fs.writeSync(fd, block);
    fs.fdatasyncSync(fd);
    bytes += block.length;
  }
  const elapsed = performance.now() - t0;
  fs.closeSync(fd);
  fs.rmSync(file);
  return bytes / 1e6 / (elapsed / 1000);
}

interface AppendRun { eventsPerSecond: number; p50Ms: number; p99Ms: number; mbPerSecond: number }

async function appendLoad(db: Engine, writers: number, batch: number, eventBytes: number, label: string): Promise<AppendRun> {
  const latencies: number[] = [];
  let events = 0;
  let bytes = 0;
  const t0 = performance.now();
  const maxEvents = 5_000_000;
  const writer = async (w: number): Promise<void> => {
    let n = 0;
    while (performance.now() - t0 < RUN_MS && events < maxEvents) {
      const batchEvents = Array.from({ length: batch }, (_, i) => makeEvent(eventBytes, n + i));
      const s = performance.now();
      const r = await db.append(`${label}-${w}`, -2, batchEvents);
      latencies.push(performance.now() - s);
      if (r.kind !== 'success') throw new Error(`append failed: ${r.kind}`);
      n += batch;
      events += batch;
      bytes += batchEvents.reduce((sum, e) => sum + e.data.length, 0);
    }
  };
  await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  const elapsedS = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { eventsPerSecond: events / elapsedS, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), mbPerSecond: bytes / 1e6 / elapsedS };
}

function round(v: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

async function appendSection(dir: string, metrics: BenchMetric[], notes: string[]): Promise<void> {
  const rawMBps = rawSequentialMBps(dir, 2000);
  metrics.push({ name: 'raw disk: sequential 1 MiB write + fdatasync', value: round(rawMBps), unit: 'MB/s' });
  const db = await open(path.join(dir, 'append'));
  for (const [writers, batch] of [[1, 1], [64, 1], [1, 100], [64, 100]] as const) {
    const r = await appendLoad(db, writers, batch, 200, `a${writers}x${batch}`);
    const name = `append ~200 B events, ${writers} writer${writers > 1 ? 's' : ''}, batch ${batch}`;
    const target = writers === 64 && batch === 1 ? 50_000 : undefined;
    metrics.push({ name: `${name}: throughput`, value: round(r.eventsPerSecond), unit: 'events/s', ...(target ? { target } : {}) });
    metrics.push({ name: `${name}: p50 latency`, value: round(r.p50Ms, 2), unit: 'ms', lowerIsBetter: true });
    metrics.push({ name: `${name}: p99 latency`, value: round(r.p99Ms, 2), unit: 'ms', lowerIsBetter: true });
  }
  // The disk's speed drifts on a shared machine: the raw limit is measured again right before
  // and right after the 1 KiB run, and the run is compared with the mean of the two.
  const rawBeforeMBps = rawSequentialMBps(dir, 2000);
  const big = await appendLoad(db, 64, 100, 1024, 'kib');
  const rawAfterMBps = rawSequentialMBps(dir, 2000);
  const rawAroundMBps = (rawBeforeMBps + rawAfterMBps) / 2;
  metrics.push({ name: 'append 1 KiB events, 64 writers, batch 100: bandwidth', value: round(big.mbPerSecond), unit: 'MB/s' });
  metrics.push({ name: 'raw disk right before / after the 1 KiB run', value: round(rawAroundMBps), unit: 'MB/s' });
  notes.push(`raw disk around the 1 KiB run: ${round(rawBeforeMBps)} MB/s before, ${round(rawAfterMBps)} MB/s after; at the start of the section: ${round(rawMBps)} MB/s`);
  metrics.push({ name: 'append 1 KiB batched bandwidth / raw sequential bandwidth', value: round((100 * big.mbPerSecond) / rawAroundMBps, 1), unit: '%', target: 50 });
  const stats = db.stats();
  notes.push(`writer: ${stats.writer.flushCount} flushes, mean flush ${round(stats.writer.meanFlushSizeBytes / 1024, 1)} KiB, mean flush delay ${round(stats.writer.meanFlushDelayMs, 2)} ms`);
  await readSection(db, metrics);
  await db.close();
}

async function readSection(db: Engine, metrics: BenchMetric[]): Promise<void> {
  let events = 0;
  let t0 = performance.now();
  while (performance.now() - t0 < RUN_MS) {
    for (let w = 0; w < 64 && performance.now() - t0 < RUN_MS; w++) {
      let from = 0;
      for (let page = 0; page < 50; page++) {
        const r = await db.readStream(`a64x1-${w}`, from, 100, 'forward');
        if (r.kind !== 'success') break;
        events += r.events.length;
        if (r.isEndOfStream) break;
        from = r.nextEventNumber;
      }
    }
  }
  metrics.push({ name: 'stream reads (pages of 100, forward)', value: round(events / ((performance.now() - t0) / 1000)), unit: 'events/s' });
  events = 0;
  t0 = performance.now();
  let pos: { commitPosition: number; preparePosition: number } | undefined;
  while (performance.now() - t0 < RUN_MS) {
    const r = await db.readAll(pos, 1000, 'forward');
    events += r.events.length;
    pos = r.isEnd ? undefined : r.nextPosition;
  }
  metrics.push({ name: '$all reads (pages of 1000, forward)', value: round(events / ((performance.now() - t0) / 1000)), unit: 'events/s' });
}

async function fillStreams(db: Engine, streamCount: number, eventsPerStream: number, prefix: string): Promise<void> {
  let next = 0;
  const t0 = performance.now();
  const writer = async (): Promise<void> => {
    while (next < streamCount && performance.now() - t0 < 600_000) {
      const s = next++;
      const events = Array.from({ length: eventsPerStream }, (_, i) => makeEvent(200, i));
      const r = await db.append(`${prefix}-${s}`, -1, events);
      if (r.kind !== 'success') throw new Error(`fill failed: ${r.kind}`);
    }
  };
  await Promise.all(Array.from({ length: 64 }, () => writer()));
}

async function indexLookupSection(dir: string, metrics: BenchMetric[], notes: string[]): Promise<void> {
  const streams = Number(process.env['BENCH_INDEX_STREAMS'] ?? 1_000_000);
  const db = await open(path.join(dir, 'lookup'), { maxMemTableSize: 250_000 });
  const t0 = performance.now();
  await fillStreams(db, streams, 1, 'stream');
  notes.push(`index: wrote ${streams.toLocaleString('en-US')} streams in ${round((performance.now() - t0) / 1000, 1)} s; tables: ${db.stats().index.tableCount}`);
  let lookups = 0;
  const t1 = performance.now();
  let seed = 12345;
  while (performance.now() - t1 < RUN_MS && lookups < 10_000_000) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const r = await db.readEvent(`stream-${seed % streams}`, 0);
    if (r.kind !== 'success') throw new Error(`lookup failed: ${r.kind}`);
    lookups++;
  }
  metrics.push({ name: `index lookups (read event 0 of a random stream of ${streams.toLocaleString('en-US')})`, value: round(lookups / ((performance.now() - t1) / 1000)), unit: 'lookups/s' });
  let misses = 0;
  const t2 = performance.now();
  while (performance.now() - t2 < 1000 && misses < 10_000_000) {
    await db.streamState(`absent-${misses++}`);
  }
  metrics.push({ name: 'existence checks of absent streams', value: round(misses / ((performance.now() - t2) / 1000)), unit: 'lookups/s' });
  await db.close();
}

function copyDir(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true });
}

async function restartSection(dir: string, metrics: BenchMetric[], notes: string[]): Promise<void> {
  const root = path.join(dir, 'restart');
  const db = await open(root);
  await fillStreams(db, 100_000, 10, 'r');
  // A crash image: the files as they are on disk right now (everything acknowledged is fsynced).
  const crashRoot = path.join(dir, 'restart-crash');
  copyDir(root, crashRoot);
  await db.close();
  for (const [label, where] of [['after clean shutdown', root], ['after a crash (no shutdown)', crashRoot]] as const) {
    const t0 = performance.now();
    const reopened = await open(where);
    const ms = performance.now() - t0;
    const r = await reopened.readStream('r-99999', 0, 100, 'forward');
    if (r.kind !== 'success' || r.events.length !== 10) throw new Error('restart lost data');
    metrics.push({ name: `restart with 1,000,000 events / 100,000 streams, ${label}`, value: round(ms), unit: 'ms', lowerIsBetter: true });
    await reopened.close();
  }
  const logBytes = fs.readdirSync(path.join(root, 'db')).filter((f) => f.startsWith('chunk-')).reduce((n, f) => n + fs.statSync(path.join(root, 'db', f)).size, 0);
  notes.push(`restart: log is ${round(logBytes / 1e6)} MB`);
}

export async function run(): Promise<BenchSection> {
  const dir = fs.mkdtempSync(path.join(process.env['BENCH_DIR'] ?? os.tmpdir(), 'edb-engine-bench-'));
  const metrics: BenchMetric[] = [];
  const notes: string[] = [`data on ${dir}; each load runs ${RUN_MS} ms`];
  const rssBefore = process.memoryUsage().rss;
  try {
    await appendSection(dir, metrics, notes);
    await indexLookupSection(dir, metrics, notes);
    await restartSection(dir, metrics, notes);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  notes.push(`bench process RSS ${round(rssBefore / 1e6)} MB at start, ${round(process.memoryUsage().rss / 1e6)} MB at end`);
  return { name: 'engine', metrics, notes };
}

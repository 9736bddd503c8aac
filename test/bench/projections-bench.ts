/**
 * Projections bench: on a log of BENCH_PROJECTIONS_EVENTS (default 1,000,000) small events in
 * 10 categories, built in-process:
 *  - baseline, same run: the engine reading the whole of $all in-process (events/s), the most a
 *    projection reading $all could do here;
 *  - a simple user projection (`fromAll()`, counts every event) on a real node process: time from
 *    creation until its state has counted every event, as events/s and as a share of the baseline;
 *  - `$by_category` on the same node: time from enabling it until it has read the whole log and
 *    its links are durable (one `$>` written per event), as events/s and share of the baseline;
 *  - the lag of a live event into `$ce-`: one event appended at a time while `$by_category` runs,
 *    from the append's acknowledgement until a long-polling reader of the `$ce-` stream gets it
 *    (p50/p99), beside the append latency itself.
 * Every loop is bounded in time and count.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { openEngine } from '../../node/src/storage/event-db.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { startNode, type NodeProcess } from '../support/node-process.js';
import { percentile, type BenchMetric, type BenchSection } from './bench-types.js';

const EVENTS = Number(process.env['BENCH_PROJECTIONS_EVENTS'] ?? 1_000_000);
const CATEGORIES = 10;
const EVENTS_PER_STREAM = 100;
const BUILD_LIMIT_MS = 300_000;
const CATCH_UP_LIMIT_MS = 900_000;
const LAG_SAMPLES = 300;
const LAG_LIMIT_MS = 120_000;

function round(v: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

function engineOptions(dir: string) {
  return {
    dbPath: path.join(dir, 'db'), indexPath: path.join(dir, 'index'), memDb: false, chunkSizeBytes: 256 * 1024 * 1024,
    maxMemTableSize: 1_000_000, maxEventSizeBytes: 4 << 20, hashCollisionReadLimit: 100,
    // The node's default filter size: with another size the node rebuilds the filter at start-up.
    streamExistenceFilterSizeBytes: 32 << 20,
  };
}

/** Events written per category by buildLog. */
const perCategory = new Map<string, number>();

async function buildLog(dir: string): Promise<number> {
  const db = await openEngine(engineOptions(dir), { log: pino({ level: 'warn' }), onFatal: (err) => { throw err; } });
  let next = 0;
  let written = 0;
  const t0 = performance.now();
  const writer = async (): Promise<void> => {
    while (written < EVENTS && performance.now() - t0 < BUILD_LIMIT_MS) {
      const s = next++;
      const stream = `cat${s % CATEGORIES}-${s}`;
      const events = Array.from({ length: EVENTS_PER_STREAM }, (_, i) => ({
        eventId: crypto.randomUUID(), eventType: i % 2 === 0 ? 'Opened' : 'Changed',
        data: Buffer.from(`{"n":${i},"note":"bench"}`), metadata: Buffer.alloc(0), isJson: true,
      }));
      const r = await db.append(stream, -1, events);
      if (r.kind !== 'success') throw new Error(`fill failed: ${r.kind}`);
      written += events.length;
      perCategory.set(`cat${s % CATEGORIES}`, (perCategory.get(`cat${s % CATEGORIES}`) ?? 0) + events.length);
    }
  };
  await Promise.all(Array.from({ length: 8 }, () => writer()));
  await db.close();
  return written;
}

/** The engine reading the whole log forward in pages of 1000: events/s. */
async function readAllBaseline(dir: string): Promise<{ eventsPerSecond: number; events: number }> {
  const db = await openEngine(engineOptions(dir), { log: pino({ level: 'warn' }), onFatal: (err) => { throw err; } });
  try {
    let from = { commitPosition: 0, preparePosition: 0 };
    let events = 0;
    const t0 = performance.now();
    for (;;) {
      const page = await db.readAll(from, 1000, 'forward');
      events += page.events.length;
      from = page.nextPosition;
      if (page.isEnd || page.events.length === 0 || performance.now() - t0 > CATCH_UP_LIMIT_MS) break;
    }
    return { eventsPerSecond: Math.round(events / ((performance.now() - t0) / 1000)), events };
  } finally {
    await db.close();
  }
}

async function http(node: NodeProcess, method: string, pathname: string, body?: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(`${node.baseUrl}${pathname}`, { method, body, headers: { authorization: ADMIN_AUTHORIZATION, ...headers } });
  return { status: res.status, text: await res.text() };
}

interface Stats { status: string; progress: number; position: string; writePendingEventsAfterCheckpoint: number; writesInProgress: number; stateReason: string }

async function stats(node: NodeProcess, name: string): Promise<Stats> {
  const res = await http(node, 'GET', `/projection/${encodeURIComponent(name)}`, undefined, { accept: 'application/json' });
  return JSON.parse(res.text) as Stats;
}

/** CPU time (user + system) of a process so far, in ms (Linux /proc). */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
  return (ticks * 1000) / 100;
}

/** Waits (at most 120 s) until the node uses under 10% of a core over a second: start-up work done. */
async function settled(node: NodeProcess): Promise<number> {
  const pid = node.child.pid ?? 0;
  const t0 = performance.now();
  for (;;) {
    const before = cpuMs(pid);
    await new Promise((r) => setTimeout(r, 1000));
    if (cpuMs(pid) - before < 100 || performance.now() - t0 > 120_000) return performance.now() - t0;
  }
}

/** Polls every 50 ms until `done`; returns the elapsed ms. */
async function until(what: string, done: () => Promise<boolean>, limitMs: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await done()) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) throw new Error(`${what} did not finish within ${limitMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function caughtUp(node: NodeProcess, name: string): Promise<boolean> {
  const s = await stats(node, name);
  if (s.status.startsWith('Faulted')) throw new Error(`${name} faulted: ${s.stateReason}`);
  return s.status === 'Running' && s.progress === 100 && s.writePendingEventsAfterCheckpoint === 0 && s.writesInProgress === 0;
}

/** Appends one event at a time and measures when a long-polling reader of `$ce-lag` sees it. */
async function liveLag(node: NodeProcess): Promise<{ lags: number[]; appends: number[] }> {
  const lags: number[] = [];
  const appends: number[] = [];
  const t0 = performance.now();
  const stream = `lag-${crypto.randomUUID().slice(0, 8)}`;
  for (let n = 0; n < LAG_SAMPLES && performance.now() - t0 < LAG_LIMIT_MS; n++) {
    // The category stream holds only this stream's links, so its n-th link is this event's.
    const seen = fetch(`${node.baseUrl}/streams/%24ce-lag/${n}/forward/1`, {
      headers: { accept: 'application/vnd.eventstore.atom+json', authorization: ADMIN_AUTHORIZATION, 'ES-LongPoll': '10' },
    }).then(async (res) => {
      const feed = (await res.json()) as { entries: unknown[] };
      if (feed.entries.length !== 1) throw new Error(`the link of event ${n} did not arrive`);
      return performance.now();
    });
    const sent = performance.now();
    const res = await fetch(`${node.baseUrl}/streams/${stream}`, {
      method: 'POST',
      body: JSON.stringify([{ eventId: crypto.randomUUID(), eventType: 'Probe', data: { n } }]),
      headers: { 'content-type': 'application/vnd.eventstore.events+json', authorization: ADMIN_AUTHORIZATION },
    });
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`append answered ${res.status}`);
    const acked = performance.now();
    appends.push(acked - sent);
    lags.push((await seen) - acked);
  }
  return { lags: lags.sort((a, b) => a - b), appends: appends.sort((a, b) => a - b) };
}

export async function run(): Promise<BenchSection> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edb-bench-proj-'));
  const metrics: BenchMetric[] = [];
  const notes: string[] = [];
  let node: NodeProcess | undefined;
  try {
    const t0 = performance.now();
    const written = await buildLog(dir);
    notes.push(`log of ${written.toLocaleString('en-US')} events (${CATEGORIES} categories, ${EVENTS_PER_STREAM} per stream) built in ${round((performance.now() - t0) / 1000, 1)} s`);
    const baseline = await readAllBaseline(dir);
    metrics.push({ name: 'baseline: engine reads $all in-process', value: baseline.eventsPerSecond, unit: 'events/s' });

    node = await startNode({ memDb: false, args: ['--db', path.join(dir, 'db'), '--index', path.join(dir, 'index'), '--run-projections', 'All'] });
    notes.push(`the node settled (start-up work such as index merges done) ${round((await settled(node)) / 1000, 1)} s after it was ready`);
    const pid = node.child.pid ?? 0;
    const userCpu0 = cpuMs(pid);
    const source = 'fromAll().when({ $init: function () { return { n: 0 }; }, $any: function (s, e) { s.n += 1; } })';
    const created = performance.now();
    const res = await http(node, 'POST', '/projections/continuous?name=bench-count&type=JS&enabled=yes', source, { 'content-type': 'application/javascript' });
    if (res.status !== 201) throw new Error(`creating the user projection answered ${res.status}: ${res.text}`);
    await until('the user projection', async () => {
      const state = await http(node as NodeProcess, 'GET', '/projection/bench-count/state');
      return state.text !== '' && (JSON.parse(state.text) as { n: number }).n >= written;
    }, CATCH_UP_LIMIT_MS);
    const userMs = performance.now() - created;
    const userRate = Math.round(written / (userMs / 1000));
    notes.push(`user projection: the node's threads used ${round((100 * (cpuMs(pid) - userCpu0)) / userMs)}% of a core meanwhile (the projection's worker thread included)`);
    metrics.push({ name: 'user projection fromAll counting every event', value: userRate, unit: 'events/s' });
    metrics.push({ name: 'user projection vs baseline', value: round((100 * userRate) / baseline.eventsPerSecond, 1), unit: '%' });
    await http(node, 'POST', '/projection/bench-count/command/disable');

    const categoryCpu0 = cpuMs(pid);
    const enabled = performance.now();
    const enable = await http(node, 'POST', '/projection/%24by_category/command/enable');
    if (enable.status !== 200) throw new Error(`enabling $by_category answered ${enable.status}`);
    await until('$by_category', () => caughtUp(node as NodeProcess, '$by_category'), CATCH_UP_LIMIT_MS);
    const categoryMs = performance.now() - enabled;
    const categoryRate = Math.round(written / (categoryMs / 1000));
    notes.push(`$by_category: the node used ${round((100 * (cpuMs(pid) - categoryCpu0)) / categoryMs)}% of a core meanwhile`);
    metrics.push({ name: '$by_category (reads each event, writes its $> link)', value: categoryRate, unit: 'events/s' });
    metrics.push({ name: '$by_category vs baseline', value: round((100 * categoryRate) / baseline.eventsPerSecond, 1), unit: '%' });
    const ce = await http(node, 'GET', '/streams/%24ce-cat0/head/backward/1', undefined, { accept: 'application/vnd.eventstore.atom+json', 'ES-ResolveLinkTos': 'false' });
    const head = JSON.parse(ce.text) as { entries: Array<{ title: string }> };
    notes.push(`$ce-cat0 head after the run: ${head.entries[0]?.title ?? 'none'} (expected ${(perCategory.get('cat0') ?? 0) - 1}@$ce-cat0)`);

    const { lags, appends } = await liveLag(node);
    metrics.push({ name: 'live event into $ce- after its append is acknowledged, p50', value: round(percentile(lags, 0.5), 2), unit: 'ms', lowerIsBetter: true });
    metrics.push({ name: 'live event into $ce- after its append is acknowledged, p99', value: round(percentile(lags, 0.99), 2), unit: 'ms', lowerIsBetter: true });
    metrics.push({ name: 'single-event append latency in the same loop, p50', value: round(percentile(appends, 0.5), 2), unit: 'ms', lowerIsBetter: true });
    notes.push(`${lags.length} live events, one at a time, each read by a long poll (ES-LongPoll) on $ce-lag`);
    notes.push(`load average at the end: ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  } finally {
    if (node !== undefined) await node.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return { name: 'projections', metrics, notes };
}

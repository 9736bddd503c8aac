/**
 * Persistent subscriptions bench: a real node on disk, consumers over HTTP keep-alive
 * connections (one each, as the node tells consumers apart by connection), all in this process.
 *
 * - Throughput: messages/s delivered and acknowledged by 1 and by 8 competing consumers, each
 *   pulling pages of PAGE messages (embed=body) and acknowledging each page with its ackAll
 *   link; a fresh group (default settings) per run. Baseline, same run and same node: plain
 *   forward reads of the same stream by 1 and 8 readers in pages of PAGE (embed=body).
 * - Live delivery latency: an event is appended every INTERVAL ms; a consumer long-polls
 *   (ES-LongPoll) with count 1 and acknowledges; latency = from the append request's start to
 *   the message's arrival, p50/p99. Baseline: the same with a long-polling forward read of the
 *   stream (GET /streams/{s}/{n}/forward/1 with ES-LongPoll).
 *
 * Every loop is bounded in time (BENCH_SUBSCRIPTIONS_MS per run, default 6000) and in count.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { Pool } from 'undici';

import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { startNode, type NodeProcess } from '../support/node-process.js';
import { CLOCK_TICKS_PER_SECOND, cpuTicksOf } from './bench-process.js';
import { percentile, type BenchMetric, type BenchSection } from './bench-types.js';
import { onInterrupt } from './interrupt.js';

const RUN_MS = Number(process.env['BENCH_SUBSCRIPTIONS_MS'] ?? 6_000);
const EVENTS = 120_000;
const PAGE = 100;
const PAYLOAD = JSON.stringify({ filler: 'x'.repeat(86) }); // ~100 B of data per event
const LIVE_EVENTS_MAX = 400;
const LIVE_INTERVAL_MS = 15;
const STREAM = 'bench-subscriptions';
const COMPETING_JSON = 'application/vnd.eventstore.competingatom+json';
const ATOM_JSON = 'application/vnd.eventstore.atom+json';

interface Throughput {
  readonly perSecond: number;
  readonly count: number;
  readonly elapsedMs: number;
  readonly errors: number;
  /** CPU of the node process during the run, in % of one core. */
  readonly serverCpuPercent: number;
  /** CPU of this (load-generating) process during the run, in % of one core. */
  readonly clientCpuPercent: number;
}

/** The node's pid, for its CPU figures (set once it runs). */
let serverPid = 0;

/** utime + stime of a process in ms; 0 once it is gone. */
function cpuMsOf(pid: number): number {
  return (cpuTicksOf(pid) * 1000) / CLOCK_TICKS_PER_SECOND;
}

export async function run(): Promise<BenchSection> {
  const dir = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'eventdb-bench-subs-'));
  const notes: string[] = [
    `${EVENTS} events of ~100 B; pages of ${PAGE} (embed=body); each run ${RUN_MS} ms at most (BENCH_SUBSCRIPTIONS_MS)`,
    `machine: load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} at start`,
    'consumers and readers run in the bench process, one keep-alive connection each; groups use the default settings',
  ];
  let node: NodeProcess | undefined;
  const unregister = onInterrupt(() => {
    node?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    node = await startNode({
      memDb: false,
      args: ['--db', join(dir, 'db'), '--index', join(dir, 'index')],
    });
    const origin = node.baseUrl;
    serverPid = node.child.pid ?? 0;
    await fill(origin);
    const metrics: BenchMetric[] = [];
    for (const consumers of [1, 8]) {
      const baseline = await readThroughput(origin, consumers);
      const subscription = await consumeThroughput(origin, consumers, `tp-${consumers}`);
      process.stderr.write(
        `  ${consumers} consumer(s): ${subscription.perSecond} msg/s; stream reads ${baseline.perSecond} events/s\n`,
      );
      metrics.push(
        { name: `delivered+acked, ${consumers} consumer(s)`, value: subscription.perSecond, unit: 'msg/s' },
        { name: `stream reads (baseline), ${consumers} reader(s)`, value: baseline.perSecond, unit: 'events/s' },
        {
          name: `delivered+acked / stream reads, ${consumers}`,
          value: round(subscription.perSecond / Math.max(1, baseline.perSecond), 2),
          unit: 'x',
        },
      );
      notes.push(
        `${consumers}: node CPU ${subscription.serverCpuPercent}% (subscription) vs ${baseline.serverCpuPercent}% (reads), ` +
          `load generator ${subscription.clientCpuPercent}% vs ${baseline.clientCpuPercent}% of one core`,
      );
      if (subscription.errors + baseline.errors > 0)
        notes.push(`${consumers}: ${subscription.errors} subscription errors, ${baseline.errors} read errors`);
    }
    const streamLatency = await liveLatency(origin, 'stream');
    const subscriptionLatency = await liveLatency(origin, 'subscription');
    process.stderr.write(
      `  live latency p50/p99: subscription ${subscriptionLatency.p50}/${subscriptionLatency.p99} ms, stream long poll ${streamLatency.p50}/${streamLatency.p99} ms\n`,
    );
    metrics.push(
      { name: 'live delivery latency p50 (subscription)', value: subscriptionLatency.p50, unit: 'ms', lowerIsBetter: true },
      { name: 'live delivery latency p99 (subscription)', value: subscriptionLatency.p99, unit: 'ms', lowerIsBetter: true },
      { name: 'live delivery latency p50 (stream long poll, baseline)', value: streamLatency.p50, unit: 'ms', lowerIsBetter: true },
      { name: 'live delivery latency p99 (stream long poll, baseline)', value: streamLatency.p99, unit: 'ms', lowerIsBetter: true },
      {
        name: 'live latency p50 subscription / stream long poll',
        value: round(subscriptionLatency.p50 / Math.max(0.001, streamLatency.p50), 2),
        unit: 'x',
        lowerIsBetter: true,
      },
    );
    notes.push(
      `live latency: ${subscriptionLatency.samples} and ${streamLatency.samples} events appended every ${LIVE_INTERVAL_MS} ms, measured from the append request's start (its fsync included)`,
    );
    return { name: 'subscriptions', metrics, notes };
  } finally {
    if (node !== undefined) await node.stop();
    unregister();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function fill(origin: string): Promise<void> {
  const pool = new Pool(origin, { connections: 4 });
  try {
    const batch = 1_000;
    const post = async (start: number): Promise<void> => {
      let body = '[';
      for (let i = start; i < start + batch; i++) {
        body += `${i === start ? '' : ','}{"eventId":"${crypto.randomUUID()}","eventType":"Bench","data":${PAYLOAD}}`;
      }
      const res = await pool.request({
        method: 'POST',
        path: `/streams/${STREAM}`,
        headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/vnd.eventstore.events+json' },
        body: `${body}]`,
      });
      await res.body.dump();
      if (res.statusCode !== 201) throw new Error(`fill: HTTP ${res.statusCode}`);
    };
    for (let start = 0; start < EVENTS; start += batch * 4) {
      await Promise.all([0, 1, 2, 3].map((k) => post(start + k * batch)));
    }
  } finally {
    await pool.close();
  }
}

/** `workers` lanes, each on its own connection, until the time or the count runs out. */
async function lanes(
  origin: string,
  workers: number,
  countMax: number,
  step: (pool: Pool, lane: number) => Promise<number>,
): Promise<Throughput> {
  const pools = Array.from({ length: workers }, () => new Pool(origin, { connections: 1, pipelining: 1 }));
  let count = 0;
  let errors = 0;
  const serverCpuStart = cpuMsOf(serverPid);
  const clientCpuStart = process.cpuUsage();
  const start = performance.now();
  const deadline = start + RUN_MS;
  try {
    await Promise.all(
      pools.map(async (pool, lane) => {
        let idle = 0;
        while (performance.now() < deadline && count < countMax && idle < 50) {
          try {
            const n = await step(pool, lane);
            count += n;
            idle = n === 0 ? idle + 1 : 0;
          } catch {
            errors += 1;
            if (errors > 100) return;
          }
        }
      }),
    );
  } finally {
    await Promise.all(pools.map((pool) => pool.close()));
  }
  const elapsedMs = performance.now() - start;
  const clientCpu = process.cpuUsage(clientCpuStart);
  return {
    perSecond: Math.round((count / elapsedMs) * 1000),
    count,
    elapsedMs,
    errors,
    serverCpuPercent: Math.round(((cpuMsOf(serverPid) - serverCpuStart) / elapsedMs) * 100),
    clientCpuPercent: Math.round(((clientCpu.user + clientCpu.system) / 1000 / elapsedMs) * 100),
  };
}

function readThroughput(origin: string, readers: number): Promise<Throughput> {
  const slice = Math.floor(EVENTS / readers);
  const cursors = Array.from({ length: readers }, (_, i) => i * slice);
  return lanes(origin, readers, EVENTS, async (pool, lane) => {
    const from = cursors[lane] ?? 0;
    const res = await pool.request({
      method: 'GET',
      path: `/streams/${STREAM}/${from}/forward/${PAGE}?embed=body`,
      headers: { authorization: ADMIN_AUTHORIZATION, accept: ATOM_JSON },
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`read: HTTP ${res.statusCode}`);
    const entries = (JSON.parse(text) as { entries: unknown[] }).entries.length;
    cursors[lane] = from + entries >= (lane + 1) * slice ? lane * slice : from + entries;
    return entries;
  });
}

async function consumeThroughput(origin: string, consumers: number, group: string): Promise<Throughput> {
  await createGroup(origin, group, {});
  const path = `/subscriptions/${STREAM}/${group}/${PAGE}?embed=body`;
  const result = await lanes(origin, consumers, EVENTS, async (pool) => {
    const res = await pool.request({
      method: 'GET',
      path,
      headers: { authorization: ADMIN_AUTHORIZATION, accept: COMPETING_JSON },
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`pull: HTTP ${res.statusCode}`);
    const feed = JSON.parse(text) as { entries: unknown[]; links: { uri: string; relation: string }[] };
    if (feed.entries.length === 0) return 0;
    const ackAll = feed.links.find((l) => l.relation === 'ackAll')?.uri ?? '';
    const ack = await pool.request({
      method: 'POST',
      path: ackAll.slice(origin.length),
      headers: { authorization: ADMIN_AUTHORIZATION },
    });
    await ack.body.dump();
    if (ack.statusCode !== 202) throw new Error(`ack: HTTP ${ack.statusCode}`);
    return feed.entries.length;
  });
  await fetch(`${origin}/subscriptions/${STREAM}/${group}`, {
    method: 'DELETE',
    headers: { authorization: ADMIN_AUTHORIZATION },
  });
  return result;
}

async function createGroup(origin: string, group: string, settings: Record<string, unknown>, stream = STREAM): Promise<void> {
  const res = await fetch(`${origin}/subscriptions/${stream}/${group}`, {
    method: 'PUT',
    headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  if (res.status !== 201) throw new Error(`create group: HTTP ${res.status}`);
}

/**
 * Appends an event every LIVE_INTERVAL_MS while one receiver long-polls for it, either
 * through a subscription group (pull 1, ack) or with a forward stream read; answers the
 * latency percentiles from each append's start to the event's arrival.
 */
async function liveLatency(
  origin: string,
  via: 'subscription' | 'stream',
): Promise<{ p50: number; p99: number; samples: number }> {
  const stream = `bench-live-${via}-${Date.now()}`;
  if (via === 'subscription') await createGroup(origin, 'live', { startFrom: 0 }, stream);
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const writer = new Pool(origin, { connections: 1 });
  const reader = new Pool(origin, { connections: 1, pipelining: 1 });
  const deadline = performance.now() + RUN_MS;
  let done = false;
  let next = 0;
  const receive = async (): Promise<void> => {
    while (!done && performance.now() < deadline + 2_000) {
      const path =
        via === 'subscription'
          ? `/subscriptions/${stream}/live/1`
          : `/streams/${stream}/${next}/forward/1`;
      const res = await reader.request({
        method: 'GET',
        path,
        headers: {
          authorization: ADMIN_AUTHORIZATION,
          accept: via === 'subscription' ? COMPETING_JSON : ATOM_JSON,
          'es-longpoll': '2',
        },
      });
      const text = await res.body.text();
      const arrived = performance.now();
      if (res.statusCode === 404) {
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      if (res.statusCode !== 200) throw new Error(`live ${via}: HTTP ${res.statusCode}`);
      const feed = JSON.parse(text) as { entries: { title: string; links: { uri: string; relation: string }[] }[] };
      for (const entry of feed.entries) {
        const number = Number(entry.title.split('@')[0]);
        const sent = sentAt.get(number);
        if (sent !== undefined) latencies.push(arrived - sent);
        next = Math.max(next, number + 1);
        if (via === 'subscription') {
          const ack = entry.links.find((l) => l.relation === 'ack')?.uri ?? '';
          const acked = await reader.request({ method: 'POST', path: ack.slice(origin.length), headers: { authorization: ADMIN_AUTHORIZATION } });
          await acked.body.dump();
        }
      }
      if (latencies.length >= LIVE_EVENTS_MAX) return;
    }
  };
  const write = async (): Promise<void> => {
    for (let n = 0; n < LIVE_EVENTS_MAX && performance.now() < deadline; n++) {
      sentAt.set(n, performance.now());
      const res = await writer.request({
        method: 'POST',
        path: `/streams/${stream}`,
        headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/vnd.eventstore.events+json' },
        body: `[{"eventId":"${crypto.randomUUID()}","eventType":"Live","data":${PAYLOAD}}]`,
      });
      await res.body.dump();
      await new Promise((r) => setTimeout(r, LIVE_INTERVAL_MS));
    }
  };
  try {
    const receiving = receive().catch((err: unknown) => {
      if (!done) throw err;
    });
    await write();
    await Promise.race([receiving, new Promise((r) => setTimeout(r, 3_000))]);
  } finally {
    done = true;
    await Promise.all([writer.close(), reader.destroy()]);
  }
  latencies.sort((a, b) => a - b);
  return {
    p50: round(percentile(latencies, 0.5), 2),
    p99: round(percentile(latencies, 0.99), 2),
    samples: latencies.length,
  };
}

function round(value: number, digits = 0): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

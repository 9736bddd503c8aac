/**
 * HTTP section: a real EventDB node process (temp directory, durable on disk) driven by a
 * separate load-generator process, then the same workloads against a private PostgreSQL
 * cluster used as an event store (unique (stream, version), synchronous_commit on).
 *
 * Workloads: single-event appends over 64 keep-alive connections, 100-event batches over 16,
 * and forward feed reads with embed=body over 16. Each is bounded in time and in count.
 * Figures: events/s, p50/p99 request latency, the node's peak RSS (VmHWM), EventDB/PostgreSQL.
 *
 * Environment: BENCH_DURATION_MS (per workload, default 12000), BENCH_POSTGRES=0 skips
 * PostgreSQL, BENCH_DIR puts the data elsewhere than the OS temp directory.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { BenchMetric, BenchSection, WorkloadPlan, WorkloadResult } from './bench-types.js';
import { eventsPerSecond } from './bench-types.js';
import { CLOCK_TICKS_PER_SECOND, cpuTicksOf, loadAverage, runDelayNsOf, runWorker } from './bench-process.js';
import type { WorkloadSpec } from './load-worker.js';
import { ensurePostgresInstalled, startPostgres } from './pg-server.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { spawnLauncher } from '../support/node-process.js';

const DURATION_MS = Number(process.env['BENCH_DURATION_MS'] ?? 12_000);
const PAYLOAD_BYTES = 100;

type Plan = WorkloadPlan<'single' | 'batch' | 'read'>;

const PLANS: readonly Plan[] = [
  {
    key: 'single',
    label: 'append 1 event/request, 64 conns',
    connections: 64,
    eventsPerRequest: 1,
    requestCountMax: 1_000_000,
    target: 10_000,
  },
  {
    key: 'batch',
    label: 'append 100 events/request, 16 conns',
    connections: 16,
    eventsPerRequest: 100,
    requestCountMax: 50_000,
    target: 150_000,
  },
  {
    key: 'read',
    label: 'read 100 events/page, 16 conns',
    connections: 16,
    eventsPerRequest: 100,
    requestCountMax: 500_000,
  },
];

/** A workload's result plus how long the server's main thread sat runnable without a CPU. */
type MeasuredResult = WorkloadResult & { readonly serverRunQueueWaitPercent?: number };

type Results = Partial<Record<Plan['key'], MeasuredResult>>;

export async function run(): Promise<BenchSection> {
  const notes: string[] = [
    `each workload runs ${DURATION_MS} ms (BENCH_DURATION_MS), payload ${PAYLOAD_BYTES} B/event`,
    'reads: EventDB forward feed pages with embed=body (Atom JSON); PostgreSQL SELECT by stream',
    `machine: ${os.availableParallelism()} CPUs, load average ${loadAverage()} at start`,
  ];
  const eventdb = await runEventDb(notes);
  const postgres = await runPostgres(notes);
  notes.push(
    `load average ${loadAverage()} at the end; "server waiting for a CPU" shows how much the load generator and other jobs held the CPUs`,
  );
  const metrics: BenchMetric[] = [];
  for (const plan of PLANS) {
    const ours = eventdb.results[plan.key];
    const theirs = postgres?.[plan.key];
    if (ours !== undefined)
      metrics.push(...workloadMetrics(`EventDB ${plan.label}`, ours, plan.target));
    if (theirs !== undefined) metrics.push(...workloadMetrics(`PostgreSQL ${plan.label}`, theirs));
    if (ours !== undefined && theirs !== undefined && eventsPerSecond(theirs) > 0) {
      metrics.push({
        name: `EventDB/PostgreSQL ${plan.key}`,
        value: round(eventsPerSecond(ours) / eventsPerSecond(theirs)),
        unit: 'x',
      });
    }
  }
  const unscraped = eventdb.results.single;
  if (eventdb.scraped !== undefined && unscraped !== undefined) {
    metrics.push({ name: 'EventDB append 1 event/request, 64 conns, /metrics scraped every 1 s: throughput', value: eventsPerSecond(eventdb.scraped), unit: 'events/s' });
    metrics.push({ name: 'EventDB append 1 event/request, 64 conns, /metrics scraped every 1 s: p99 latency', value: eventdb.scraped.latencyP99Ms, unit: 'ms', lowerIsBetter: true });
    if (eventsPerSecond(unscraped) > 0) {
      metrics.push({ name: 'EventDB single appends scraped every 1 s / not scraped', value: round(eventsPerSecond(eventdb.scraped) / eventsPerSecond(unscraped)), unit: 'x' });
    }
  }
  metrics.push({
    name: 'EventDB node peak RSS (VmHWM)',
    value: round(eventdb.peakRssBytes / 1024 / 1024),
    unit: 'MiB',
    lowerIsBetter: true,
  });
  return { name: 'http', metrics, notes };
}

function workloadMetrics(prefix: string, result: MeasuredResult, target?: number): BenchMetric[] {
  const metrics: BenchMetric[] = [
    {
      name: `${prefix}: throughput`,
      value: eventsPerSecond(result),
      unit: 'events/s',
      ...(target === undefined ? {} : { target }),
    },
    { name: `${prefix}: p50 latency`, value: result.latencyP50Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${prefix}: p99 latency`, value: result.latencyP99Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${prefix}: errors`, value: result.errorCount, unit: 'requests', lowerIsBetter: true },
    { name: `${prefix}: server CPU`, value: result.serverCpuPercent ?? 0, unit: '% of 1 core' },
    { name: `${prefix}: load generator CPU`, value: result.clientCpuPercent, unit: '% of 1 core' },
  ];
  // Time the node's main thread was ready to run but had no CPU (the load generator, the node's
  // own threads and any other job on the machine held them): a starved run shows here. Only for
  // the one-process node: PostgreSQL's backends would add up to several times the run time.
  if (result.serverRunQueueWaitPercent !== undefined) {
    metrics.push({
      name: `${prefix}: server waiting for a CPU`,
      value: result.serverRunQueueWaitPercent,
      unit: '% of run time',
      lowerIsBetter: true,
    });
  }
  return metrics;
}

async function runEventDb(notes: string[]): Promise<{ results: Results; scraped: Awaited<ReturnType<typeof runWorker>> | undefined; peakRssBytes: number }> {
  const dir = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'eventdb-bench-node-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const node = startNode(dir, port);
  const rss = watchPeakRss(node.pid ?? 0);
  try {
    await waitUntilServing(origin, node);
    const http = { origin, authorization: ADMIN_AUTHORIZATION };
    const results = await runWorkloads(
      notes,
      'EventDB',
      () => [node.pid ?? 0],
      (plan, streamLengths, prefix) =>
        plan.key === 'read'
          ? {
              kind: 'http-read',
              ...http,
              ...common(plan),
              pageSize: plan.eventsPerRequest,
              streamLengths,
            }
          : {
              kind: 'http-append',
              ...http,
              ...common(plan),
              eventsPerRequest: plan.eventsPerRequest,
              streamPrefix: prefix,
              payloadBytes: PAYLOAD_BYTES,
            },
    );
    // The single-event appends again on the same node, with GET /metrics every second (as a
    // Prometheus scraping at 1 s would): what the metrics cost the write path.
    const single = PLANS.find((plan) => plan.key === 'single');
    let scraped: Awaited<ReturnType<typeof runWorker>> | undefined;
    if (single !== undefined) {
      let scrapes = 0;
      let scrapeFailures = 0;
      const timer = setInterval(() => {
        fetch(`${origin}/metrics`, { headers: { authorization: ADMIN_AUTHORIZATION } })
          .then(async (response) => { await response.text(); if (response.ok) scrapes++; else scrapeFailures++; })
          .catch(() => { scrapeFailures++; });
      }, 1000);
      try {
        scraped = await runWorker({ kind: 'http-append', ...http, ...common(single), eventsPerRequest: single.eventsPerRequest, streamPrefix: `bench-scraped-${Date.now()}`, payloadBytes: PAYLOAD_BYTES });
      } finally {
        clearInterval(timer);
      }
      notes.push(`single appends with /metrics scraped every 1 s (after the unscraped run, same node): ${scrapes} scrapes, ${scrapeFailures} failed`);
      process.stderr.write(`  EventDB ${single.label}, /metrics every 1 s: ${eventsPerSecond(scraped)} events/s, p99 ${scraped.latencyP99Ms} ms\n`);
    }
    notes.push(...(await nodeStatsNotes(origin)));
    return { results, scraped, peakRssBytes: rss.stop() };
  } finally {
    rss.stop();
    await stopNode(node);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runPostgres(notes: string[]): Promise<Results | undefined> {
  if (process.env['BENCH_POSTGRES'] === '0') {
    notes.push('PostgreSQL comparison skipped (BENCH_POSTGRES=0)');
    return undefined;
  }
  const binDir = ensurePostgresInstalled(notes);
  if (binDir === undefined) return undefined;
  const server = await startPostgres(binDir, await freePort());
  notes.push(
    `PostgreSQL ${server.version}: private cluster on 127.0.0.1, fsync=on, synchronous_commit=on, one row per event`,
  );
  try {
    return await runWorkloads(notes, 'PostgreSQL', postgresPids, (plan, streamLengths, prefix) =>
      plan.key === 'read'
        ? {
            kind: 'pg-read',
            connectionString: server.connectionString,
            ...common(plan),
            pageSize: plan.eventsPerRequest,
            streamLengths,
          }
        : {
            kind: 'pg-append',
            connectionString: server.connectionString,
            ...common(plan),
            eventsPerRequest: plan.eventsPerRequest,
            streamPrefix: prefix,
            payloadBytes: PAYLOAD_BYTES,
          },
    );
  } finally {
    server.stop();
  }
}

function common(plan: Plan): {
  connections: number;
  durationMs: number;
  requestCountMax: number;
} {
  return {
    connections: plan.connections,
    durationMs: DURATION_MS,
    requestCountMax: plan.requestCountMax,
  };
}

/** Runs the plans in order; the read workload reads the streams the batch workload wrote. */
async function runWorkloads(
  notes: string[],
  system: string,
  serverPids: () => number[],
  specOf: (
    plan: Plan,
    streamLengths: Record<string, number>,
    prefix: string,
  ) => WorkloadSpec,
): Promise<Results> {
  const results: Results = {};
  for (const plan of PLANS) {
    const streamLengths = { ...(results.batch?.streamLengths ?? {}) };
    const cpu = watchCounter(serverPids, cpuTicksOf);
    const runDelay = watchCounter(serverPids, runDelayNsOf);
    const measured = await runWorker(
      specOf(plan, streamLengths, `bench-${plan.key}-${Date.now()}`),
    );
    const serverSeconds = cpu.stop() / CLOCK_TICKS_PER_SECOND;
    const serverCpuPercent = round((serverSeconds / (measured.elapsedMs / 1000)) * 100);
    const runDelayMs = runDelay.stop() / 1e6;
    const result: MeasuredResult = {
      ...measured,
      serverCpuPercent,
      // One node process: its main thread's delay. (PostgreSQL: a sum over backends, not shown.)
      ...(serverPids().length === 1
        ? { serverRunQueueWaitPercent: round((runDelayMs / measured.elapsedMs) * 100) }
        : {}),
    };
    results[plan.key] = result;
    process.stderr.write(
      `  ${system} ${plan.label}: ${eventsPerSecond(result)} events/s, p99 ${result.latencyP99Ms} ms\n`,
    );
    if (result.errorCount > 0)
      notes.push(
        `${system} ${plan.key}: ${result.errorCount} errors, first: ${result.firstError ?? '?'}`,
      );
  }
  return results;
}

export function startNode(dir: string, port: number): ChildProcess {
  const log = openSync(join(dir, 'node.log'), 'a');
  const args = [
    '--insecure',
    '--db',
    join(dir, 'db'),
    '--index',
    join(dir, 'index'),
    '--http-ip',
    '127.0.0.1',
    '--http-port',
    String(port),
    '--log-level',
    'warn',
  ];
  const child = spawnLauncher(args, { stdio: ['ignore', log, log] });
  closeSync(log);
  return child;
}

export async function waitUntilServing(origin: string, node: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (node.exitCode !== null) throw new Error(`node exited early with code ${node.exitCode}`);
    try {
      const res = await fetch(`${origin}/streams/bench-warmup`, {
        method: 'POST',
        headers: {
          authorization: ADMIN_AUTHORIZATION,
          'content-type': 'application/vnd.eventstore.events+json',
        },
        body: JSON.stringify([{ eventId: crypto.randomUUID(), eventType: 'warmup', data: {} }]),
      });
      if (res.status === 201) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('node did not start serving within 60 s');
}

export async function stopNode(node: ChildProcess): Promise<void> {
  if (node.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => node.once('exit', () => resolve()));
  node.kill('SIGTERM');
  const timer = setTimeout(() => node.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/** Polls VmHWM (the kernel's own peak RSS) while the node runs; stop() returns the peak. */
export function watchPeakRss(pid: number): { stop: () => number } {
  let peak = 0;
  const poll = (): void => {
    try {
      const kb = /^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      if (kb !== undefined) peak = Math.max(peak, Number(kb) * 1024);
    } catch {
      // The process has exited; keep the last figure.
    }
  };
  const timer = setInterval(poll, 500);
  return {
    stop: () => {
      poll();
      clearInterval(timer);
      return peak;
    },
  };
}

async function nodeStatsNotes(origin: string): Promise<string[]> {
  try {
    const res = await fetch(`${origin}/stats`, {
      headers: { authorization: ADMIN_AUTHORIZATION, accept: 'application/json' },
    });
    if (res.status !== 200) return [`/stats answered ${res.status}`];
    const stats = (await res.json()) as {
      svc?: { writer?: Record<string, number> };
      proc?: { diskIo?: Record<string, number> };
    };
    const writer = stats.svc?.writer;
    const io = stats.proc?.diskIo;
    return [
      `node /stats after the run: writer meanFlushSize ${writer?.['meanFlushSize']} B, maxFlushSize ${writer?.['maxFlushSize']} B, ` +
        `meanFlushDelayMs ${writer?.['meanFlushDelayMs']}; diskIo writtenBytes ${io?.['writtenBytes']}`,
    ];
  } catch (err: unknown) {
    return [`/stats unavailable: ${err instanceof Error ? err.message : String(err)}`];
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * How much a per-process counter (CPU ticks, run-queue delay) grows from now until stop(),
 * summed over the processes. Sampled every 250 ms so that processes started during the run
 * (PostgreSQL backends) are counted from zero.
 */
export function watchCounter(pidsOf: () => number[], read: (pid: number) => number): { stop: () => number } {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const sample = (initial: boolean): void => {
    for (const pid of pidsOf()) {
      const value = read(pid);
      if (!first.has(pid)) first.set(pid, initial ? value : 0);
      last.set(pid, value);
    }
  };
  sample(true);
  const timer = setInterval(() => sample(false), 250);
  return {
    stop: () => {
      sample(false);
      clearInterval(timer);
      let total = 0;
      for (const [pid, end] of last) total += end - (first.get(pid) ?? 0);
      return total;
    },
  };
}

/** Every running postgres process (postmaster and backends). */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

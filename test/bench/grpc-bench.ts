/**
 * gRPC section: one durable EventDB node process, driven over HTTP (undici, the http section's
 * workloads) and over gRPC with the official Node client (@kurrent/kurrentdb-client: appends
 * through grpc-js, reads and subscriptions through its Rust bridge), each from a separate
 * load-generator process, in the same run, alternating protocols so that drift in the machine's
 * load falls on both. PostgreSQL's figures for the same append workloads are in the http section
 * of the same `make bench` run.
 *
 * Workloads: single-event appends with 64 in flight (64 keep-alive connections for HTTP, one
 * HTTP/2 connection for gRPC), 100-event appends with 16 in flight; then reading $all forwards
 * from the start (4 readers, a lap of every event each) and a catch-up subscription to $all from
 * the start until it has every event (1 subscriber, repeated). Figures: events/s, p50/p99, the
 * node's CPU per event, gRPC/HTTP ratios.
 *
 * Environment: BENCH_DURATION_MS (per workload, default 12000), BENCH_DIR.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { BenchMetric, BenchSection, WorkloadResult } from './bench-types.js';
import { eventsPerSecond } from './bench-types.js';
import { CLOCK_TICKS_PER_SECOND, cpuTicksOf, loadAverage, runWorker } from './bench-process.js';
import { freePort, startNode, stopNode, waitUntilServing, watchCounter, watchPeakRss } from './http-bench.js';
import type { WorkloadSpec } from './load-worker.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';

const DURATION_MS = Number(process.env['BENCH_DURATION_MS'] ?? 12_000);
const PAYLOAD_BYTES = 100;
/** Events one $all read or subscription request takes. */
const LAP_EVENTS_MAX = 100_000;

interface Measured {
  readonly result: WorkloadResult;
  /** Node CPU seconds per event, in µs. */
  readonly cpuPerEventUs: number;
}

export async function run(): Promise<BenchSection> {
  const notes: string[] = [
    `each workload runs ${DURATION_MS} ms (BENCH_DURATION_MS), payload ${PAYLOAD_BYTES} B/event, one node, durable on disk`,
    `machine: ${os.availableParallelism()} CPUs, load average ${loadAverage()} at start`,
  ];
  const dir = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'eventdb-bench-grpc-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const connectionString = `kurrentdb://127.0.0.1:${port}?tls=false`;
  const node = startNode(dir, port);
  const rss = watchPeakRss(node.pid ?? 0);
  const metrics: BenchMetric[] = [];
  try {
    await waitUntilServing(origin, node);
    const measure = async (label: string, spec: WorkloadSpec): Promise<Measured> => {
      const cpu = watchCounter(() => [node.pid ?? 0], cpuTicksOf);
      const result = await runWorker(spec);
      const serverSeconds = cpu.stop() / CLOCK_TICKS_PER_SECOND;
      const measured = {
        result: { ...result, serverCpuPercent: round((serverSeconds / (result.elapsedMs / 1000)) * 100) },
        cpuPerEventUs: result.eventCount > 0 ? round((serverSeconds / result.eventCount) * 1e6) : 0,
      };
      process.stderr.write(`  ${label}: ${eventsPerSecond(result)} events/s, p99 ${result.latencyP99Ms} ms, node CPU ${measured.cpuPerEventUs} µs/event\n`);
      if (result.errorCount > 0) notes.push(`${label}: ${result.errorCount} errors, first: ${result.firstError ?? '?'}`);
      metrics.push(...workloadMetrics(label, measured));
      return measured;
    };
    const common = (connections: number, requestCountMax: number) => ({ connections, durationMs: DURATION_MS, requestCountMax });
    const http = { origin, authorization: ADMIN_AUTHORIZATION };
    let written = 1; // the warm-up event
    for (const [key, connections, eventsPerRequest, requestCountMax] of [['single', 64, 1, 1_000_000], ['batch', 16, 100, 50_000]] as const) {
      const what = `append ${eventsPerRequest} event${eventsPerRequest === 1 ? '' : 's'}/request, ${connections} in flight`;
      const overHttp = await measure(`HTTP ${what}`, { kind: 'http-append', ...http, ...common(connections, requestCountMax), eventsPerRequest, streamPrefix: `bench-http-${key}-${Date.now()}`, payloadBytes: PAYLOAD_BYTES });
      const overGrpc = await measure(`gRPC ${what}`, { kind: 'grpc-append', connectionString, ...common(connections, requestCountMax), eventsPerRequest, streamPrefix: `bench-grpc-${key}-${Date.now()}`, payloadBytes: PAYLOAD_BYTES });
      written += overHttp.result.eventCount + overGrpc.result.eventCount;
      metrics.push(ratio(`gRPC/HTTP ${key} appends: throughput`, eventsPerSecond(overGrpc.result), eventsPerSecond(overHttp.result)));
      metrics.push(ratio(`gRPC/HTTP ${key} appends: node CPU per event`, overGrpc.cpuPerEventUs, overHttp.cpuPerEventUs, true));
    }
    // A lap: the first LAP_EVENTS_MAX events of $all (fewer when the appends wrote fewer), so
    // that one request fits the workload's time bound on a slow machine too.
    const lap = Math.min(written, LAP_EVENTS_MAX);
    notes.push(`the appends wrote ${written.toLocaleString('en-US')} events; $all reads and subscriptions take laps of the first ${lap.toLocaleString('en-US')}`);
    await measure('gRPC read $all forwards, 4 readers', { kind: 'grpc-read-all', connectionString, ...common(4, 10_000), expectedEvents: lap });
    await measure('gRPC catch-up subscription to $all, 1 subscriber', { kind: 'grpc-subscribe-all', connectionString, ...common(1, 10_000), expectedEvents: lap });
    metrics.push({ name: 'EventDB node peak RSS (VmHWM)', value: round(rss.stop() / 1024 / 1024), unit: 'MiB', lowerIsBetter: true });
    notes.push(`load average ${loadAverage()} at the end`);
    return { name: 'grpc', metrics, notes };
  } finally {
    rss.stop();
    await stopNode(node);
    rmSync(dir, { recursive: true, force: true });
  }
}

function workloadMetrics(label: string, measured: Measured): BenchMetric[] {
  const { result } = measured;
  return [
    { name: `${label}: throughput`, value: eventsPerSecond(result), unit: 'events/s' },
    { name: `${label}: p50 latency`, value: result.latencyP50Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${label}: p99 latency`, value: result.latencyP99Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${label}: errors`, value: result.errorCount, unit: 'requests', lowerIsBetter: true },
    { name: `${label}: node CPU per event`, value: measured.cpuPerEventUs, unit: 'µs', lowerIsBetter: true },
    { name: `${label}: load generator CPU`, value: result.clientCpuPercent, unit: '% of 1 core' },
  ];
}

function ratio(name: string, value: number, baseline: number, lowerIsBetter = false): BenchMetric {
  return { name, value: baseline > 0 ? round(value / baseline) : 0, unit: 'x', ...(lowerIsBetter ? { lowerIsBetter } : {}) };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/**
 * HTTPS section: the cost of TLS on appends. Two real nodes on disk, started the same way except
 * that one runs --insecure (plain HTTP) and the other serves TLS with an EC P-256 certificate
 * made by openssl for the run; the same load generator (separate process, undici keep-alive pool)
 * drives both with single-event appends over 64 connections and 100-event batches over 16, the
 * plain and TLS runs of each workload back to back. Figures: events/s, p50/p99, the node's CPU,
 * and HTTPS/HTTP ratios measured in this run. Connections are kept alive: each does one handshake
 * when the run opens it (counted in the figures: 64 or 16 per run, small against thousands of
 * requests on a quiet machine, not when the machine is so loaded that a run makes only hundreds),
 * then every request pays only for encrypting its traffic.
 *
 * Environment: BENCH_DURATION_MS (per workload, default 12000), BENCH_DIR for the data.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';

import type { BenchMetric, BenchSection, WorkloadPlan, WorkloadResult } from './bench-types.js';
import { eventsPerSecond } from './bench-types.js';
import { CLOCK_TICKS_PER_SECOND, cpuTicksOf, loadAverage, runWorker } from './bench-process.js';
import { onInterrupt } from './interrupt.js';
import type { WorkloadSpec } from './load-worker.js';
import { createCa, issueNodeCertificate } from '../support/certificates.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { freePort, spawnLauncher } from '../support/node-process.js';

const DURATION_MS = Number(process.env['BENCH_DURATION_MS'] ?? 12_000);
const PAYLOAD_BYTES = 100;

const PLANS: readonly WorkloadPlan[] = [
  { key: 'single', label: 'append 1 event/request, 64 conns', connections: 64, eventsPerRequest: 1, requestCountMax: 1_000_000 },
  { key: 'batch', label: 'append 100 events/request, 16 conns', connections: 16, eventsPerRequest: 100, requestCountMax: 50_000 },
];

interface BenchNode {
  readonly scheme: 'HTTP' | 'HTTPS';
  readonly origin: string;
  readonly child: ChildProcess;
  readonly dir: string;
  readonly ca?: string;
}

export async function run(): Promise<BenchSection> {
  const root = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'eventdb-bench-https-'));
  const notes: string[] = [
    `each workload runs ${DURATION_MS} ms (BENCH_DURATION_MS), payload ${PAYLOAD_BYTES} B/event, keep-alive connections`,
    'two nodes on disk, identical but for TLS; HTTP and HTTPS runs of each workload back to back',
    `machine: ${os.availableParallelism()} CPUs, load average ${loadAverage()} at start`,
  ];
  const nodes: BenchNode[] = [];
  const forget = onInterrupt(() => rmSync(root, { recursive: true, force: true }));
  try {
    const caDir = join(root, 'pki');
    const ca = createCa(caDir, 'bench-ca', 'EventDB Bench CA');
    const cert = issueNodeCertificate(caDir, 'bench-node', ca, 'eventdb-node');
    const roots = join(caDir, 'roots');
    mkdirSync(roots);
    copyFileSync(ca.certPath, join(roots, 'ca.crt'));
    nodes.push(await startBenchNode(root, 'HTTP', ['--insecure']));
    const secureNode = await startBenchNode(
      root,
      'HTTPS',
      ['--certificate-file', cert.certPath, '--certificate-private-key-file', cert.keyPath, '--trusted-root-certificates-path', roots],
      ca.certPem,
    );
    nodes.push(secureNode);
    notes.push(`TLS: EC P-256 certificate (openssl), ${await negotiated(secureNode.origin, ca.certPem)}, Node ${process.version}`);
    const metrics: BenchMetric[] = [];
    for (const plan of PLANS) {
      const results = new Map<BenchNode['scheme'], WorkloadResult>();
      for (const node of nodes) {
        const result = await measure(node, plan);
        results.set(node.scheme, result);
        process.stderr.write(`  ${node.scheme} ${plan.label}: ${eventsPerSecond(result)} events/s, p99 ${result.latencyP99Ms} ms\n`);
        metrics.push(...workloadMetrics(`${node.scheme} ${plan.label}`, result));
        if (result.errorCount > 0) notes.push(`${node.scheme} ${plan.key}: ${result.errorCount} errors, first: ${result.firstError ?? '?'}`);
      }
      const plain = results.get('HTTP');
      const secure = results.get('HTTPS');
      if (plain !== undefined && secure !== undefined && eventsPerSecond(plain) > 0) {
        metrics.push({ name: `HTTPS/HTTP ${plan.key} throughput`, value: round(eventsPerSecond(secure) / eventsPerSecond(plain)), unit: 'x' });
        if (plain.latencyP50Ms > 0)
          metrics.push({ name: `HTTPS/HTTP ${plan.key} p50 latency`, value: round(secure.latencyP50Ms / plain.latencyP50Ms), unit: 'x', lowerIsBetter: true });
        const plainCpu = cpuPerEventUs(plain);
        const secureCpu = cpuPerEventUs(secure);
        if (plainCpu > 0) {
          metrics.push({ name: `HTTP ${plan.key} node CPU per event`, value: plainCpu, unit: 'µs', lowerIsBetter: true });
          metrics.push({ name: `HTTPS ${plan.key} node CPU per event`, value: secureCpu, unit: 'µs', lowerIsBetter: true });
        }
      }
    }
    notes.push(`load average ${loadAverage()} at the end`);
    return { name: 'https', metrics, notes };
  } finally {
    for (const node of nodes) await stopNode(node.child);
    rmSync(root, { recursive: true, force: true });
    forget();
  }
}

/** The protocol and cipher a client of the HTTPS node negotiates. */
function negotiated(origin: string, ca: string): Promise<string> {
  const url = new URL(origin);
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), ca }, () => {
      const cipher = socket.getCipher();
      resolve(`${socket.getProtocol() ?? '?'} ${cipher.standardName ?? cipher.name}`);
      socket.end();
    });
    socket.on('error', (err) => resolve(`unknown (${err.message})`));
  });
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function cpuPerEventUs(result: WorkloadResult): number {
  if (result.serverCpuPercent === undefined || result.eventCount === 0) return 0;
  const cpuSeconds = (result.serverCpuPercent / 100) * (result.elapsedMs / 1000);
  return round((cpuSeconds * 1e6) / result.eventCount);
}

function workloadMetrics(prefix: string, result: WorkloadResult): BenchMetric[] {
  return [
    { name: `${prefix}: throughput`, value: eventsPerSecond(result), unit: 'events/s' },
    { name: `${prefix}: p50 latency`, value: result.latencyP50Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${prefix}: p99 latency`, value: result.latencyP99Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${prefix}: errors`, value: result.errorCount, unit: 'requests', lowerIsBetter: true },
    { name: `${prefix}: node CPU`, value: result.serverCpuPercent ?? 0, unit: '% of 1 core' },
  ];
}

async function startBenchNode(root: string, scheme: BenchNode['scheme'], extra: string[], ca?: string): Promise<BenchNode> {
  const dir = join(root, scheme.toLowerCase());
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const log = openSync(join(dir, 'node.log'), 'a');
  const args = [...extra, '--db', join(dir, 'db'), '--index', join(dir, 'index'), '--http-ip', '127.0.0.1', '--http-port', String(port), '--log-level', 'warn'];
  const child = spawnLauncher(args, { stdio: ['ignore', log, log] });
  closeSync(log);
  const node: BenchNode = { scheme, origin: `${scheme.toLowerCase()}://127.0.0.1:${port}`, child, dir, ...(ca === undefined ? {} : { ca }) };
  await waitUntilServing(node);
  return node;
}

/** One append through the load worker's own client, until the node answers 201. */
async function waitUntilServing(node: BenchNode): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (node.child.exitCode !== null)
      throw new Error(`${node.scheme} node exited early with code ${node.child.exitCode}: ${readFileSync(join(node.dir, 'node.log'), 'utf8').slice(-2000)}`);
    try {
      const result = await runWorker(spec(node, { key: 'single', label: 'warm-up', connections: 1, eventsPerRequest: 1, requestCountMax: 1 }, 1_000));
      if (result.eventCount === 1) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${node.scheme} node did not start serving within 60 s`);
}

function spec(node: BenchNode, plan: WorkloadPlan, durationMs: number): WorkloadSpec {
  return {
    kind: 'http-append',
    origin: node.origin,
    authorization: ADMIN_AUTHORIZATION,
    ...(node.ca === undefined ? {} : { ca: node.ca }),
    connections: plan.connections,
    durationMs,
    requestCountMax: plan.requestCountMax,
    eventsPerRequest: plan.eventsPerRequest,
    streamPrefix: `bench-${node.scheme.toLowerCase()}-${plan.key}-${Date.now()}`,
    payloadBytes: PAYLOAD_BYTES,
  };
}

async function measure(node: BenchNode, plan: WorkloadPlan): Promise<WorkloadResult> {
  const pid = node.child.pid ?? 0;
  const before = cpuTicksOf(pid);
  const result = await runWorker(spec(node, plan, DURATION_MS));
  const seconds = (cpuTicksOf(pid) - before) / CLOCK_TICKS_PER_SECOND;
  return { ...result, serverCpuPercent: round((seconds / (result.elapsedMs / 1000)) * 100) };
}

async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

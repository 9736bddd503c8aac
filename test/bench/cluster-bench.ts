/**
 * Cluster section (`BENCH_SECTIONS=cluster`): replicated appends against a single node measured
 * in the same run with the same load generator, then failover times.
 *
 * 1. Throughput. A single node (on disk, real fsync) and then a 3-node cluster (on disk, each node
 *    on its own loopback address, product-default cluster timings) get the same workloads from
 *    the same load-generator process (load-worker.js) aimed at the leader: single-event appends
 *    over 64 keep-alive connections, 100-event batches over 16. A cluster write is acknowledged
 *    once a quorum (2 of 3) has it durable. Figures: events/s, p50/p99 request latency, the
 *    servers' CPU, and the cluster/single ratio.
 * 2. Failover. While writer lanes append continuously (each write sent with ES-RequireLeader to
 *    the node the writer believes leads, following 307s and moving to another node when one
 *    fails), the leader is SIGKILLed; the figure is the time from the kill to the first write
 *    acknowledged by another node. The killed node is restarted and the cluster waited stable
 *    before the next round. Rounds run with the product's default timings and with the fast
 *    timings the tests use (FAST_CLUSTER_ARGS).
 *
 * Environment: BENCH_CLUSTER_DURATION_MS (per workload, default 10000),
 * BENCH_FAILOVER_ROUNDS (per timing set, default 10, at least 10 counts for the issue),
 * BENCH_FAILOVER_FAST=0 skips the fast-timings rounds.
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';

import type { BenchMetric, BenchSection, WorkloadPlan, WorkloadResult } from './bench-types.js';
import { eventsPerSecond, percentile } from './bench-types.js';
import { CLOCK_TICKS_PER_SECOND, cpuTicksOf, loadAverage, runDelayNsOf, runWorker } from './bench-process.js';
import { onInterrupt } from './interrupt.js';
import {
  createCluster,
  FAST_CLUSTER_ARGS,
  type ClusterMember,
  type TestCluster,
} from '../support/cluster.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';

const DURATION_MS = Number(process.env['BENCH_CLUSTER_DURATION_MS'] ?? 10_000);
const FAILOVER_ROUNDS = Math.max(1, Number(process.env['BENCH_FAILOVER_ROUNDS'] ?? 10));
const FAILOVER_FAST = process.env['BENCH_FAILOVER_FAST'] !== '0';
const PAYLOAD_BYTES = 100;
/** Failover writer lanes: several, so that the first acknowledgement is seen soon after it can be. */
const FAILOVER_LANES = 4;
/** A write unanswered for this long counts as failed and the lane moves on. */
const FAILOVER_REQUEST_TIMEOUT_MS = 3_000;
/** The whole section stops starting rounds after this. */
const SECTION_BUDGET_MS = 30 * 60_000;

/** The product's default cluster timings (FAST_CLUSTER_ARGS, which createCluster adds, undone). */
const DEFAULT_TIMING_ARGS = [
  '--gossip-interval-ms', '2000', '--gossip-timeout-ms', '2500', '--leader-election-timeout-ms', '1000',
  '--commit-timeout-ms', '2000', '--prepare-timeout-ms', '2000',
];
/** 1 MiB chunks as in the crash tests: restarts stay short. */
const CHUNK_ARGS = ['--chunk-size', String(1024 * 1024)];

const PLANS: readonly WorkloadPlan[] = [
  { key: 'single', label: '1 event/request, 64 conns', connections: 64, eventsPerRequest: 1, requestCountMax: 1_000_000 },
  { key: 'batch', label: '100 events/request, 16 conns', connections: 16, eventsPerRequest: 100, requestCountMax: 50_000 },
];

type Measured = WorkloadResult & { readonly runQueueWaitPercent: number };

export async function run(): Promise<BenchSection> {
  const sectionDeadline = Date.now() + SECTION_BUDGET_MS;
  const notes: string[] = [
    `each workload runs ${DURATION_MS} ms (BENCH_CLUSTER_DURATION_MS), payload ${PAYLOAD_BYTES} B/event, data on disk (${os.tmpdir()}), fsync on`,
    `machine: ${os.availableParallelism()} CPUs, load average ${loadAverage()} at start`,
  ];
  const metrics: BenchMetric[] = [];

  const single = await measureThroughput(1, notes);
  notes.push(`load average ${loadAverage()} after the single node`);
  const replicated = await measureThroughput(3, notes);
  notes.push(`load average ${loadAverage()} after the 3-node cluster`);
  for (const plan of PLANS) {
    const one = single[plan.key];
    const three = replicated[plan.key];
    if (one !== undefined) metrics.push(...workloadMetrics(`single node ${plan.label}`, one));
    if (three !== undefined) metrics.push(...workloadMetrics(`3-node cluster ${plan.label}`, three));
    if (one !== undefined && three !== undefined && eventsPerSecond(one) > 0) {
      metrics.push({
        name: `cluster/single ${plan.key} throughput`,
        value: round(eventsPerSecond(three) / eventsPerSecond(one)),
        unit: 'x',
      });
      if (one.latencyP99Ms > 0)
        metrics.push({
          name: `cluster/single ${plan.key} p99 latency`,
          value: round(three.latencyP99Ms / one.latencyP99Ms),
          unit: 'x',
          lowerIsBetter: true,
        });
    }
  }

  const timingSets: { label: string; args: readonly string[] }[] = [
    { label: 'default timings', args: DEFAULT_TIMING_ARGS },
    ...(FAILOVER_FAST ? [{ label: 'fast timings', args: FAST_CLUSTER_ARGS }] : []),
  ];
  for (const timing of timingSets) {
    if (Date.now() > sectionDeadline) {
      notes.push(`failover (${timing.label}) skipped: section time budget spent`);
      continue;
    }
    const failover = await measureFailover(timing.args, sectionDeadline, notes, timing.label);
    notes.push(`load average ${loadAverage()} after failover (${timing.label})`);
    const times = [...failover.timesMs].sort((a, b) => a - b);
    const prefix = `failover, ${timing.label}, leader SIGKILL -> first acknowledged write`;
    metrics.push(
      { name: `${prefix}: rounds`, value: times.length, unit: 'kills' },
      { name: `failover, ${timing.label}: killed node did not rejoin within 60 s`, value: failover.rejoinFailures, unit: 'rounds', lowerIsBetter: true },
      { name: `${prefix}: p50`, value: round(percentile(times, 0.5)), unit: 'ms', lowerIsBetter: true },
      { name: `${prefix}: p99`, value: round(percentile(times, 0.99)), unit: 'ms', lowerIsBetter: true },
      { name: `${prefix}: max`, value: round(times.at(-1) ?? 0), unit: 'ms', lowerIsBetter: true },
      { name: `${prefix}: min`, value: round(times[0] ?? 0), unit: 'ms', lowerIsBetter: true },
    );
    notes.push(
      `failover (${timing.label} ${timing.args.join(' ')}): ${failover.timesMs.map((t) => Math.round(t)).join(', ')} ms; ` +
        `writes acknowledged ${failover.acknowledged}, failed or redirected attempts ${failover.failures}`,
    );
  }
  notes.push(`load average ${loadAverage()} at the end`);
  return { name: 'cluster', metrics, notes };
}

function workloadMetrics(prefix: string, result: Measured): BenchMetric[] {
  return [
    { name: `${prefix}: throughput`, value: eventsPerSecond(result), unit: 'events/s' },
    { name: `${prefix}: p50 latency`, value: result.latencyP50Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${prefix}: p99 latency`, value: result.latencyP99Ms, unit: 'ms', lowerIsBetter: true },
    { name: `${prefix}: errors`, value: result.errorCount, unit: 'requests', lowerIsBetter: true },
    { name: `${prefix}: server CPU, all nodes`, value: result.serverCpuPercent ?? 0, unit: '% of 1 core' },
    { name: `${prefix}: load generator CPU`, value: result.clientCpuPercent, unit: '% of 1 core' },
    {
      name: `${prefix}: nodes' main threads waiting for a CPU, summed`,
      value: result.runQueueWaitPercent,
      unit: '% of run time',
      lowerIsBetter: true,
    },
  ];
}

/** Starts `size` on-disk nodes (size 1: a plain single node), runs the plans at the leader. */
async function measureThroughput(size: number, notes: string[]): Promise<Partial<Record<WorkloadPlan['key'], Measured>>> {
  const cluster = await startCluster(size, DEFAULT_TIMING_ARGS);
  const label = size === 1 ? 'single node' : `${size}-node cluster`;
  try {
    await cluster.c.waitForStable(60_000);
    const leader = await cluster.c.leader(60_000);
    await warmUp(leader);
    const results: Partial<Record<WorkloadPlan['key'], Measured>> = {};
    const pids = (): number[] => cluster.c.members.map((m) => m.process?.child.pid ?? 0).filter((p) => p > 0);
    for (const plan of PLANS) {
      const cpuBefore = sum(pids().map(cpuTicksOf));
      const delayBefore = sum(pids().map(runDelayNsOf));
      const measured = await runWorker({
        kind: 'http-append',
        origin: leader.baseUrl,
        authorization: ADMIN_AUTHORIZATION,
        connections: plan.connections,
        durationMs: DURATION_MS,
        requestCountMax: plan.requestCountMax,
        eventsPerRequest: plan.eventsPerRequest,
        streamPrefix: `bench-${size}-${plan.key}-${Date.now()}`,
        payloadBytes: PAYLOAD_BYTES,
      });
      const seconds = measured.elapsedMs / 1000;
      const cpuSeconds = (sum(pids().map(cpuTicksOf)) - cpuBefore) / CLOCK_TICKS_PER_SECOND;
      const delayMs = (sum(pids().map(runDelayNsOf)) - delayBefore) / 1e6;
      const result: Measured = {
        ...measured,
        streamLengths: {},
        serverCpuPercent: round((cpuSeconds / seconds) * 100),
        runQueueWaitPercent: round((delayMs / measured.elapsedMs) * 100),
      };
      results[plan.key] = result;
      process.stderr.write(`  ${label} ${plan.label}: ${eventsPerSecond(result)} events/s, p99 ${result.latencyP99Ms} ms\n`);
      if (result.errorCount > 0)
        notes.push(`${label} ${plan.key}: ${result.errorCount} errors, first: ${result.firstError ?? '?'}`);
    }
    const states = await Promise.all(cluster.c.members.map((m) => cluster.c.state(m)));
    if (size > 1) notes.push(`${label} states after the workloads: ${states.join(', ')} (leader ${leader.spec.name})`);
    return results;
  } finally {
    await cluster.stop();
  }
}

interface FailoverResult {
  readonly timesMs: number[];
  readonly acknowledged: number;
  readonly failures: number;
  /** Rounds whose killed node did not rejoin (the cluster was replaced by a fresh one). */
  readonly rejoinFailures: number;
}

/**
 * Kills the leader FAILOVER_ROUNDS times. A round whose restarted node does not rejoin within
 * 60 s keeps its failover time, saves the nodes' logs and data under bench-results/ and goes on
 * with a fresh cluster (at most FAILOVER_ROUNDS such replacements).
 */
async function measureFailover(
  timingArgs: readonly string[],
  sectionDeadline: number,
  notes: string[],
  label: string,
): Promise<FailoverResult> {
  const timesMs: number[] = [];
  let acknowledged = 0;
  let failures = 0;
  let rejoinFailures = 0;
  for (let clusterIndex = 0; clusterIndex <= FAILOVER_ROUNDS && timesMs.length < FAILOVER_ROUNDS; clusterIndex++) {
    if (Date.now() > sectionDeadline) break;
    const cluster = await startCluster(3, timingArgs);
    const c = cluster.c;
    let writer: FailoverWriter | undefined;
    try {
      try {
        await c.waitForStable(60_000);
      } catch (err: unknown) {
        // A fresh cluster that cannot even form with these timings will not do better next time.
        const saved = await saveEvidence(c, `${label.replace(/\W+/g, '-')}-no-formation`);
        const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
        notes.push(`failover (${label}): a fresh cluster did not form (${first}); logs and data in ${saved}; no more rounds with these timings`);
        process.stderr.write(`  failover (${label}): a fresh cluster did not form; evidence in ${saved}\n`);
        break;
      }
      writer = startFailoverWriter(c);
      while (timesMs.length < FAILOVER_ROUNDS && Date.now() < sectionDeadline) {
        const round = timesMs.length + 1;
        // A steady moment: every node stable, writes being acknowledged, then a random pause.
        await writer.waitForAckAfter(performance.now(), 30_000);
        await sleep(300 + Math.random() * 700);
        const victim = await c.leader(30_000);
        const killedAt = performance.now();
        await victim.process?.stop('SIGKILL');
        const ack = await writer.waitForAckAfter(killedAt, 60_000, victim);
        timesMs.push(ack.atMs - killedAt);
        process.stderr.write(
          `  failover (${label}) round ${round}: ${Math.round(ack.atMs - killedAt)} ms, ${victim.spec.name} -> ${ack.member.spec.name}\n`,
        );
        await c.start(victim);
        try {
          await c.waitForStable(60_000);
        } catch (err: unknown) {
          rejoinFailures += 1;
          const saved = await saveEvidence(c, `${label.replace(/\W+/g, '-')}-round-${round}`);
          const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
          notes.push(`failover (${label}) round ${round}: ${victim.spec.name} did not rejoin after its restart (${first}); logs and data in ${saved}; went on with a fresh cluster`);
          process.stderr.write(`  failover (${label}) round ${round}: ${victim.spec.name} did not rejoin; evidence in ${saved}\n`);
          break;
        }
      }
    } catch (err: unknown) {
      // Any other stall (no leader, no acknowledgement within its bound): keep the evidence, go on.
      const saved = await saveEvidence(c, `${label.replace(/\W+/g, '-')}-error`);
      const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
      notes.push(`failover (${label}) after ${timesMs.length} rounds: ${first}; logs and data in ${saved}`);
      process.stderr.write(`  failover (${label}): ${first}; evidence in ${saved}\n`);
    } finally {
      await writer?.stop();
      acknowledged += writer?.acknowledged ?? 0;
      failures += writer?.failures ?? 0;
      await cluster.stop();
    }
  }
  if (timesMs.length < FAILOVER_ROUNDS)
    notes.push(`failover (${label}): only ${timesMs.length} of ${FAILOVER_ROUNDS} rounds measured`);
  return { timesMs, acknowledged, failures, rejoinFailures };
}

/** Stops the nodes and copies their output and data directories to bench-results/cluster-failures/<stamp>-<name>. */
async function saveEvidence(cluster: TestCluster, name: string): Promise<string> {
  const target = join(process.cwd(), 'bench-results', 'cluster-failures', `${new Date().toISOString().replace(/[:.]/g, '-')}-${name}`);
  mkdirSync(target, { recursive: true });
  for (const m of cluster.members) {
    await m.process?.stop('SIGKILL');
    writeFileSync(join(target, `${m.spec.name}.log`), `${(m.process?.output ?? []).join('\n')}\n`);
  }
  // The logs and checkpoints only (a few MiB): the index rebuilds from them (~30 MiB more per node).
  for (const m of cluster.members)
    if (m.spec.db !== undefined) cpSync(m.spec.db, join(target, m.spec.name, 'db'), { recursive: true });
  return target;
}

interface Ack {
  readonly atMs: number;
  readonly member: ClusterMember;
}

interface FailoverWriter {
  acknowledged: number;
  failures: number;
  /** The first acknowledgement after `sinceMs` (performance.now()) by a node other than `not`. */
  waitForAckAfter(sinceMs: number, timeoutMs: number, not?: ClusterMember): Promise<Ack>;
  stop(): Promise<void>;
}

/**
 * Lanes appending single events, each to its own stream, to the node they believe leads, with
 * ES-RequireLeader: a follower answers 307 to the leader (followed), a node that fails, times out
 * or knows no leader makes the lane try the next node. Bounded by stop() and a count.
 */
function startFailoverWriter(cluster: TestCluster): FailoverWriter {
  const acks: Ack[] = [];
  let stopping = false;
  const members = cluster.members;
  const writer: FailoverWriter = {
    acknowledged: 0,
    failures: 0,
    async waitForAckAfter(sinceMs, timeoutMs, not) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline) {
        const ack = acks.find((a) => a.atMs > sinceMs && a.member !== not);
        if (ack !== undefined) return ack;
        await sleep(5);
      }
      throw new Error(`no write acknowledged within ${timeoutMs} ms`);
    },
    async stop() {
      stopping = true;
      await Promise.all(lanes);
    },
  };
  const byOrigin = (url: string): ClusterMember | undefined => {
    try {
      const origin = new URL(url).origin;
      return members.find((m) => new URL(m.baseUrl).origin === origin);
    } catch {
      return undefined;
    }
  };
  const lane = async (laneIndex: number): Promise<void> => {
    const stream = `failover-${Date.now()}-${laneIndex}`;
    let target = members[laneIndex % members.length]!;
    for (let attempt = 0; attempt < 10_000_000 && !stopping; attempt++) {
      let moveOn = true;
      try {
        const response = await fetch(`${target.baseUrl}/streams/${stream}`, {
          method: 'POST',
          headers: {
            authorization: ADMIN_AUTHORIZATION,
            'content-type': 'application/vnd.eventstore.events+json',
            'es-requireleader': 'true',
          },
          body: JSON.stringify([{ eventId: crypto.randomUUID(), eventType: 'failover', data: { laneIndex, attempt } }]),
          redirect: 'manual',
          signal: AbortSignal.timeout(FAILOVER_REQUEST_TIMEOUT_MS),
        });
        await response.arrayBuffer();
        if (response.status === 201) {
          acks.push({ atMs: performance.now(), member: target });
          // Keep the list short: only recent acknowledgements are ever looked for.
          if (acks.length > 20_000) acks.splice(0, 10_000);
          writer.acknowledged += 1;
          continue;
        }
        writer.failures += 1;
        const location = response.headers.get('location');
        const leader = response.status === 307 && location !== null ? byOrigin(location) : undefined;
        if (leader !== undefined) {
          target = leader;
          moveOn = false;
        }
      } catch {
        writer.failures += 1;
      }
      if (moveOn) target = members[(members.indexOf(target) + 1) % members.length]!;
      await sleep(10);
    }
  };
  const lanes = Array.from({ length: FAILOVER_LANES }, (_, i) => lane(i));
  return writer;
}

/**
 * A cluster of `size` on-disk nodes (1: a single node, no cluster options) with a clean-up that
 * also runs if the bench is interrupted.
 */
async function startCluster(size: number, timingArgs: readonly string[]): Promise<{ c: TestCluster; stop(): Promise<void> }> {
  const c = await createCluster({ size, onDisk: true, args: [...timingArgs, ...CHUNK_ARGS] });
  // The data lives in <tmp>/edb-cluster-XXXX/<node>/db; remove it even on an interrupt.
  const root = dirname(dirname(c.members[0]!.spec.db!));
  const unregister = onInterrupt(() => rmSync(root, { recursive: true, force: true }));
  return {
    c,
    async stop() {
      await c.stop();
      rmSync(root, { recursive: true, force: true });
      unregister();
    },
  };
}

async function warmUp(leader: ClusterMember): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const response = await leader.http('POST', '/streams/bench-warmup', {
        headers: { 'content-type': 'application/vnd.eventstore.events+json' },
        body: JSON.stringify([{ eventId: crypto.randomUUID(), eventType: 'warmup', data: {} }]),
      });
      if (response.status === 201) return;
    } catch {
      // not serving yet
    }
    await sleep(200);
  }
  throw new Error(`${leader.spec.name} did not acknowledge a warm-up write within 30 s`);
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

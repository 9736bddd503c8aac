/**
 * Auto-scavenge section (`BENCH_SECTIONS=autoscavenge`): one cluster scavenge of a 3-node cluster
 * (on disk, licensed with a key made for the run, schedule `* * * * *`), with a writer appending
 * all along.
 *
 * Garbage first: streams of 4 KiB events, three in four deleted, over 8 MiB chunks
 * (BENCH_AUTOSCAVENGE_BATCHES batches of 50 events, default 300: about 60 MB). Then writer lanes
 * append single events through the first node (forwarded when it does not lead) for a baseline
 * period without scavenges, and on through the whole cluster scavenge. Figures: the time of each
 * node scavenge and of the cluster scavenge (from `$auto-scavenges`), and the writer's p50/p99
 * latency and failed writes without and during the cluster scavenge (the leader's resignation
 * falls in it).
 */
import { performance } from 'node:perf_hooks';

import type { BenchMetric, BenchSection } from './bench-types.js';
import { percentile } from './bench-types.js';
import { createCluster, type TestCluster } from '../support/cluster.js';
import { appendEvents, ATOM_JSON, newEvent, uniqueStream, type Http } from '../support/http-client.js';
import { writeGarbage } from '../support/garbage.js';
import { testLicensing } from '../support/license.js';

const BATCHES = Number(process.env['BENCH_AUTOSCAVENGE_BATCHES'] ?? 300);
const BASELINE_MS = 15_000;
const WRITER_LANES = 4;
const CHUNK_SIZE_BYTES = 8 * 1024 * 1024;

interface Sample {
  readonly atMs: number;
  readonly latencyMs: number;
  readonly ok: boolean;
}

async function autoScavengeLog(http: Http): Promise<Array<{ eventType: string; data: Record<string, any> }>> {
  const page = await http('GET', '/streams/%24auto-scavenges/0/forward/500?embed=body', { headers: { accept: ATOM_JSON } });
  if (page.status !== 200) return [];
  return page.json<{ entries: { eventType: string; data: string }[] }>().entries.reverse()
    .map((e) => ({ eventType: e.eventType, data: JSON.parse(e.data) }));
}

function latencyMetrics(label: string, samples: readonly Sample[]): BenchMetric[] {
  const ok = samples.filter((s) => s.ok).map((s) => s.latencyMs).sort((a, b) => a - b);
  return [
    { name: `writer ${label}: p50`, value: round(percentile(ok, 0.5)), unit: 'ms', lowerIsBetter: true },
    { name: `writer ${label}: p99`, value: round(percentile(ok, 0.99)), unit: 'ms', lowerIsBetter: true },
    { name: `writer ${label}: writes`, value: ok.length, unit: 'count' },
    { name: `writer ${label}: failed writes`, value: samples.length - ok.length, unit: 'count', lowerIsBetter: true },
  ];
}

const round = (v: number): number => Math.round(v * 10) / 10;

export async function run(): Promise<BenchSection> {
  const licensing = testLicensing();
  const notes: string[] = [
    `${BATCHES} batches of 50 x 4 KiB events, 3 in 4 streams deleted, ${CHUNK_SIZE_BYTES / 1024 / 1024} MiB chunks; writer: ${WRITER_LANES} lanes of single-event appends through node1`,
  ];
  let cluster: TestCluster | undefined;
  let writing = true;
  try {
    cluster = await createCluster({ size: 3, onDisk: true, args: [...licensing.args(), '--chunk-size', String(CHUNK_SIZE_BYTES)] });
    await cluster.waitForStable(120_000);
    const leader = await cluster.leader();
    const t0 = performance.now();
    await writeGarbage(leader.http, BATCHES);
    notes.push(`garbage written in ${Math.round((performance.now() - t0) / 1000)} s`);

    const entry = cluster.members[0]!;
    const samples: Sample[] = [];
    const lane = async (): Promise<void> => {
      const stream = uniqueStream('writer');
      while (writing) {
        const start = Date.now();
        const t = performance.now();
        let ok = false;
        try {
          ok = (await appendEvents(entry.http, stream, [newEvent('w', { t: start })], { 'ES-ExpectedVersion': '-2' })).status === 201;
        } catch {
          ok = false;
        }
        samples.push({ atMs: start, latencyMs: performance.now() - t, ok });
        if (!ok) await new Promise((r) => setTimeout(r, 50));
      }
    };
    const lanes = Array.from({ length: WRITER_LANES }, () => lane());
    const baselineStart = Date.now();
    await new Promise((r) => setTimeout(r, BASELINE_MS));
    const baselineEnd = Date.now();

    const configured = await leader.http('POST', '/auto-scavenge/configure', {
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ schedule: '* * * * *' }),
    });
    if (configured.status !== 200) throw new Error(`configure answered ${configured.status}: ${configured.text}`);
    const deadline = Date.now() + 15 * 60_000;
    let log: Awaited<ReturnType<typeof autoScavengeLog>> = [];
    while (Date.now() < deadline) {
      const current = await cluster.leader(60_000);
      log = await autoScavengeLog(current.http);
      if (log.some((e) => e.eventType === '$cluster-scavenge-completed')) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    writing = false;
    await Promise.all(lanes);
    const started = log.find((e) => e.eventType === '$cluster-scavenge-started');
    const completed = log.find((e) => e.eventType === '$cluster-scavenge-completed');
    if (started === undefined || completed === undefined) throw new Error('the cluster scavenge did not complete within 15 minutes');
    const cycleStart = Date.parse(started.data.startedAt);
    const cycleEnd = Date.parse(completed.data.completedAt);

    const metrics: BenchMetric[] = [
      { name: 'cluster scavenge: total', value: round((cycleEnd - cycleStart) / 1000), unit: 's', lowerIsBetter: true },
    ];
    const nodeStarts = log.filter((e) => e.eventType === '$node-scavenge-started');
    for (const done of log.filter((e) => e.eventType === '$node-scavenge-completed')) {
      const start = nodeStarts.find((s) => s.data.scavengeId === done.data.scavengeId);
      if (start === undefined) continue;
      const member = cluster.members.find((m) => `${m.spec.ip}:${m.spec.httpPort}` === done.data.nodeId);
      const role = done.data.nodeId === `${leader.spec.ip}:${leader.spec.httpPort}` ? 'leader at start, resigned' : 'follower';
      metrics.push({
        name: `node scavenge ${member?.spec.name ?? done.data.nodeId} (${role})`,
        value: round((Date.parse(done.data.completedAt) - Date.parse(start.data.startedAt)) / 1000), unit: 's', lowerIsBetter: true,
      });
    }
    const designatedAt = log.filter((e) => e.eventType === '$node-designated').map((e) => Date.parse(e.data.designatedAt));
    const lastDesignated = designatedAt.at(-1);
    const lastStart = nodeStarts.at(-1);
    if (lastDesignated !== undefined && lastStart !== undefined) {
      metrics.push({ name: 'leader resignation to its scavenge start', value: round((Date.parse(lastStart.data.startedAt) - lastDesignated) / 1000), unit: 's', lowerIsBetter: true });
    }
    metrics.push(...latencyMetrics('without scavenge', samples.filter((s) => s.atMs >= baselineStart && s.atMs < baselineEnd)));
    metrics.push(...latencyMetrics('during cluster scavenge', samples.filter((s) => s.atMs >= cycleStart && s.atMs < cycleEnd)));
    notes.push('writes during the cluster scavenge include the leader\'s resignation and the election that follows (failed writes there are retried by the lane after 50 ms)');
    return { name: 'autoscavenge', metrics, notes };
  } finally {
    writing = false;
    await cluster?.stop();
  }
}

// A ScavengeSchedule on the kind cluster, the operator in the cluster from its image: a
// three-node EventDBCluster with streams written then hard-deleted; schedule `* * * * *`:
// - a cycle scavenges every node once, the followers before the leader, the leader asked to
//   resign (another node leads) before its own scavenge; every node's own
//   GET /admin/scavenge/{id} says Success for the id in the status; the cluster's operation is
//   Scavenge during the cycle and released after it; in-cluster writers through orders-leader
//   during the cycle lose no acknowledged write and see no failed append; every node reports disk space saved by its run
//   (the spaceSaved of its own $scavengeCompleted event), and the log's files on every node take
//   less disk afterwards (allocated bytes, by half the deleted data at least: 4 MiB chunks, ~46 MB
//   written then deleted, so the garbage fills a dozen chunks);
// - suspend mid-cycle (throttlePercent 1, so a node scavenge is running): the node scavenge is
//   stopped (the node says Stopped), Paused with the cycle kept and nodes left; suspend false:
//   the stopped node is scavenged again and the same cycle completes on the rest;
// - a node deleted while it is scavenged (throttled): its pod is recreated, the cycle starts its
//   scavenge again on it (a new run, Success on the node) and completes;
// - nodeTimeout shorter than a throttled node scavenge (of new garbage): the run is stopped (the node says
//   Stopped), the cycle fails, Ready False CycleFailed, Events NodeScavengeTimedOut, CycleFailed;
// - respectMaintenanceWindows with the cluster's only window hours away: a due cycle does not
//   start (Waiting, no currentCycle, no node scavenge), and the Progressing condition says why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createNamespace, ctx, deleteNamespace, kubectl, waitFor } from '../../k8s/helpers.js';
import {
  applyCluster,
  clusterPods,
  createOperatorNamespace,
  getCluster,
  installCrds,
  installOperatorRelease,
  lastJsonLine,
  removeOperatorRelease,
  runInCluster,
  patchCluster,
  secretValue,
  startWriters,
  waitClusterReady,
} from './operator-support.js';

/** Small chunks (the node's minimum is 4 KiB, its default 256 MiB), so the garbage below fills several. */
const CHUNK_SIZE_BYTES = 4 * 1024 * 1024;
const SPEC = {
  replicas: 3,
  storage: { data: { size: '256Mi' } },
  resources: { requests: { cpu: '20m', memory: '128Mi' } },
  configuration: { ChunkSize: CHUNK_SIZE_BYTES },
};
/** Scavengeable data: streams of 4000-byte events, in appends of 125 (500 KB); all but two hard-deleted. */
const GARBAGE = { streams: 48, kept: 2, appendsPerStream: 2, eventsPerAppend: 125, padBytes: 4000 };
/** The event data of the deleted streams (their records are larger: ids, type, stream name). */
const DELETED_DATA_BYTES = (GARBAGE.streams - GARBAGE.kept) * GARBAGE.appendsPerStream * GARBAGE.eventsPerAppend * GARBAGE.padBytes;

interface CycleNode { pod: string; role?: string; scavengeId?: string; result?: string; startedAt?: string; finishedAt?: string }
interface ScheduleObject {
  metadata: { name: string; generation?: number };
  status?: {
    state?: string;
    nextScheduleTime?: string;
    timeUntilNextCycle?: string;
    currentCycle?: { id: string; startedAt: string; nodes?: CycleNode[] };
    history?: { id: string; startedAt: string; finishedAt?: string; result: string }[];
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

function applySchedule(namespace: string, name: string, spec: Record<string, unknown>): void {
  const document = { apiVersion: 'eventdb.io/v1alpha1', kind: 'ScavengeSchedule', metadata: { name, namespace }, spec };
  const result = kubectl(['apply', '-f', '-'], JSON.stringify(document));
  if (result.status !== 0) throw new Error(`kubectl apply of ScavengeSchedule ${name} failed:\n${result.out}`);
}

async function getSchedule(namespace: string, name: string): Promise<ScheduleObject | undefined> {
  return await api().get<ScheduleObject>(`/apis/eventdb.io/v1alpha1/namespaces/${namespace}/scavengeschedules/${name}`);
}

async function patchSchedule(namespace: string, name: string, patch: unknown): Promise<void> {
  await api().call('PATCH', `/apis/eventdb.io/v1alpha1/namespaces/${namespace}/scavengeschedules/${name}`, patch, { patch: 'merge' });
}

/**
 * Writes the GARBAGE streams through the leader (four at a time; a failed append is sent again
 * with the same event ids), then hard-deletes all but the first `kept`.
 */
function writeAndDeleteScript(prefix = 'scav-'): string {
  return `
(async () => {
  const g = ${JSON.stringify(GARBAGE)};
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const url = 'https://orders-leader:2113';
  const started = Date.now();
  let written = 0, deleted = 0, next = 0;
  const call = async (method, path, init) => {
    for (let attempt = 0; attempt < 30; attempt++) {
      try {
        const response = await fetch(url + path, { method, signal: AbortSignal.timeout(60000), ...init });
        await response.arrayBuffer();
        if (response.status < 500) return response.status;
      } catch {}
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return 0;
  };
  const pad = 'x'.repeat(g.padBytes);
  const writer = async () => {
    while (next < g.streams) {
      const s = next++;
      let appended = 0;
      for (let a = 0; a < g.appendsPerStream; a++) {
        const events = Array.from({ length: g.eventsPerAppend }, (_, i) => ({ eventId: crypto.randomUUID(), eventType: 'filler', data: { s, a, i, pad } }));
        if ((await call('POST', '/streams/${prefix}' + s, { headers: { authorization: auth, 'content-type': 'application/vnd.eventstore.events+json' }, body: JSON.stringify(events) })) === 201) appended++;
      }
      if (appended === g.appendsPerStream) written++;
    }
  };
  await Promise.all([writer(), writer(), writer(), writer()]);
  for (let s = g.kept; s < g.streams; s++) {
    if ((await call('DELETE', '/streams/${prefix}' + s, { headers: { authorization: auth, 'ES-HardDelete': 'true' } })) === 204) deleted++;
  }
  console.log(JSON.stringify({ written, deleted, ms: Date.now() - started }));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

/** Asks every pod for the run the status names (GET /admin/scavenge/{id}). */
function runStatesScript(namespace: string, runs: { pod: string; id: string }[]): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const out = {};
  for (const run of ${JSON.stringify(runs)}) {
    const response = await fetch('https://' + run.pod + '.orders-headless.${namespace}.svc:2113/admin/scavenge/' + run.id, { headers: { authorization: auth, accept: 'application/json' } });
    out[run.pod] = response.status === 200 ? (await response.json()).scavengeResult : 'HTTP ' + response.status;
  }
  console.log(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

/**
 * Each run's spaceSaved as its node recorded it: the `$scavengeCompleted` event of stream
 * `$scavenges-{id}`, read from the node that ran it (then from the others, the stream may be
 * written through the leader).
 */
function spaceSavedScript(namespace: string, runs: { pod: string; id: string }[], pods: string[]): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const out = {};
  for (const run of ${JSON.stringify(runs)}) {
    for (const pod of [run.pod, ...${JSON.stringify(pods)}.filter((p) => p !== run.pod)]) {
      const response = await fetch('https://' + pod + '.orders-headless.${namespace}.svc:2113/streams/%24scavenges-' + run.id + '/0/forward/50?embed=body', { headers: { authorization: auth, accept: 'application/vnd.eventstore.atom+json' } });
      if (response.status !== 200) { out[run.pod] = out[run.pod] ?? 'HTTP ' + response.status; continue; }
      const completed = ((await response.json()).entries || []).find((entry) => entry.eventType === '$scavengeCompleted');
      if (completed === undefined) { out[run.pod] = out[run.pod] ?? 'no $scavengeCompleted'; continue; }
      out[run.pod] = JSON.parse(completed.data).spaceSaved;
      break;
    }
  }
  console.log(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

/** Each pod's last scavenge and current one (GET /admin/scavenge/last and /current). */
function lastScavengesScript(namespace: string, pods: string[]): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const out = {};
  for (const pod of ${JSON.stringify(pods)}) {
    const get = async (which) => {
      const response = await fetch('https://' + pod + '.orders-headless.${namespace}.svc:2113/admin/scavenge/' + which, { headers: { authorization: auth, accept: 'application/json' } });
      return response.status === 200 ? (await response.json()).scavengeId : 'HTTP ' + response.status;
    };
    out[pod] = { last: await get('last'), current: await get('current') };
  }
  console.log(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

/** One file of a node's log directory: its name, apparent size and allocated bytes. */
interface LogFile { name: string; sizeBytes: number; allocatedBytes: number }
interface LogState { files: LogFile[]; writerCheckpoint: number }

/**
 * A node's log on its disk, read in its pod: the files of /data/db/chunk-* (the chunk files and
 * a next chunk being zero-filled, `*.prealloc.tmp`) with their apparent size and allocated
 * blocks, and writer.chk (the end of the log: its newer valid slot, see checkpoint-file.ts).
 */
const LOG_STATE_SCRIPT = `
const fs = require('node:fs');
const zlib = require('node:zlib');
const dir = '/data/db';
const files = fs.readdirSync(dir).filter((name) => name.startsWith('chunk-')).sort().map((name) => {
  const stat = fs.statSync(dir + '/' + name);
  return { name, sizeBytes: stat.size, allocatedBytes: stat.blocks * 512 };
});
const chk = fs.readFileSync(dir + '/writer.chk');
let best;
for (const at of [0, 512]) {
  if (chk.readUInt32LE(at) !== 0x4b424445 || zlib.crc32(chk.subarray(at, at + 16)) !== chk.readUInt32LE(at + 16)) continue;
  const slot = { sequence: chk.readUInt32LE(at + 4), value: chk.readInt32LE(at + 12) * 2 ** 32 + chk.readUInt32LE(at + 8) };
  if (best === undefined || slot.sequence > best.sequence) best = slot;
}
console.log(JSON.stringify({ files, writerCheckpoint: best === undefined ? -1 : best.value }));
`;

function logState(namespace: string, pods: string[]): Record<string, LogState> {
  return Object.fromEntries(pods.map((pod) => {
    const result = kubectl(['exec', '-n', namespace, pod, '--', 'node', '-e', LOG_STATE_SCRIPT]);
    if (result.status !== 0) throw new Error(`reading the log files of ${pod} failed:\n${result.out}`);
    return [pod, lastJsonLine<LogState>(result.stdout)];
  }));
}

function allocatedBytes(files: LogFile[]): number {
  return files.reduce((sum, file) => sum + file.allocatedBytes, 0);
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(2);
}

function describeLog(log: LogState | undefined): string {
  if (log === undefined) return 'none';
  return `${mib(allocatedBytes(log.files))} MiB allocated, writer.chk ${log.writerCheckpoint} [${log.files.map((f) => `${f.name} ${mib(f.sizeBytes)}/${mib(f.allocatedBytes)}`).join(', ')}]`;
}

function eventsOf(namespace: string, kind: string, name?: string): { reason: string; note: string; time: string }[] {
  const selector = `involvedObject.kind=${kind}${name === undefined ? '' : `,involvedObject.name=${name}`}`;
  const out = kubectl(['get', 'events', '-n', namespace, '--field-selector', selector, '-o', 'json']).stdout;
  const items = (JSON.parse(out || '{"items":[]}') as { items: { reason: string; message?: string; eventTime?: string; firstTimestamp?: string; metadata: { creationTimestamp: string } }[] }).items;
  return items
    .map((item) => ({ reason: item.reason, note: item.message ?? '', time: item.eventTime ?? item.firstTimestamp ?? item.metadata.creationTimestamp }))
    .sort((a, b) => a.time.localeCompare(b.time));
}

describe.skipIf(ctx().skipReason !== '')('a ScavengeSchedule of a three-node EventDBCluster, operator in the cluster', () => {
  let ns = '';
  let operatorNamespace = '';
  let password = '';

  beforeAll(async () => {
    installCrds();
    ns = await createNamespace('edb-scav');
    operatorNamespace = await createOperatorNamespace();
    installOperatorRelease(operatorNamespace, [ns]);
    expect(applyCluster(ns, 'orders', SPEC).status).toBe(0);
    await waitClusterReady(ns, 'orders');
    password = await secretValue(ns, 'orders-admin', 'password');
    const wrote = lastJsonLine<{ written: number; deleted: number; ms: number }>(await runInCluster(ns, 'scav-writer', writeAndDeleteScript(), { EVENTDB_PASSWORD: password }));
    process.stdout.write(`[scavenge-schedule] garbage: ${JSON.stringify(wrote)}, ${mib(DELETED_DATA_BYTES)} MiB of deleted event data\n`);
    expect(wrote).toMatchObject({ written: GARBAGE.streams, deleted: GARBAGE.streams - GARBAGE.kept });
  }, 600_000);

  afterAll(async () => {
    if (operatorNamespace !== '') await removeOperatorRelease(operatorNamespace);
    if (ns !== '') await deleteNamespace(ns, 300_000);
  }, 600_000);

  it('scavenges every node once per cycle: followers first, then the leader after it resigned; the status tells it', async () => {
    const leaderBefore = (await getCluster(ns, 'orders'))?.status?.leader;
    expect(leaderBefore).toBeDefined();
    const podNames = (await clusterPods(ns, 'orders')).map((pod) => pod.name);
    expect(podNames).toHaveLength(3);
    const logBefore = logState(ns, podNames);
    // Writers through the leader Service for the whole cycle (the leader resigns in it).
    const writers = await startWriters(ns, {
      name: 'scav-writers',
      writeUrl: 'https://orders-leader:2113',
      readUrls: podNames.map((pod) => `https://${pod}.orders-headless.${ns}.svc:2113`),
      writers: 8,
      password,
    });
    applySchedule(ns, 'every-minute', { cluster: { name: 'orders' }, schedule: '* * * * *', timeZone: 'UTC' });
    const waiting = await waitFor('the schedule to say when its first cycle runs', async () => {
      const schedule = await getSchedule(ns, 'every-minute');
      return schedule?.status?.state === 'Waiting' && schedule.status.nextScheduleTime !== undefined ? schedule : undefined;
    }, 60_000);
    expect(waiting.status?.timeUntilNextCycle).toMatch(/^0\.00:0[01]:\d\d\.\d{7}$/);
    expect(waiting.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True' });
    // Follow the cycle: the last view of its nodes, and whether the cluster named it its operation.
    let cycleId: string | undefined;
    let nodes: CycleNode[] = [];
    let heldAsOperation = false;
    const finished = await waitFor('the first cycle to complete', async () => {
      const schedule = await getSchedule(ns, 'every-minute');
      const current = schedule?.status?.currentCycle;
      if (current !== undefined && (cycleId === undefined || cycleId === current.id)) {
        cycleId = current.id;
        nodes = current.nodes ?? [];
        const operation = (await getCluster(ns, 'orders'))?.status?.operation as { kind?: string; id?: string } | undefined;
        if (operation?.kind === 'Scavenge' && operation.id === cycleId) heldAsOperation = true;
      }
      const done = schedule?.status?.history?.find((entry) => entry.id === cycleId);
      return done !== undefined ? { schedule, done } : undefined;
    }, 240_000, 300);
    // No further cycle while the rest is checked (the next test resumes the schedule).
    await patchSchedule(ns, 'every-minute', { spec: { suspend: true } });
    const summary = await writers.stop();
    const logAfter = logState(ns, podNames);
    process.stdout.write(`[scavenge-schedule] cycle ${cycleId ?? ''}: ${nodes.map((n) => `${n.pod}(${n.role ?? ''}) ${n.result ?? ''}`).join(', ')}; leader before ${leaderBefore ?? ''}\n`);
    process.stdout.write(`[scavenge-schedule] writers: acked ${summary.acked}, failedAttempts ${summary.failedAttempts}${summary.firstError === undefined ? '' : ` (first: ${summary.firstError})`}, longest gap ${summary.maxGapMs} ms, missing ${JSON.stringify(summary.missing)}\n`);
    for (const pod of podNames) {
      const before = logBefore[pod];
      const after = logAfter[pod];
      const grownBytes = (after?.writerCheckpoint ?? 0) - (before?.writerCheckpoint ?? 0);
      process.stdout.write(`[scavenge-schedule] ${pod} log (name apparent/allocated MiB) before: ${describeLog(before)}\n`);
      process.stdout.write(`[scavenge-schedule] ${pod} log after: ${describeLog(after)}; writer.chk moved ${mib(grownBytes)} MiB meanwhile, allocated bytes dropped by ${mib(allocatedBytes(before?.files ?? []) - allocatedBytes(after?.files ?? []))} MiB\n`);
    }
    const cycleEvents = eventsOf(ns, 'ScavengeSchedule').filter((event) => event.note.includes(`cycle ${cycleId ?? ''}`));
    process.stdout.write(`[scavenge-schedule] events of the cycle: ${cycleEvents.map((event) => `${event.reason}: ${event.note}`).join(' | ')}\n`);
    // Every node ran one scavenge: none was taken for lost and started again (a follower's run
    // history reaches its own log after the leader acknowledged it; the node answers from memory).
    expect(cycleEvents.filter((event) => ['NodeScavengeLost', 'NodeScavengeRestarted'].includes(event.reason)).map((event) => event.note)).toEqual([]);
    // No acknowledged write lost, and no append failed: the nodes hold the writes in flight while
    // the leader resigns and send them to the next leader (node/ARCHITECTURE.md, hand-overs).
    expect(summary.acked).toBeGreaterThan(50);
    expect(Object.values(summary.missing)).toEqual([0, 0, 0]);
    expect(summary.failedAttempts, `failed appends (first: ${summary.firstError ?? ''})`).toBe(0);
    expect(finished.done.result).toBe('Success');
    expect(heldAsOperation).toBe(true);
    // Followers first, the leader last, each with its node's run id.
    expect(nodes.map((node) => node.role)).toEqual(['Follower', 'Follower', 'Leader']);
    expect(nodes[2]?.pod).toBe(leaderBefore);
    expect(new Set(nodes.map((node) => node.pod)).size).toBe(3);
    expect(nodes.every((node) => node.scavengeId !== undefined && node.startedAt !== undefined)).toBe(true);
    // Every node itself says its run succeeded.
    const states = lastJsonLine<Record<string, string>>(await runInCluster(ns, 'scav-runs', runStatesScript(ns, nodes.map((node) => ({ pod: node.pod, id: node.scavengeId ?? '' }))), { EVENTDB_PASSWORD: password }));
    expect(states).toEqual(Object.fromEntries(nodes.map((node) => [node.pod, 'Success'])));
    // Every node's disk usage dropped: its own run recorded the bytes it freed (the deleted streams).
    const saved = lastJsonLine<Record<string, number | string>>(await runInCluster(ns, 'scav-saved', spaceSavedScript(ns, nodes.map((node) => ({ pod: node.pod, id: node.scavengeId ?? '' })), podNames), { EVENTDB_PASSWORD: password }));
    process.stdout.write(`[scavenge-schedule] spaceSaved per node ${JSON.stringify(saved)}\n`);
    for (const pod of podNames) expect(saved[pod]).toBeGreaterThan(DELETED_DATA_BYTES / 2);
    // And the disk says so: the log's files on every node take less space than before the cycle,
    // by half the deleted data at least. The scavenge removes more than DELETED_DATA_BYTES (every
    // record of the deleted streams); the cycle adds the writers' records (at most the move of
    // writer.chk, printed above; it also counts the unused rest of a chunk a scavenge point
    // completes) and preallocated zeros, never more than one and a half chunks (the active chunk's
    // unused tail and the next chunk's file): a drop of at least DELETED_DATA_BYTES - added -
    // 1.5 * CHUNK_SIZE_BYTES, over half the deleted data while the cycle adds less than ~16 MB
    // (writer.chk moved 4.1 MiB and the drop was 45-49 MiB of 43.9 MiB deleted data on kind here).
    for (const pod of podNames) {
      const before = allocatedBytes(logBefore[pod]?.files ?? []);
      expect(before).toBeGreaterThan(DELETED_DATA_BYTES);
      expect(allocatedBytes(logAfter[pod]?.files ?? []), `${pod}: allocated bytes of its log after the cycle`).toBeLessThan(before - DELETED_DATA_BYTES / 2);
    }
    // The leader changed before its own scavenge: it resigned, then was scavenged.
    const leaderAfter = (await waitClusterReady(ns, 'orders')).status?.leader;
    expect(leaderAfter).toBeDefined();
    expect(leaderAfter).not.toBe(leaderBefore);
    const reasons = cycleEvents.map((event) => `${event.reason} ${event.note.split(' ')[0] ?? ''}`);
    const resignAt = reasons.findIndex((entry) => entry.startsWith('LeaderResignRequested'));
    const leaderStartAt = reasons.findIndex((entry) => entry === `NodeScavengeStarted ${leaderBefore ?? ''}`);
    expect(resignAt).toBeGreaterThanOrEqual(0);
    expect(leaderStartAt).toBeGreaterThan(resignAt);
    expect(reasons.filter((entry) => entry.startsWith('NodeScavengeFinished'))).toHaveLength(3);
    expect(reasons.some((entry) => entry.startsWith('CycleCompleted'))).toBe(true);
    // The cluster was given back (waitClusterReady above: Ready with no operation).
  }, 420_000);

  it('suspend mid-cycle stops the running node scavenge: Paused with nodes left; resumed, the same cycle completes on the rest', async () => {
    const before = await getSchedule(ns, 'every-minute');
    const seen = new Set((before?.status?.history ?? []).map((entry) => entry.id));
    // Throttled to 1 %, a node scavenge rests 99 % of its time: the suspend meets it running.
    await patchSchedule(ns, 'every-minute', { spec: { suspend: false, throttlePercent: 1 } });
    const running = await waitFor('a new cycle with a node scavenge running', async () => {
      const current = (await getSchedule(ns, 'every-minute'))?.status?.currentCycle;
      if (current === undefined || seen.has(current.id)) return undefined;
      return (current.nodes ?? []).some((node) => node.result === 'InProgress') ? current : undefined;
    }, 180_000, 250);
    const interrupted = running.nodes?.find((node) => node.result === 'InProgress') as CycleNode;
    await patchSchedule(ns, 'every-minute', { spec: { suspend: true } });
    const paused = await waitFor('the schedule to be Paused', async () => {
      const schedule = await getSchedule(ns, 'every-minute');
      if (schedule?.status?.history?.some((entry) => entry.id === running.id)) throw new Error(`cycle ${running.id} completed before the suspend took effect`);
      return schedule?.status?.state === 'Paused' ? schedule : undefined;
    }, 120_000, 300);
    const pausedNodes = paused.status?.currentCycle?.nodes ?? [];
    process.stdout.write(`[scavenge-schedule] paused cycle ${running.id}: ${pausedNodes.map((n) => `${n.pod} ${n.result ?? ''}`).join(', ')}\n`);
    expect(paused.status?.currentCycle?.id).toBe(running.id);
    expect(pausedNodes.some((node) => node.result !== 'Success')).toBe(true);
    expect(pausedNodes.some((node) => node.result === 'InProgress')).toBe(false);
    // The running node scavenge was stopped (DELETE), and the node says so.
    expect(pausedNodes.find((node) => node.pod === interrupted.pod)).toMatchObject({ result: 'Stopped', scavengeId: interrupted.scavengeId });
    const stopped = lastJsonLine<Record<string, string>>(await runInCluster(ns, 'scav-stopped', runStatesScript(ns, [{ pod: interrupted.pod, id: interrupted.scavengeId ?? '' }]), { EVENTDB_PASSWORD: password }));
    expect(stopped).toEqual({ [interrupted.pod]: 'Stopped' });
    expect(paused.status?.conditions?.find((c) => c.type === 'Progressing')).toMatchObject({ status: 'False', reason: 'Paused' });
    // Paused gives the cluster back; nothing starts while suspended.
    await waitFor('the cluster released', async () => ((await getCluster(ns, 'orders'))?.status?.operation === undefined ? true : undefined), 60_000);
    const doneWhenPaused = pausedNodes.filter((node) => node.result === 'Success').map((node) => node.scavengeId);
    await patchSchedule(ns, 'every-minute', { spec: { suspend: false, throttlePercent: 100 } });
    let lastNodes: CycleNode[] = pausedNodes;
    const completed = await waitFor('the paused cycle to complete', async () => {
      const schedule = await getSchedule(ns, 'every-minute');
      if (schedule?.status?.currentCycle?.id === running.id) lastNodes = schedule.status.currentCycle.nodes ?? lastNodes;
      return schedule?.status?.history?.find((entry) => entry.id === running.id);
    }, 180_000, 300);
    process.stdout.write(`[scavenge-schedule] resumed cycle ${running.id}: ${lastNodes.map((n) => `${n.pod} ${n.result ?? ''}`).join(', ')}\n`);
    expect(completed.result).toBe('Success');
    // The nodes done before the pause were not scavenged again.
    expect(lastNodes.filter((node) => doneWhenPaused.includes(node.scavengeId))).toHaveLength(doneWhenPaused.length);
    const reasons = eventsOf(ns, 'ScavengeSchedule').map((event) => event.reason);
    expect(reasons).toEqual(expect.arrayContaining(['CyclePaused', 'NodeScavengeStopped', 'CycleResumed', 'NodeScavengeRestarted']));
    // The stopped node was scavenged again in the same cycle, to the end.
    expect(lastNodes.find((node) => node.pod === interrupted.pod)?.result).toMatch(/^(InProgress|Success)$/);
    await patchSchedule(ns, 'every-minute', { spec: { suspend: true } });
  }, 420_000);

  /** Starts the next cycle of every-minute throttled to 1 % and returns it once a node scavenge runs. */
  async function throttledCycleRunning(extra: Record<string, unknown> = {}): Promise<{ id: string; nodes?: CycleNode[] }> {
    await waitFor('no cycle of every-minute running', async () => ((await getSchedule(ns, 'every-minute'))?.status?.currentCycle === undefined ? true : undefined), 180_000);
    await waitClusterReady(ns, 'orders');
    const seen = new Set(((await getSchedule(ns, 'every-minute'))?.status?.history ?? []).map((entry) => entry.id));
    await patchSchedule(ns, 'every-minute', { spec: { suspend: false, throttlePercent: 1, ...extra } });
    return await waitFor('a new cycle with a node scavenge running', async () => {
      const current = (await getSchedule(ns, 'every-minute'))?.status?.currentCycle;
      if (current === undefined || seen.has(current.id)) return undefined;
      return (current.nodes ?? []).some((node) => node.result === 'InProgress') ? current : undefined;
    }, 180_000, 250);
  }

  it('a node deleted while it is scavenged: the cluster recreates its pod, the cycle starts its scavenge again there and completes', async () => {
    const running = await throttledCycleRunning();
    const victim = running.nodes?.find((node) => node.result === 'InProgress') as CycleNode;
    const oldUid = (await clusterPods(ns, 'orders')).find((pod) => pod.name === victim.pod)?.uid;
    expect(kubectl(['delete', 'pod', '-n', ns, victim.pod, '--wait=false']).status).toBe(0);
    // Unthrottled from here, so the rest of the cycle is quick.
    await patchSchedule(ns, 'every-minute', { spec: { throttlePercent: 100 } });
    let lastNodes: CycleNode[] = running.nodes ?? [];
    const reasonsSeen = new Set<string>();
    const completed = await waitFor('the cycle to complete after the node came back', async () => {
      const schedule = await getSchedule(ns, 'every-minute');
      if (schedule?.status?.currentCycle?.id === running.id) lastNodes = schedule.status.currentCycle.nodes ?? lastNodes;
      const progressing = schedule?.status?.conditions?.find((c) => c.type === 'Progressing');
      if (progressing !== undefined) reasonsSeen.add(progressing.reason);
      return schedule?.status?.history?.find((entry) => entry.id === running.id);
    }, 360_000, 300);
    await patchSchedule(ns, 'every-minute', { spec: { suspend: true } });
    const events = eventsOf(ns, 'ScavengeSchedule', 'every-minute').filter((event) => event.note.includes(`cycle ${running.id}`));
    process.stdout.write(`[scavenge-schedule] node lost: ${victim.pod} deleted during ${victim.scavengeId ?? ''}; Progressing reasons ${[...reasonsSeen].join(',')}; nodes ${lastNodes.map((n) => `${n.pod} ${n.result ?? ''} ${n.scavengeId ?? ''}`).join(', ')}; events ${events.map((e) => e.reason).join(',')}\n`);
    expect(completed.result).toBe('Success');
    // The pod is a new one.
    const newUid = (await clusterPods(ns, 'orders')).find((pod) => pod.name === victim.pod)?.uid;
    expect(newUid).toBeDefined();
    expect(newUid).not.toBe(oldUid);
    // Every node finished a scavenge in the cycle (told by the Events: polling the status may miss
    // the last node's states, the history entry replacing currentCycle), the deleted one a new
    // run, started again on the new pod, which its node says succeeded.
    const finishedRuns = events
      .filter((event) => event.reason === 'NodeScavengeFinished')
      .map((event) => /^(\S+): scavenge (\S+) (\S+) /.exec(event.note))
      .map((match) => ({ pod: match?.[1] ?? '', id: match?.[2] ?? '', result: match?.[3] ?? '' }));
    const podNames = (await clusterPods(ns, 'orders')).map((pod) => pod.name).sort();
    expect([...new Set(finishedRuns.map((run) => run.pod))].sort()).toEqual(podNames);
    for (const pod of podNames) expect(finishedRuns.filter((run) => run.pod === pod).at(-1)?.result, pod).toBe('Success');
    const again = finishedRuns.filter((run) => run.pod === victim.pod).at(-1);
    expect(again?.id).not.toBe(victim.scavengeId);
    const states = lastJsonLine<Record<string, string>>(await runInCluster(ns, 'scav-again', runStatesScript(ns, [{ pod: victim.pod, id: again?.id ?? '' }]), { EVENTDB_PASSWORD: password }));
    expect(states).toEqual({ [victim.pod]: 'Success' });
    // The first run was lost with its process (Unknown, Interrupted), or stopped by the node's
    // draining stop before it went (Stopped): either way it was started again.
    const firstRun = events.find((event) => event.note.startsWith(`${victim.pod}`) && event.note.includes(victim.scavengeId ?? '-') && event.reason !== 'NodeScavengeStarted');
    expect(firstRun?.reason === 'NodeScavengeLost' || (firstRun?.reason === 'NodeScavengeFinished' && firstRun.note.includes(' Stopped '))).toBe(true);
    expect(events.map((event) => event.reason)).toEqual(expect.arrayContaining(['NodeScavengeRestarted', 'CycleCompleted']));
    await waitClusterReady(ns, 'orders');
  }, 600_000);

  it('nodeTimeout: a node scavenge running longer is stopped, the cycle fails, and the status and Events say so', async () => {
    // Fresh garbage (earlier cycles removed the first), so a node scavenge throttled to 1 % rests 99
    // ms for every 1 ms of work while it rewrites a dozen 4 MiB chunks. How long that lasts depends
    // on the machine: with nodeTimeout 20s a CI run once finished first (Success, the cycle
    // succeeded). nodeTimeout 2s: the operator checks a running scavenge every 2 s, so it stops the
    // run 2-4 s after its start, which outlasts any run that does 40 ms of work or more.
    const wrote = lastJsonLine<{ written: number; deleted: number }>(await runInCluster(ns, 'scav-writer-2', writeAndDeleteScript('scav2-'), { EVENTDB_PASSWORD: password }));
    expect(wrote).toMatchObject({ written: GARBAGE.streams, deleted: GARBAGE.streams - GARBAGE.kept });
    const running = await throttledCycleRunning({ nodeTimeout: '2s' });
    const slow = running.nodes?.find((node) => node.result === 'InProgress') as CycleNode;
    const failed = await waitFor('the cycle to fail on nodeTimeout', async () => {
      const schedule = await getSchedule(ns, 'every-minute');
      const done = schedule?.status?.history?.find((entry) => entry.id === running.id);
      return done !== undefined ? { schedule, done } : undefined;
    }, 180_000, 300);
    await patchSchedule(ns, 'every-minute', { spec: { suspend: true, throttlePercent: 100, nodeTimeout: '6h' } });
    expect(failed.done.result).toBe('Failed');
    expect(failed.schedule?.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'CycleFailed' });
    const events = eventsOf(ns, 'ScavengeSchedule', 'every-minute').filter((event) => event.note.includes(slow.scavengeId ?? '-') || event.note.includes(`cycle ${running.id}`));
    process.stdout.write(`[scavenge-schedule] nodeTimeout: ${events.map((e) => `${e.reason}: ${e.note}`).join(' | ')}\n`);
    expect(events.find((event) => event.reason === 'NodeScavengeTimedOut')?.note).toContain(`${slow.pod}: scavenge ${slow.scavengeId ?? ''} ran longer than nodeTimeout 2s`);
    expect(events.map((event) => event.reason)).toContain('CycleFailed');
    // The node itself stopped the run, and the cluster was given back.
    const states = lastJsonLine<Record<string, string>>(await runInCluster(ns, 'scav-timeout', runStatesScript(ns, [{ pod: slow.pod, id: slow.scavengeId ?? '' }]), { EVENTDB_PASSWORD: password }));
    expect(states).toEqual({ [slow.pod]: 'Stopped' });
    await waitFor('the cluster released', async () => ((await getCluster(ns, 'orders'))?.status?.operation === undefined ? true : undefined), 60_000);
  }, 420_000);

  it('respectMaintenanceWindows: a due cycle waits while the cluster has no open window, and the status says why', async () => {
    await patchSchedule(ns, 'every-minute', { spec: { suspend: true } });
    await waitFor('no cycle of every-minute running', async () => ((await getSchedule(ns, 'every-minute'))?.status?.currentCycle === undefined ? true : undefined), 180_000);
    await waitClusterReady(ns, 'orders');
    const podNames = (await clusterPods(ns, 'orders')).map((pod) => pod.name);
    // The cluster's only window opens daily twelve hours from now, for one hour: closed for the whole test.
    const opensAtHour = (new Date().getUTCHours() + 12) % 24;
    await patchCluster(ns, 'orders', { spec: { maintenanceWindows: [{ schedule: `0 ${opensAtHour} * * *`, timeZone: 'UTC', duration: '1h' }] } });
    const runsBefore = lastJsonLine<Record<string, { last: string; current: string }>>(await runInCluster(ns, 'scav-last-before', lastScavengesScript(ns, podNames), { EVENTDB_PASSWORD: password }));
    applySchedule(ns, 'in-window', { cluster: { name: 'orders' }, schedule: '* * * * *', timeZone: 'UTC', respectMaintenanceWindows: true });
    const first = await waitFor('the schedule to name its first occurrence', async () => {
      const schedule = await getSchedule(ns, 'in-window');
      return schedule?.status?.nextScheduleTime !== undefined ? Date.parse(schedule.status.nextScheduleTime) : undefined;
    }, 60_000);
    // Past the due time (plus the controller's 15 s retry of a due cycle): never a cycle; the reason shown.
    let states = new Set<string>();
    const reason = await waitFor('the due cycle held back for the maintenance window', async () => {
      const schedule = await getSchedule(ns, 'in-window');
      if (schedule?.status?.currentCycle !== undefined) throw new Error(`cycle ${schedule.status.currentCycle.id} started outside any maintenance window`);
      if ((schedule?.status?.history ?? []).length > 0) throw new Error('a cycle completed outside any maintenance window');
      states = states.add(schedule?.status?.state ?? '');
      const progressing = schedule?.status?.conditions?.find((c) => c.type === 'Progressing');
      return Date.now() > first + 20_000 && progressing?.reason === 'WaitingForMaintenanceWindow' ? progressing : undefined;
    }, 150_000, 500);
    process.stdout.write(`[scavenge-schedule] in-window: states ${[...states].join(',')}; Progressing ${reason.reason}: ${reason.message}\n`);
    expect([...states]).toEqual(['Waiting']);
    expect(reason).toMatchObject({ status: 'False', message: expect.stringContaining('maintenance window') });
    // No node started a scavenge: each one's last run is the one before, none is running.
    const runsAfter = lastJsonLine<Record<string, { last: string; current: string }>>(await runInCluster(ns, 'scav-last-after', lastScavengesScript(ns, podNames), { EVENTDB_PASSWORD: password }));
    expect(runsAfter).toEqual(Object.fromEntries(podNames.map((pod) => [pod, { last: runsBefore[pod]?.last, current: '' }])));
    expect(eventsOf(ns, 'ScavengeSchedule', 'in-window').filter((event) => event.reason === 'CycleStarted')).toEqual([]);
  }, 300_000);
});

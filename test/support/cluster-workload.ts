/**
 * Writers and checks for cluster fault tests: concurrent writers append to their own streams
 * through any running node, retrying an unanswered write with the same event id (so a retry can
 * never write twice), and remember exactly what was acknowledged. The checks read every node.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { ATOM_JSON, EVENTS_JSON } from './http-client.js';
import type { ClusterMember, TestCluster } from './cluster.js';

export interface Acknowledged {
  readonly stream: string;
  readonly eventNumber: number;
  readonly eventId: string;
  readonly value: number;
}

export interface Workload {
  readonly acknowledged: Acknowledged[];
  /** Requests answered with an error or not at all (retried). */
  failures: number;
  /** Resolves once no write is in flight; writers wait until `resume`. */
  pause(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
}

/** Starts `writers` loops; each stops after `stop()` (or after `maxEventsPerWriter`). */
export function startWriters(cluster: TestCluster, writers: number, prefix: string, maxEventsPerWriter = 100_000): Workload {
  const acknowledged: Acknowledged[] = [];
  let stopping = false;
  let paused: { promise: Promise<void>; resume: () => void } | undefined;
  let inFlight = 0;
  const workload: Workload = {
    acknowledged,
    failures: 0,
    async pause() {
      if (paused === undefined) {
        let resume!: () => void;
        paused = { promise: new Promise<void>((r) => { resume = r; }), resume };
      }
      while (inFlight > 0) await sleep(10);
    },
    resume() {
      const p = paused;
      paused = undefined;
      p?.resume();
    },
    async stop() {
      stopping = true;
      workload.resume();
      await Promise.all(loops);
    },
  };
  const running = (): ClusterMember[] => cluster.members.filter((m) => m.process !== undefined && m.process.child.exitCode === null && m.process.child.signalCode === null && !m.spec.readOnlyReplica);
  const loop = async (writer: number): Promise<void> => {
    const stream = `${prefix}-w${writer}`;
    for (let value = 0; value < maxEventsPerWriter && !stopping; value++) {
      const eventId = randomUUID();
      const body = JSON.stringify([{ eventId, eventType: 'value', data: { writer, value } }]);
      // Retried with the same id until answered: an unanswered write may still have been written.
      for (let attempt = 0; !stopping; attempt++) {
        while (paused !== undefined && !stopping) await paused.promise;
        const members = running();
        const member = members[(writer + attempt) % Math.max(1, members.length)];
        if (member === undefined) { await sleep(50); continue; }
        inFlight += 1;
        try {
          const response = await member.http('POST', `/streams/${stream}`, {
            headers: { 'content-type': EVENTS_JSON }, body,
          }).finally(() => { inFlight -= 1; });
          if (response.status === 201) {
            const location = response.headers.get('location') ?? '';
            const eventNumber = Number(location.slice(location.lastIndexOf('/') + 1));
            acknowledged.push({ stream, eventNumber, eventId, value });
            break;
          }
          workload.failures += 1;
        } catch {
          workload.failures += 1;
        }
        await sleep(20 + Math.min(500, attempt * 20));
      }
    }
  };
  const loops = Array.from({ length: writers }, (_, i) => loop(i));
  return workload;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

interface FeedEntry {
  eventId: string;
  eventNumber: number;
  data: string;
  positionStreamId?: string;
}

/** Every event of a stream on one node, by number. */
export async function readStream(member: ClusterMember, stream: string): Promise<Map<number, FeedEntry>> {
  const events = new Map<number, FeedEntry>();
  let from = 0;
  for (let page = 0; page < 10_000; page++) {
    const response = await member.http('GET', `/streams/${stream}/${from}/forward/500?embed=body`, { headers: { accept: ATOM_JSON } });
    if (response.status === 404) return events;
    expect(response.status, `${member.spec.name} ${stream}`).toBe(200);
    const entries = response.json<{ entries: FeedEntry[] }>().entries;
    for (const e of entries) events.set(e.eventNumber, e);
    if (entries.length < 500) return events;
    from += 500;
  }
  return events;
}

/** Waits until every running member reports the same writer and commit checkpoints. */
export async function waitForConvergence(cluster: TestCluster, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const live = cluster.members.filter((m) => m.process !== undefined && m.process.child.exitCode === null);
    const positions = await Promise.all(live.map(async (m) => {
      try {
        const stats = (await m.http('GET', '/stats', { headers: { accept: 'application/json' } })).json();
        const r = (stats.svc ?? stats.es).replication as { writerCheckpoint: number; commitPosition: number };
        return `${r.writerCheckpoint}/${r.commitPosition}`;
      } catch {
        return 'unreachable';
      }
    }));
    last = positions.join(' ');
    if (new Set(positions).size === 1 && !positions.includes('unreachable')) return Number(positions[0]!.split('/')[0]);
    await sleep(100);
  }
  throw new Error(`nodes did not converge within ${timeoutMs} ms: ${last}`);
}

/**
 * Every acknowledged event is readable on every running node at its number with its data, and
 * every node holds the same events in each stream.
 */
export async function checkAcknowledged(cluster: TestCluster, acknowledged: readonly Acknowledged[]): Promise<void> {
  const live = cluster.members.filter((m) => m.process !== undefined && m.process.child.exitCode === null);
  const streams = [...new Set(acknowledged.map((a) => a.stream))];
  for (const stream of streams) {
    const views = await Promise.all(live.map((m) => readStream(m, stream)));
    const reference = views[0]!;
    for (let i = 1; i < views.length; i++) {
      expect([...views[i]!.entries()].map(([n, e]) => `${n}:${e.eventId}`), `${live[i]!.spec.name} vs ${live[0]!.spec.name}, ${stream}`)
        .toEqual([...reference.entries()].map(([n, e]) => `${n}:${e.eventId}`));
    }
    for (const a of acknowledged.filter((x) => x.stream === stream)) {
      const entry = reference.get(a.eventNumber);
      expect(entry?.eventId, `${stream}@${a.eventNumber}`).toBe(a.eventId);
      expect(JSON.parse(entry!.data)).toMatchObject({ value: a.value });
    }
  }
}

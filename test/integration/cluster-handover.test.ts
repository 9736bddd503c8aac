/**
 * A leader hand-over costs writers latency, not errors: a 3-node cluster of real processes on
 * disk, writers appending without any retry of their own, each with an exact expected version
 * (so a duplicate or a gap would show), through every node: a follower forwards to the leader;
 * with ES-RequireLeader the writer follows the 307 to the leader. The leader resigns three times
 * (as the auto-scavenge and the operator's ScavengeSchedule make it do) while they write. Every
 * append is acknowledged (201), none fails, and every node holds each stream exactly as
 * acknowledged: events 0..n-1 in order, no duplicate, none lost. Then SIGTERM (a rolling update,
 * a drained Kubernetes node) of the leader and of a follower under the same writers: the leader
 * hands over before it stops, each node answers what is in flight and closes its connections
 * cleanly; the only thing a writer meets is a refused connection once the node has stopped
 * (nothing sent: it writes to another node), never a failed or lost append.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCluster, type ClusterMember, type TestCluster } from '../support/cluster.js';
import { checkAcknowledged, readStream, sleep, waitForConvergence, type Acknowledged } from '../support/cluster-workload.js';
import { EVENTS_JSON } from '../support/http-client.js';

const AUTH = `Basic ${Buffer.from('admin:changeit').toString('base64')}`;
const OPS = { authorization: `Basic ${Buffer.from('ops:changeit').toString('base64')}` };
/** Longer than any hand-over may take: a request still unanswered then counts as failed. */
const REQUEST_TIMEOUT_MS = 20_000;

interface Writers {
  readonly acknowledged: Acknowledged[];
  readonly failures: string[];
  /**
   * Members being stopped: new requests go elsewhere, as a load balancer (a Kubernetes Service)
   * stops sending new connections to a terminating pod. Requests already on their way are not
   * moved: they must be answered.
   */
  readonly leaving: Set<ClusterMember>;
  stop(): Promise<void>;
}

/** One loop per entry of `targets`: a single event per request, expected version = the last one written. */
function startStrictWriters(cluster: TestCluster, targets: readonly { member: ClusterMember; requireLeader: boolean }[]): Writers {
  const acknowledged: Acknowledged[] = [];
  const failures: string[] = [];
  let stopping = false;
  const leaving = new Set<ClusterMember>();
  const running = (member: ClusterMember): boolean => !leaving.has(member) && member.process !== undefined && member.process.child.exitCode === null && member.process.child.signalCode === null;
  const loop = async (index: number, target: { member: ClusterMember; requireLeader: boolean }): Promise<void> => {
    const stream = `handover-${randomUUID().slice(0, 8)}-w${index}`;
    let member = target.member;
    for (let value = 0; !stopping && failures.length === 0 && value < 100_000; value++) {
      const eventId = randomUUID();
      const headers: Record<string, string> = {
        authorization: AUTH, 'content-type': EVENTS_JSON, 'es-expectedversion': String(value - 1),
        ...(target.requireLeader ? { 'es-requireleader': 'true' } : {}),
      };
      if (!running(member)) member = cluster.members.find(running) ?? member;
      try {
        const body = JSON.stringify([{ eventId, eventType: 'value', data: { index, value } }]);
        const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
        // A 307 is followed to the leader with the same method, headers and body, as EventStoreDB
        // clients do (fetch itself would drop the credentials on another origin).
        let url = `${member.baseUrl}/streams/${stream}`;
        let response = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal });
        for (let hop = 0; response.status === 307 && hop < 5; hop++) {
          await response.text();
          url = new URL(response.headers.get('location') ?? '', url).toString();
          response = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal });
        }
        const text = await response.text();
        if (response.status !== 201) {
          failures.push(`${member.spec.name} ${stream}@${value}: ${response.status} ${response.statusText} ${text.slice(0, 200)}`);
          return;
        }
        const location = response.headers.get('location') ?? '';
        acknowledged.push({ stream, eventNumber: Number(location.slice(location.lastIndexOf('/') + 1)), eventId, value });
      } catch (err: unknown) {
        // A connection this node refused (it has stopped listening): nothing was sent, so the
        // client sends the same write to another node, as a client with several endpoints does.
        // Anything else (a reset or an error after the request went out) is a failed append.
        const cause = (err as { cause?: { code?: string; syscall?: string } }).cause;
        if (cause?.syscall === 'connect' && (cause.code === 'ECONNREFUSED' || cause.code === 'ECONNRESET')) {
          member = cluster.members.find((m) => m !== member && running(m)) ?? member;
          value -= 1;
          await sleep(20);
          continue;
        }
        failures.push(`${member.spec.name} ${stream}@${value}: ${err instanceof Error ? err.message : String(err)} ${JSON.stringify(cause ?? {})}`);
        return;
      }
    }
  };
  const loops = targets.map((target, index) => loop(index, target));
  return { acknowledged, failures, leaving, stop: async () => { stopping = true; await Promise.all(loops); } };
}

/** Each stream holds exactly the acknowledged events, numbered 0..n-1: none lost, none twice. */
async function expectExactly(member: ClusterMember, acknowledged: readonly Acknowledged[]): Promise<void> {
  const byStream = new Map<string, number>();
  for (const ack of acknowledged) byStream.set(ack.stream, (byStream.get(ack.stream) ?? 0) + 1);
  for (const [stream, count] of byStream) {
    const events = await readStream(member, stream);
    expect([...events.keys()].sort((x, y) => x - y), stream).toEqual(Array.from({ length: count }, (_, i) => i));
  }
}

describe('leader hand-overs under write load', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await createCluster({ size: 3, onDisk: true, firstHost: 71 });
    await cluster.waitForStable(120_000);
  }, 200_000);
  afterAll(async () => cluster?.stop());

  it('three resignations in a row: no append fails, none is lost or written twice', async () => {
    const [a, b, c] = cluster.members as [ClusterMember, ClusterMember, ClusterMember];
    const writers = startStrictWriters(cluster, [
      { member: a, requireLeader: false }, { member: b, requireLeader: false }, { member: c, requireLeader: false },
      { member: a, requireLeader: true }, { member: b, requireLeader: true }, { member: c, requireLeader: true },
    ]);
    const leaders: string[] = [];
    try {
      await sleep(1000);
      for (let round = 0; round < 3 && writers.failures.length === 0; round++) {
        const old = await cluster.leader();
        leaders.push(old.spec.name);
        const ackedBefore = writers.acknowledged.length;
        expect((await old.http('POST', '/admin/node/resign', { headers: OPS })).status).toBe(200);
        let next = old;
        const deadline = Date.now() + 30_000;
        while (next === old && Date.now() < deadline) next = await cluster.leader();
        expect(next, `round ${round}: another node leads`).not.toBe(old);
        await cluster.waitForStable(30_000);
        // Writes flow again after the hand-over (through every node).
        const flowing = Date.now() + 15_000;
        while (writers.acknowledged.length < ackedBefore + 30 && Date.now() < flowing && writers.failures.length === 0) await sleep(50);
        expect(writers.acknowledged.length, `round ${round}: writes acknowledged after the hand-over`).toBeGreaterThanOrEqual(ackedBefore + 30);
      }
    } finally {
      await writers.stop();
    }
    process.stdout.write(`[cluster-handover] leaders resigned ${leaders.join(', ')}; acknowledged ${writers.acknowledged.length}; failures ${writers.failures.length}\n${writers.failures.map((f) => `  ${f}\n`).join('')}`);
    expect(writers.failures).toEqual([]);
    expect(leaders).toHaveLength(3);
    // Every node holds each stream exactly as acknowledged: 0..n-1, no duplicate, none lost.
    await waitForConvergence(cluster);
    await checkAcknowledged(cluster, writers.acknowledged);
    await expectExactly(a, writers.acknowledged);
  }, 300_000);

  it('SIGTERM of the leader, then of a follower: nothing in flight fails, nothing is lost', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader) as ClusterMember;
    const targets = cluster.members.flatMap((member) => [{ member, requireLeader: false }, { member, requireLeader: true }]);
    const writers = startStrictWriters(cluster, targets);
    const exits: string[] = [];
    try {
      for (const stopping of [leader, follower]) {
        await sleep(1000);
        const before = writers.acknowledged.length;
        const exited = stopping.process!.stop('SIGTERM');
        writers.leaving.add(stopping);
        const code = await exited;
        exits.push(`${stopping.spec.name}=${String(code)}`);
        expect(code, `${stopping.spec.name} stops cleanly`).toBe(0);
        await cluster.waitForStable(60_000);
        const flowing = Date.now() + 15_000;
        while (writers.acknowledged.length < before + 30 && Date.now() < flowing && writers.failures.length === 0) await sleep(50);
        await cluster.start(stopping);
        writers.leaving.delete(stopping);
        await cluster.waitForStable(60_000);
      }
      await sleep(1000);
    } finally {
      await writers.stop();
    }
    process.stdout.write(`[cluster-handover] SIGTERM ${exits.join(', ')}; acknowledged ${writers.acknowledged.length}; failures ${writers.failures.length}\n${writers.failures.map((f) => `  ${f}\n`).join('')}`);
    expect(writers.failures).toEqual([]);
    await waitForConvergence(cluster);
    await checkAcknowledged(cluster, writers.acknowledged);
    await expectExactly(leader, writers.acknowledged);
  }, 300_000);
});

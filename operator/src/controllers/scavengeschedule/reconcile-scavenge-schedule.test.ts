// The ScavengeSchedule controller's steps against the in-memory KubeApi and a stub of three nodes
// (gossip, scavenge runs, resign): the hold handshake with the cluster controller, the order of
// the node scavenges, suspend and resume. The real thing runs on kind in
// test/operator/k8s/scavenge-schedule.test.ts.
import { OperatorMetrics, valueOf } from '../../runtime/metrics.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ANNOTATION_SCAVENGE_HOLD } from '../../api/group.js';
import type { NodeAccess } from '../../node-client/node-access.js';
import { NodeClient, type NodeTransport } from '../../node-client/node-client.js';
import { ManualClock } from '../../runtime/clock.js';
import type { EventInput } from '../../runtime/events.js';
import { FakeKubeApi } from '../../runtime/fake-kube-api.js';
import { Informer } from '../../runtime/informer.js';
import { InformerSet } from '../../runtime/informer-set.js';
import type { KubeObject } from '../../runtime/kube-api.js';
import { EVENTDB_CLUSTERS, PODS, SCAVENGE_SCHEDULES, SECRETS } from '../../runtime/resource-types.js';
import { reconcileScavengeSchedule, type ScavengeScheduleControllerDeps } from './reconcile-scavenge-schedule.js';

const log = pino({ level: 'silent' });
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};
const PODS_OF = ['orders-0', 'orders-1', 'orders-2'];

class Harness {
  readonly api = new FakeKubeApi();
  readonly clock = new ManualClock(Date.parse('2026-03-04T10:00:30Z'));
  readonly events: EventInput[] = [];
  readonly informers: Informer[] = [];
  readonly roles = new Map([['orders-0', 'Leader'], ['orders-1', 'Follower'], ['orders-2', 'Follower']]);
  readonly checkpoints = new Map([['orders-0', 900], ['orders-1', 800], ['orders-2', 700]]);
  /** Runs per pod: id -> result. */
  readonly runs = new Map<string, Map<string, string>>();
  readonly calls: string[] = [];
  deps!: ScavengeScheduleControllerDeps;

  async start(scheduleSpec: Record<string, unknown>): Promise<void> {
    this.api.seed(EVENTDB_CLUSTERS, {
      apiVersion: 'eventdb.io/v1alpha1',
      kind: 'EventDBCluster',
      metadata: { name: 'orders', namespace: 'shop', uid: 'c-1' },
      spec: { replicas: 3, tls: { mode: 'Disabled' } },
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: '2026-03-04T09:00:00Z' }] },
    });
    this.api.seed(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orders-ops', namespace: 'shop' }, data: { password: Buffer.from('ops-pw').toString('base64') } });
    for (const pod of PODS_OF) {
      this.api.seed(PODS, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod, namespace: 'shop', uid: `u-${pod}`, labels: { 'eventdb.io/cluster': 'orders', 'app.kubernetes.io/managed-by': 'eventdb-operator' } },
        spec: { containers: [{ name: 'eventdb', env: [] }] },
        status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
      });
      this.runs.set(pod, new Map());
    }
    this.api.seed(SCAVENGE_SCHEDULES, { apiVersion: 'eventdb.io/v1alpha1', kind: 'ScavengeSchedule', metadata: { name: 'nightly', namespace: 'shop', uid: 's-1', generation: 1 }, spec: { cluster: { name: 'orders' }, ...scheduleSpec } });
    const make = (type: typeof PODS): Informer => new Informer({ api: this.api, type, clock: this.clock, log, resyncPeriodMs: 0 });
    const [clusters, pods, schedules] = [make(EVENTDB_CLUSTERS), make(PODS), make(SCAVENGE_SCHEDULES)];
    this.informers.push(clusters, pods, schedules);
    for (const informer of this.informers) informer.start();
    await Promise.all(this.informers.map((informer) => informer.waitForSync()));
    const access: NodeAccess = { baseUrl: async (_ns, pod, scheme) => `${scheme}://${pod.name}.test`, close: async () => undefined };
    const transport: NodeTransport = async (request) => {
      const pod = request.url.hostname.replace(/\.test$/, '');
      const path = request.url.pathname;
      const runs = this.runs.get(pod) as Map<string, string>;
      if (path === '/gossip') {
        const member = { instanceId: pod, state: this.roles.get(pod), isAlive: true, httpEndPointIp: '10.0.0.1', httpEndPointPort: 2113, writerCheckpoint: this.checkpoints.get(pod) };
        return { status: 200, text: JSON.stringify({ members: [member] }) };
      }
      this.calls.push(`${request.method} ${pod} ${path}`);
      if (request.method === 'POST' && path === '/admin/scavenge') {
        const id = `${pod}-run-${runs.size + 1}`;
        runs.set(id, 'InProgress');
        return { status: 200, text: JSON.stringify({ scavengeId: id }) };
      }
      if (request.method === 'POST' && path === '/admin/node/resign') {
        // Another node leads at once.
        this.roles.set(pod, 'Follower');
        this.roles.set('orders-1', 'Leader');
        return { status: 200, text: '' };
      }
      const id = decodeURIComponent(path.replace('/admin/scavenge/', ''));
      if (request.method === 'DELETE') {
        runs.set(id, 'Stopped');
        return { status: 200, text: '' };
      }
      const result = runs.get(id);
      return result === undefined ? { status: 404, text: 'Scavenge Id does not exist' } : { status: 200, text: JSON.stringify({ scavengeId: id, scavengeLink: '', scavengeResult: result }) };
    };
    this.deps = {
      api: this.api,
      schedules: new InformerSet([schedules]),
      clusters: new InformerSet([clusters]),
      pods: new InformerSet([pods]),
      client: new NodeClient({ transport }),
      access,
      events: { record: async (_object, event) => void this.events.push(event) },
      clock: this.clock,
      defaults: { nodeImage: 'eventdb:dev', dataSize: '1Gi' },
      writtenStatus: new Map(),
      metrics: new OperatorMetrics(),
    };
  }

  async reconcile(): Promise<void> {
    await settle();
    await reconcileScavengeSchedule(this.deps, { key: 'shop/nightly', namespace: 'shop', name: 'nightly', log, reconcileId: 'r' });
    await settle();
  }

  status(): { state?: string; currentCycle?: { id: string; nodes: { pod: string; role?: string; result?: string; scavengeId?: string }[] }; history?: { id: string; result: string }[]; nextScheduleTime?: string; timeUntilNextCycle?: string } {
    return (this.api.objects(SCAVENGE_SCHEDULES)[0]?.['status'] ?? {}) as never;
  }

  cluster(): KubeObject {
    return this.api.objects(EVENTDB_CLUSTERS)[0] as KubeObject;
  }

  /** What the cluster controller does with the hold annotation: names the cycle its operation. */
  async acknowledgeHold(): Promise<void> {
    const hold = this.cluster().metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD];
    const id = hold?.split('/')[1];
    await this.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { status: { operation: id === undefined ? null : { id, kind: 'Scavenge', step: 'scavenge', startedAt: '2026-03-04T10:01:00Z' } } }, { subresource: 'status' });
  }

  /** Every running node scavenge finishes with Success. */
  finishRuns(): void {
    for (const runs of this.runs.values()) for (const [id, result] of runs) if (result === 'InProgress') runs.set(id, 'Success');
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }
}

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe('the ScavengeSchedule controller', () => {
  it('waits for its time, holds the cluster, scavenges followers then the resigned leader, and gives the cluster back', async () => {
    harness = new Harness();
    await harness.start({ schedule: '* * * * *' });
    await harness.reconcile();
    expect(harness.status()).toMatchObject({ state: 'Waiting', nextScheduleTime: '2026-03-04T10:01:00.000Z', timeUntilNextCycle: '0.00:00:30.0000000' });
    harness.clock.advance(30_000);
    await harness.reconcile();
    // The cycle is in status and the cluster is asked for its turn; no node is touched before the cluster names the cycle.
    const cycle = harness.status().currentCycle;
    expect(harness.status().state).toBe('InProgress');
    expect(cycle?.nodes.map((node) => node.pod)).toEqual(['orders-2', 'orders-1', 'orders-0']);
    expect(harness.cluster().metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD]).toBe(`nightly/${cycle?.id ?? ''}`);
    expect(harness.calls).toEqual([]);
    await harness.acknowledgeHold();
    for (let i = 0; i < 12 && harness.status().currentCycle !== undefined; i++) {
      harness.clock.advance(2000);
      await harness.reconcile();
      harness.finishRuns();
    }
    expect(harness.calls.filter((call) => !call.startsWith('GET'))).toEqual([
      'POST orders-2 /admin/scavenge',
      'POST orders-1 /admin/scavenge',
      'POST orders-0 /admin/node/resign',
      'POST orders-0 /admin/scavenge',
    ]);
    expect(harness.status().history).toEqual([expect.objectContaining({ id: cycle?.id, result: 'Success' })]);
    expect(harness.status().state).toBe('Waiting');
    expect(harness.cluster().metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD]).toBeUndefined();
    const reasons = harness.events.map((event) => event.reason);
    expect(reasons).toEqual(['CycleStarted', 'NodeScavengeStarted', 'NodeScavengeFinished', 'NodeScavengeStarted', 'NodeScavengeFinished', 'LeaderResignRequested', 'NodeScavengeStarted', 'NodeScavengeFinished', 'CycleCompleted']);
  });

  it('suspend stops the running node scavenge (Paused, the cluster given back); false resumes the cycle on the nodes left', async () => {
    harness = new Harness();
    await harness.start({ schedule: '* * * * *' });
    await harness.reconcile();
    harness.clock.advance(30_000);
    await harness.reconcile();
    await harness.acknowledgeHold();
    harness.clock.advance(2000);
    await harness.reconcile();
    expect(harness.status().currentCycle?.nodes[0]).toMatchObject({ pod: 'orders-2', result: 'InProgress', role: 'Follower' });
    await harness.api.patch(SCAVENGE_SCHEDULES, 'shop', 'nightly', { metadata: { generation: 2 }, spec: { suspend: true } });
    harness.clock.advance(2000);
    await harness.reconcile();
    expect(harness.calls).toContain('DELETE orders-2 /admin/scavenge/orders-2-run-1');
    expect(harness.status().state).toBe('Paused');
    expect(harness.status().currentCycle?.nodes[0]).toMatchObject({ pod: 'orders-2', result: 'Stopped' });
    expect(harness.cluster().metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD]).toBeUndefined();
    // Suspended: nothing starts, even when an occurrence comes.
    const before = harness.calls.length;
    harness.clock.advance(60_000);
    await harness.reconcile();
    expect(harness.calls.slice(before).filter((call) => !call.startsWith('GET'))).toEqual([]);
    await harness.api.patch(SCAVENGE_SCHEDULES, 'shop', 'nightly', { metadata: { generation: 3 }, spec: { suspend: false } });
    await harness.acknowledgeHold(); // the cluster controller's answer to the hold taken again
    for (let i = 0; i < 12 && harness.status().currentCycle !== undefined; i++) {
      harness.clock.advance(2000);
      await harness.reconcile();
      if (harness.cluster()['status'] !== undefined) await harness.acknowledgeHold();
      harness.finishRuns();
    }
    expect(harness.status().history?.[0]?.result).toBe('Success');
    const metrics = harness.deps.metrics as OperatorMetrics;
    const finishedAt = Date.parse((harness.status().history?.[0] as { finishedAt?: string } | undefined)?.finishedAt ?? '');
    const schedule = String(harness.api.objects(SCAVENGE_SCHEDULES)[0]?.metadata.name);
    expect(await valueOf(metrics.scavengeCycles, { namespace: 'shop', schedule, result: 'Success' })).toBe(1);
    expect(await valueOf(metrics.scavengeLastCycle, { namespace: 'shop', schedule, result: 'Success' })).toBe(finishedAt / 1000);
    expect(await valueOf(metrics.scavengeLastCycle, { namespace: 'shop', schedule, result: 'Failed' })).toBeUndefined();
    expect(harness.calls.filter((call) => call.startsWith('POST'))).toEqual([
      'POST orders-2 /admin/scavenge',
      'POST orders-2 /admin/scavenge',
      'POST orders-1 /admin/scavenge',
      'POST orders-0 /admin/node/resign',
      'POST orders-0 /admin/scavenge',
    ]);
    expect(harness.events.map((event) => event.reason)).toEqual(expect.arrayContaining(['CyclePaused', 'CycleResumed', 'NodeScavengeRestarted']));
  });

  it('reports kstatus conditions and writes the status only when something but the countdown changed', async () => {
    harness = new Harness();
    await harness.start({ schedule: '0 3 * * *' });
    await harness.reconcile();
    const conditions = (): Record<string, string> =>
      Object.fromEntries(((harness?.status() as { conditions?: { type: string; status: string; reason: string }[] }).conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));
    expect(conditions()).toMatchObject({ Ready: 'True/Scheduled', Reconciling: 'False/Reconciled', Stalled: 'False/NotStalled' });
    const version = harness.api.objects(SCAVENGE_SCHEDULES)[0]?.metadata.resourceVersion;
    for (let i = 0; i < 4; i++) {
      harness.clock.advance(20_000);
      await harness.reconcile();
    }
    expect(harness.api.objects(SCAVENGE_SCHEDULES)[0]?.metadata.resourceVersion).toBe(version);
    await harness.api.patch(SCAVENGE_SCHEDULES, 'shop', 'nightly', { spec: { schedule: '0 3 * *' } });
    await harness.reconcile();
    expect(conditions()).toMatchObject({ Ready: 'False/InvalidSpec', Stalled: 'True/InvalidSpec', Reconciling: 'False/Stalled' });
  });
});

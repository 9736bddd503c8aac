// The Backup controller's steps against the in-memory KubeApi: the hold handshake with the
// cluster controller, the file-copy Job, completion and release, ttl. The real thing (snapshots,
// `eventdb backup`, restores) runs on a kind cluster in test/operator/k8s/backup.test.ts.
import { OperatorMetrics, valueOf } from '../../runtime/metrics.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../runtime/clock.js';
import type { EventInput } from '../../runtime/events.js';
import { FakeKubeApi } from '../../runtime/fake-kube-api.js';
import { Informer } from '../../runtime/informer.js';
import { InformerSet } from '../../runtime/informer-set.js';
import type { KubeObject } from '../../runtime/kube-api.js';
import { BACKUPS, EVENTDB_CLUSTERS, JOBS, PODS, SECRETS } from '../../runtime/resource-types.js';
import { reconcileBackup, type BackupControllerDeps } from './reconcile-backup.js';

const log = pino({ level: 'silent' });
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};
const secret = (name: string, password: string): KubeObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'shop' }, data: { password: Buffer.from(password).toString('base64') } });

class Harness {
  readonly api = new FakeKubeApi();
  readonly clock = new ManualClock(Date.parse('2026-03-04T10:00:00Z'));
  readonly events: EventInput[] = [];
  readonly informers: Informer[] = [];
  deps!: BackupControllerDeps;

  async start(): Promise<void> {
    this.api.seed(EVENTDB_CLUSTERS, {
      apiVersion: 'eventdb.io/v1alpha1',
      kind: 'EventDBCluster',
      metadata: { name: 'orders', namespace: 'shop', uid: 'c-1' },
      spec: { replicas: 1 },
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: '2026-03-04T09:00:00Z' }],
        members: [{ pod: 'orders-0', role: 'Leader', alive: true, ready: true, writerCheckpoint: 500 }],
      },
    });
    this.api.seed(SECRETS, secret('orders-admin', 'admin-pw'));
    this.api.seed(SECRETS, secret('orders-ops', 'ops-pw'));
    this.api.seed(PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'orders-0', namespace: 'shop', labels: { 'eventdb.io/cluster': 'orders' } }, spec: { nodeName: 'node-a' } });
    const informer = (type: typeof BACKUPS): InformerSet => {
      const one = new Informer({ api: this.api, type, clock: this.clock, log, resyncPeriodMs: 0 });
      this.informers.push(one);
      return new InformerSet([one]);
    };
    const backups = informer(BACKUPS);
    const clusters = informer(EVENTDB_CLUSTERS);
    const pods = informer(PODS);
    for (const one of this.informers) one.start();
    await Promise.all(this.informers.map((one) => one.waitForSync()));
    this.deps = {
      api: this.api, backups, clusters, pods, clock: this.clock,
      events: { record: async (_object, event) => void this.events.push(event) },
      defaults: { nodeImage: 'eventdb:dev', dataSize: '1Gi' },
      enqueue: () => undefined,
      writtenStatus: new Map(),
      metrics: new OperatorMetrics(),
    };
  }

  async reconcile(name: string): Promise<{ requeueAfterMs?: number }> {
    await settle();
    const result = await reconcileBackup(this.deps, { key: `shop/${name}`, namespace: 'shop', name, log, reconcileId: 'r' });
    await settle();
    this.clock.advance(2000);
    return result;
  }

  backup(name: string): KubeObject | undefined {
    return this.api.objects(BACKUPS).find((object) => object.metadata.name === name);
  }

  hold(): string | undefined {
    return this.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.annotations?.['eventdb.io/backup-hold'];
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((one) => one.stop()));
  }
}

let harness: Harness;
afterEach(async () => harness?.stop());

const statusOf = (object: KubeObject | undefined): Record<string, unknown> => (object?.['status'] ?? {}) as Record<string, unknown>;

describe('reconcileBackup', () => {
  it('holds the cluster, copies only once the cluster took the backup as its operation, then completes and releases it for good', async () => {
    harness = new Harness();
    await harness.start();
    harness.api.seed(BACKUPS, { apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name: 'b1', namespace: 'shop', uid: 'b-1' }, spec: { cluster: { name: 'orders' }, method: 'FileCopy', fileCopy: { claimName: 'backups', differential: true } } });
    await harness.reconcile('b1');
    expect(statusOf(harness.backup('b1'))).toMatchObject({ phase: 'Running', sourcePod: 'orders-0', sourceRole: 'Leader', writerCheckpoint: 500, path: 'orders/2026-03-04T10:00:00Z' });
    expect(harness.hold()).toBe('b1/orders-0/Keep');
    expect(harness.api.objects(SECRETS).map((object) => object.metadata.name)).toContain('b1-credentials');
    expect(harness.api.objects(JOBS)).toEqual([]);
    // The cluster controller's answer: the backup is the cluster's operation.
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { status: { operation: { id: 'b1', kind: 'Backup', step: 'file copy', startedAt: '2026-03-04T10:00:00Z' } } }, { subresource: 'status' });
    await harness.reconcile('b1');
    expect(harness.api.objects(JOBS).map((object) => object.metadata.name)).toEqual(['b1-filecopy']);
    expect(JSON.stringify(harness.api.objects(JOBS)[0])).toContain('node-a');
    const running = structuredClone(harness.backup('b1'));
    await harness.api.patch(JOBS, 'shop', 'b1-filecopy', { status: { succeeded: 1 } }, { subresource: 'status' });
    await harness.reconcile('b1');
    expect(statusOf(harness.backup('b1'))).toMatchObject({ phase: 'Completed' });
    expect(harness.hold()).toBeUndefined();
    const metrics = harness.deps.metrics as OperatorMetrics;
    const completedAt = Date.parse(String(statusOf(harness.backup('b1'))['completedAt']));
    expect(await valueOf(metrics.backupLastSuccess, { namespace: 'shop', cluster: 'orders' })).toBe(completedAt / 1000);
    expect(await valueOf(metrics.backupLastFailure, { namespace: 'shop', cluster: 'orders' })).toBeUndefined();
    expect(await valueOf(metrics.backups, { namespace: 'shop', cluster: 'orders', result: 'Completed' })).toBe(1);
    expect((await metrics.render()).body).toMatch(/^eventdb_operator_backup_duration_seconds_count\{result="Completed"\} 1$/m);
    // A reconcile on a cache that has not seen the completion yet must not hold the cluster again.
    const lagging = { get: () => running, list: () => [running] } as unknown as InformerSet;
    await reconcileBackup({ ...harness.deps, backups: lagging }, { key: 'shop/b1', namespace: 'shop', name: 'b1', log, reconcileId: 'r' });
    await settle();
    expect(harness.hold()).toBeUndefined();
    expect(harness.events.map((event) => event.reason)).toEqual(['BackupPending', 'BackupStarted', 'FileCopyStarted', 'BackupCompleted']);
  });

  it('waits for a rolling update to finish before it takes the cluster', async () => {
    harness = new Harness();
    await harness.start();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { status: { operation: { id: 'x', kind: 'RollingUpdate', step: 'restart orders-0', startedAt: '' } } }, { subresource: 'status' });
    harness.api.seed(BACKUPS, { apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name: 'b1', namespace: 'shop', uid: 'b-1' }, spec: { cluster: { name: 'orders' }, method: 'VolumeSnapshot' } });
    await harness.reconcile('b1');
    expect(statusOf(harness.backup('b1'))).toMatchObject({ phase: 'Pending' });
    expect(harness.hold()).toBeUndefined();
  });

  it('ttl deletes an expired backup, but keeps the last completed one of the cluster', async () => {
    harness = new Harness();
    await harness.start();
    const completed = (name: string, completedAt: string): KubeObject => ({
      apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name, namespace: 'shop', uid: name },
      spec: { cluster: { name: 'orders' }, method: 'VolumeSnapshot', ttl: '1h' },
      status: { phase: 'Completed', completedAt, snapshots: [{ volume: 'data', name: `${name}-data`, readyToUse: true }] },
    });
    harness.api.seed(BACKUPS, completed('old', '2026-03-04T07:00:00Z'));
    harness.api.seed(BACKUPS, completed('new', '2026-03-04T08:00:00Z'));
    await harness.reconcile('old');
    await harness.reconcile('new');
    expect(harness.api.objects(BACKUPS).map((object) => object.metadata.name)).toEqual(['new']);
    const retained = (statusOf(harness.backup('new'))['conditions'] as { type: string; status: string }[]).find((condition) => condition.type === 'Retained');
    expect(retained?.status).toBe('True');
    expect(harness.events.map((event) => event.reason)).toEqual(['BackupExpired', 'RetainedAsLastGood']);
  });

  it('reports kstatus conditions: Pending and Running are Reconciling, Completed Ready, Failed Stalled; the status is not rewritten when nothing changed', async () => {
    harness = new Harness();
    await harness.start();
    const kstatus = (name: string): Record<string, string> =>
      Object.fromEntries(((statusOf(harness.backup(name))['conditions'] ?? []) as { type: string; status: string; reason: string }[])
        .filter((c) => ['Ready', 'Reconciling', 'Stalled'].includes(c.type)).map((c) => [c.type, `${c.status}/${c.reason}`]));
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { status: { operation: { id: 'x', kind: 'RollingUpdate', step: 'restart orders-0', startedAt: '' } } }, { subresource: 'status' });
    harness.api.seed(BACKUPS, { apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name: 'b1', namespace: 'shop', uid: 'b-1' }, spec: { cluster: { name: 'orders' }, method: 'FileCopy', fileCopy: { claimName: 'backups' } } });
    await harness.reconcile('b1');
    expect(kstatus('b1')).toMatchObject({ Ready: 'False/WaitingForOperation', Reconciling: 'True/WaitingForOperation', Stalled: 'False/NotStalled' });
    const writes = harness.api.objects(BACKUPS)[0]?.metadata.resourceVersion;
    await harness.reconcile('b1');
    await harness.reconcile('b1');
    expect(harness.api.objects(BACKUPS)[0]?.metadata.resourceVersion).toBe(writes);
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { status: { operation: null } }, { subresource: 'status' });
    await harness.reconcile('b1');
    expect(statusOf(harness.backup('b1'))).toMatchObject({ phase: 'Running' });
    expect(kstatus('b1')).toMatchObject({ Ready: 'False/WaitingForCluster', Reconciling: 'True/WaitingForCluster', Stalled: 'False/NotStalled' });
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { status: { operation: { id: 'b1', kind: 'Backup', step: 'file copy', startedAt: '2026-03-04T10:00:00Z' } } }, { subresource: 'status' });
    await harness.reconcile('b1');
    await harness.api.patch(JOBS, 'shop', 'b1-filecopy', { status: { conditions: [{ type: 'Failed', status: 'True' }] } }, { subresource: 'status' });
    await harness.reconcile('b1');
    expect(statusOf(harness.backup('b1'))).toMatchObject({ phase: 'Failed' });
    expect(kstatus('b1')).toEqual({ Ready: 'False/FileCopyFailed', Stalled: 'True/FileCopyFailed', Reconciling: 'False/Stalled' });
    harness.api.seed(BACKUPS, {
      apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name: 'b2', namespace: 'shop', uid: 'b-2' },
      spec: { cluster: { name: 'orders' }, method: 'VolumeSnapshot' },
      status: { phase: 'Completed', completedAt: '2026-03-04T09:00:00Z' },
    });
    await harness.reconcile('b2');
    expect(kstatus('b2')).toEqual({ Ready: 'True/Completed', Stalled: 'False/NotStalled', Reconciling: 'False/Reconciled' });
  });
});

// The BackupSchedule controller's steps against the in-memory KubeApi and a manual clock:
// Backups created on time, owned and labelled; one at a time; keep prunes through ttl 0s;
// status and kstatus conditions, written only when they change.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../runtime/clock.js';
import type { EventInput } from '../../runtime/events.js';
import { FakeKubeApi } from '../../runtime/fake-kube-api.js';
import { Informer } from '../../runtime/informer.js';
import { InformerSet } from '../../runtime/informer-set.js';
import type { KubeObject, ResourceType } from '../../runtime/kube-api.js';
import { BACKUP_SCHEDULES, BACKUPS, EVENTDB_CLUSTERS } from '../../runtime/resource-types.js';
import { reconcileBackupSchedule, type BackupScheduleControllerDeps } from './reconcile-backup-schedule.js';

const log = pino({ level: 'silent' });
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

interface Condition { type: string; status: string; reason: string }
interface Status { lastScheduleTime?: string; nextScheduleTime?: string; active?: { name: string }[]; lastSuccessfulBackup?: { name: string }; conditions?: Condition[] }

class Harness {
  readonly api = new FakeKubeApi();
  readonly clock = new ManualClock(Date.parse('2026-12-01T02:00:30Z'));
  readonly events: EventInput[] = [];
  readonly informers: Informer[] = [];
  statusWrites = 0;
  deps!: BackupScheduleControllerDeps;

  async start(spec: Record<string, unknown>, options: { cluster?: boolean } = {}): Promise<void> {
    if (options.cluster !== false) this.api.seed(EVENTDB_CLUSTERS, { apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name: 'orders', namespace: 'shop' }, spec: { replicas: 1 } });
    this.api.seed(BACKUP_SCHEDULES, {
      apiVersion: 'eventdb.io/v1alpha1',
      kind: 'BackupSchedule',
      metadata: { name: 'nightly', namespace: 'shop', uid: 's-1', creationTimestamp: '2026-11-01T00:00:00Z' },
      spec: { cluster: { name: 'orders' }, schedule: '0 2 * * *', backupTemplate: { method: 'VolumeSnapshot' }, ...spec },
    });
    const informer = (type: ResourceType): InformerSet => {
      const one = new Informer({ api: this.api, type, clock: this.clock, log, resyncPeriodMs: 0 });
      this.informers.push(one);
      return new InformerSet([one]);
    };
    const schedules = informer(BACKUP_SCHEDULES);
    const backups = informer(BACKUPS);
    const clusters = informer(EVENTDB_CLUSTERS);
    for (const one of this.informers) one.start();
    await Promise.all(this.informers.map((one) => one.waitForSync()));
    const apply = this.api.apply.bind(this.api);
    this.api.apply = async (type, object, applyOptions) => {
      if (applyOptions?.subresource === 'status') this.statusWrites++;
      return apply(type, object, applyOptions);
    };
    this.deps = { api: this.api, schedules, backups, clusters, clock: this.clock, events: { record: async (_object, event) => void this.events.push(event) }, writtenStatus: new Map() };
  }

  async reconcile(): Promise<{ requeueAfterMs?: number }> {
    await settle();
    const result = await reconcileBackupSchedule(this.deps, { key: 'shop/nightly', namespace: 'shop', name: 'nightly', log, reconcileId: 'r' });
    await settle();
    return result;
  }

  async backups(): Promise<KubeObject[]> {
    return (await this.api.list(BACKUPS, { namespace: 'shop' })).items.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  }

  async status(): Promise<Status> {
    return ((await this.api.get(BACKUP_SCHEDULES, 'shop', 'nightly'))?.['status'] ?? {}) as Status;
  }

  async finish(name: string, phase: 'Completed' | 'Failed' | 'Running', completedAt?: string): Promise<void> {
    await this.api.patch(BACKUPS, 'shop', name, { status: { phase, ...(completedAt === undefined ? {} : { completedAt }) } }, { subresource: 'status' });
  }

  stop(): void {
    for (const one of this.informers) void one.stop();
  }
}

const conditions = (status: Status): Record<string, string> => Object.fromEntries((status.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));

let harness: Harness;
afterEach(() => harness.stop());

describe('BackupSchedule controller', () => {
  it('creates the due Backup owned by and labelled with the schedule, with the template and ttl, once', async () => {
    harness = new Harness();
    await harness.start({ ttl: '720h', backupTemplate: { method: 'FileCopy', fileCopy: { claimName: 'orders-backups' } } });
    const result = await harness.reconcile();
    const [backup, ...more] = await harness.backups();
    expect(more).toEqual([]);
    expect(backup?.metadata.name).toBe('nightly-20261201-0200');
    expect(backup?.metadata.labels).toMatchObject({ 'eventdb.io/backup-schedule': 'nightly', 'eventdb.io/cluster': 'orders' });
    expect(backup?.metadata.ownerReferences).toEqual([{ apiVersion: 'eventdb.io/v1alpha1', kind: 'BackupSchedule', name: 'nightly', uid: 's-1', controller: true, blockOwnerDeletion: true }]);
    expect(backup?.['spec']).toEqual({ cluster: { name: 'orders' }, method: 'FileCopy', node: 'PreferFollower', fileCopy: { claimName: 'orders-backups' }, ttl: '720h' });
    expect(harness.events.map((event) => event.reason)).toEqual(['BackupCreated']);
    const status = await harness.status();
    expect(status).toMatchObject({ lastScheduleTime: '2026-12-01T02:00:00.000Z', nextScheduleTime: '2026-12-02T02:00:00.000Z', active: [{ name: 'nightly-20261201-0200' }] });
    expect(conditions(status)).toEqual({ Ready: 'True/Scheduled', Stalled: 'False/NotStalled', Reconciling: 'False/Reconciled' });
    // the next look comes at the next time (bounded)
    expect(result.requeueAfterMs).toBe(5 * 60_000);
    harness.clock.advance(60_000);
    await harness.reconcile();
    expect(await harness.backups()).toHaveLength(1);
  });

  it('writes the status only when it changed', async () => {
    harness = new Harness();
    await harness.start({});
    await harness.reconcile();
    const writes = harness.statusWrites;
    expect(writes).toBe(1);
    for (let i = 0; i < 5; i++) {
      harness.clock.advance(20_000);
      await harness.reconcile();
    }
    expect(harness.statusWrites).toBe(writes);
    await harness.finish('nightly-20261201-0200', 'Completed', '2026-12-01T02:03:00Z');
    await harness.reconcile();
    expect(harness.statusWrites).toBe(writes + 1);
    expect(await harness.status()).toMatchObject({ lastSuccessfulBackup: { name: 'nightly-20261201-0200', completedAt: '2026-12-01T02:03:00Z' } });
    expect((await harness.status()).active).toBeUndefined();
  });

  it('every minute with keep 2: exactly two Completed Backups stay, the older ones get ttl 0s', async () => {
    harness = new Harness();
    await harness.start({ schedule: '* * * * *', keep: 2 });
    for (let minute = 1; minute <= 5; minute++) {
      harness.clock.advance(60_000);
      await harness.reconcile();
      const newest = (await harness.backups()).map((b) => b.metadata.name ?? '').sort().at(-1) ?? '';
      await harness.finish(newest, 'Completed', new Date(harness.clock.nowMs()).toISOString());
      await harness.reconcile();
    }
    const backups = await harness.backups();
    const kept = backups.filter((b) => (b['spec'] as { ttl?: string }).ttl === undefined).map((b) => b.metadata.name);
    const pruned = backups.filter((b) => (b['spec'] as { ttl?: string }).ttl === '0s').map((b) => b.metadata.name);
    expect(kept).toEqual(['nightly-20261201-0204', 'nightly-20261201-0205']);
    expect(pruned).toEqual(['nightly-20261201-0201', 'nightly-20261201-0202', 'nightly-20261201-0203']);
    expect(pruned).toHaveLength(backups.length - 2);
    expect(harness.events.filter((event) => event.reason === 'BackupPruned')).toHaveLength(pruned.length);
  });

  it('never creates a second Backup while one of the schedule runs; skips past startingDeadline with an Event', async () => {
    harness = new Harness();
    await harness.start({ schedule: '*/10 * * * *', startingDeadline: '5m' });
    await harness.reconcile();
    await harness.finish('nightly-20261201-0200', 'Running');
    harness.clock.advance(10 * 60_000); // 02:10:30: due, the 02:00 one still runs
    await harness.reconcile();
    expect((await harness.backups()).map((b) => b.metadata.name)).toEqual(['nightly-20261201-0200']);
    expect(conditions(await harness.status())['Ready']).toBe('True/WaitingForActiveBackup');
    harness.clock.advance(5 * 60_000); // 02:15:30: past the deadline of 02:10
    await harness.reconcile();
    expect(harness.events.map((event) => event.reason)).toEqual(['BackupCreated', 'BackupSkipped']);
    await harness.finish('nightly-20261201-0200', 'Completed', '2026-12-01T02:16:00Z');
    harness.clock.advance(60_000);
    await harness.reconcile();
    expect(await harness.backups()).toHaveLength(1);
    harness.clock.advance(4 * 60_000); // 02:20:30
    await harness.reconcile();
    expect((await harness.backups()).map((b) => b.metadata.name)).toEqual(['nightly-20261201-0200', 'nightly-20261201-0220']);
  });

  it('suspend: no Backup, no next time; a failed last backup makes Ready False but not Stalled', async () => {
    harness = new Harness();
    await harness.start({ suspend: true });
    await harness.reconcile();
    expect(await harness.backups()).toEqual([]);
    const status = await harness.status();
    expect(status.nextScheduleTime).toBeUndefined();
    expect(conditions(status)['Ready']).toBe('True/Suspended');
    await harness.api.patch(BACKUP_SCHEDULES, 'shop', 'nightly', { spec: { suspend: false } });
    await harness.reconcile();
    await harness.finish('nightly-20261201-0200', 'Failed', '2026-12-01T02:01:00Z');
    await harness.reconcile();
    expect(conditions(await harness.status())).toEqual({ Ready: 'False/LastBackupFailed', Stalled: 'False/NotStalled', Reconciling: 'False/Reconciled' });
  });

  it('an invalid schedule is Stalled (nothing created); a missing cluster is Reconciling', async () => {
    harness = new Harness();
    await harness.start({ schedule: '61 * * * *' });
    expect(await harness.reconcile()).toEqual({});
    expect(await harness.backups()).toEqual([]);
    expect(conditions(await harness.status())).toEqual({ Ready: 'False/InvalidSpec', Stalled: 'True/InvalidSpec', Reconciling: 'False/Stalled' });
    expect(harness.events.map((event) => event.reason)).toEqual(['InvalidSpec']);
    harness.stop();
    harness = new Harness();
    await harness.start({}, { cluster: false });
    await harness.reconcile();
    expect(await harness.backups()).toEqual([]);
    expect(conditions(await harness.status())).toEqual({ Ready: 'False/ClusterNotFound', Stalled: 'False/NotStalled', Reconciling: 'True/ClusterNotFound' });
  });
});

// The Backup controller's pure decisions: the source node, the base of a differential copy,
// when the cluster may be held, and what ttl deletes.
import { describe, expect, it } from 'vitest';
import type { EventDBClusterStatus } from '../../api/eventdb-cluster.js';
import { chooseSource, clusterAvailability, lastBackupTimes, lastGoodBackup, previousFileCopy, retention, type BackupView } from './backup-plan.js';

const members = [
  { pod: 'orders-0', role: 'Follower', alive: true, ready: true, writerCheckpoint: 90 },
  { pod: 'orders-1', role: 'Leader', alive: true, ready: true, writerCheckpoint: 100 },
  { pod: 'orders-2', role: 'Follower', alive: true, ready: true, writerCheckpoint: 100 },
];

describe('chooseSource', () => {
  it('PreferFollower takes the most caught-up follower', () => {
    expect(chooseSource(members, 'PreferFollower')).toEqual({ ok: true, pod: 'orders-2', role: 'Follower', writerCheckpoint: 100 });
  });

  it('PreferFollower keeps the pod of the earlier backup among equally caught-up followers, never a lagging one', () => {
    const even = members.map((member) => ({ ...member, writerCheckpoint: 100 }));
    expect(chooseSource(even, 'PreferFollower', 'orders-0')).toMatchObject({ pod: 'orders-0' });
    expect(chooseSource(members, 'PreferFollower', 'orders-0')).toMatchObject({ pod: 'orders-2' });
  });

  it('PreferFollower skips followers that are down or not ready, and falls back to the leader (one-node clusters)', () => {
    const down = members.map((member) => (member.role === 'Follower' ? { ...member, alive: member.pod === 'orders-0', ready: false } : member));
    expect(chooseSource(down, 'PreferFollower')).toMatchObject({ pod: 'orders-1', role: 'Leader' });
    expect(chooseSource([{ pod: 'orders-0', role: 'Leader', alive: true, ready: true }], 'PreferFollower')).toMatchObject({ ok: true, pod: 'orders-0' });
    expect(chooseSource([], 'PreferFollower')).toMatchObject({ ok: false, reason: 'NoSourceNode' });
  });

  it('Leader and a pod name', () => {
    expect(chooseSource(members, 'Leader')).toMatchObject({ pod: 'orders-1' });
    expect(chooseSource(members, 'orders-0')).toMatchObject({ pod: 'orders-0', writerCheckpoint: 90 });
    expect(chooseSource(members, 'orders-7')).toMatchObject({ ok: false, reason: 'SourceNodeNotFound' });
    expect(chooseSource([{ ...members[0]!, alive: false }], 'orders-0')).toMatchObject({ ok: false, reason: 'SourceNodeNotReady' });
  });
});

const at = (iso: string): number => Date.parse(iso);

function backup(name: string, extra: Partial<BackupView>): BackupView {
  return { name, cluster: 'orders', method: 'VolumeSnapshot', phase: 'Completed', ...extra };
}

describe('retention', () => {
  const old = backup('b1', { completedAt: '2026-03-01T00:00:00Z', ttl: '24h' });
  const newer = backup('b2', { completedAt: '2026-03-02T00:00:00Z', ttl: '24h' });
  const failed = backup('b3', { phase: 'Failed', creationTimestamp: '2026-03-02T12:00:00Z', ttl: '1h' });
  const all = [old, newer, failed];

  it('keeps a backup until its ttl from completion has passed', () => {
    expect(retention(old, all, at('2026-03-01T12:00:00Z'))).toEqual({ kind: 'keep-until', atMs: at('2026-03-02T00:00:00Z') });
    expect(retention(backup('x', {}), all, at('2030-01-01T00:00:00Z'))).toEqual({ kind: 'keep' });
    expect(retention(backup('r', { phase: 'Running', ttl: '1s' }), all, at('2030-01-01T00:00:00Z'))).toEqual({ kind: 'keep' });
  });

  it('deletes an expired backup, but never the last completed one of the cluster', () => {
    const now = at('2026-03-05T00:00:00Z');
    expect(retention(old, all, now)).toMatchObject({ kind: 'delete' });
    expect(retention(newer, all, now)).toMatchObject({ kind: 'keep-last-good' });
    expect(retention(failed, all, now)).toMatchObject({ kind: 'delete' });
    // another cluster's backups do not count
    expect(retention(newer, [...all, backup('z', { cluster: 'other', completedAt: '2026-03-04T00:00:00Z' })], now)).toMatchObject({ kind: 'keep-last-good' });
    expect(lastGoodBackup(all, 'orders')).toBe('b2');
    expect(lastGoodBackup([failed], 'orders')).toBeUndefined();
  });
});

describe('previousFileCopy', () => {
  it('is the newest completed file copy of the cluster into the same claim', () => {
    const list = [
      backup('f1', { method: 'FileCopy', claimName: 'backups', path: 'orders/1', completedAt: '2026-03-01T00:00:00Z' }),
      backup('f2', { method: 'FileCopy', claimName: 'backups', path: 'orders/2', completedAt: '2026-03-02T00:00:00Z' }),
      backup('f3', { method: 'FileCopy', claimName: 'other', path: 'orders/3', completedAt: '2026-03-03T00:00:00Z' }),
      backup('f4', { method: 'FileCopy', claimName: 'backups', path: 'orders/4', phase: 'Failed' }),
      backup('s1', { completedAt: '2026-03-04T00:00:00Z' }),
    ];
    expect(previousFileCopy(list, 'orders', 'backups')?.name).toBe('f2');
    expect(previousFileCopy(list, 'orders', 'none')).toBeUndefined();
  });
});

describe('clusterAvailability', () => {
  const ready: EventDBClusterStatus = { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: '2026-03-01T00:00:00Z' }] };

  it('waits for a rolling update, another backup, or a cluster that is not Ready', () => {
    expect(clusterAvailability(ready, undefined, 'b1')).toEqual({ ok: true });
    expect(clusterAvailability({ ...ready, operation: { id: 'x', kind: 'RollingUpdate', step: 'restart orders-2', startedAt: '' } }, undefined, 'b1')).toMatchObject({ ok: false, reason: 'WaitingForOperation' });
    expect(clusterAvailability(ready, 'b0', 'b1')).toMatchObject({ ok: false, reason: 'WaitingForOtherBackup' });
    expect(clusterAvailability({ conditions: [{ ...ready.conditions![0]!, status: 'False', reason: 'NodesNotReady' }] }, undefined, 'b1')).toMatchObject({ ok: false, reason: 'WaitingForCluster' });
  });

  it('does not wait for a certificate rotation while every node is ready (the hold takes the operation from it)', () => {
    const rotating: EventDBClusterStatus = {
      replicas: 3, readyReplicas: 3,
      conditions: [{ ...ready.conditions![0]!, status: 'False', reason: 'CertificateReload' }],
      operation: { id: 'certificates-ab', kind: 'CertificateReload', step: 'reload certificates: 2 of 3 verified', startedAt: '' },
    };
    expect(clusterAvailability(rotating, undefined, 'b1', 3)).toEqual({ ok: true });
    expect(clusterAvailability(rotating, 'b1', 'b1', 3)).toEqual({ ok: true });
    expect(clusterAvailability({ ...rotating, readyReplicas: 2 }, undefined, 'b1', 3)).toMatchObject({ ok: false, reason: 'WaitingForCluster' });
  });

  it('lets the backup holding the cluster go on while its node is stopped', () => {
    const held: EventDBClusterStatus = { conditions: [{ ...ready.conditions![0]!, status: 'False', reason: 'Backup' }], operation: { id: 'b1', kind: 'Backup', step: 'stop', startedAt: '' } };
    expect(clusterAvailability(held, 'b1', 'b1')).toEqual({ ok: true });
    expect(clusterAvailability(held, undefined, 'b2')).toMatchObject({ ok: false, reason: 'WaitingForOperation' });
  });
});

describe('lastBackupTimes', () => {
  it('takes the latest completed and failed backup of the cluster only', () => {
    const views = [
      { name: 'a', cluster: 'orders', method: 'FileCopy' as const, phase: 'Completed', completedAt: '2026-01-01T00:00:00Z' },
      { name: 'b', cluster: 'orders', method: 'FileCopy' as const, phase: 'Completed', completedAt: '2026-01-02T00:00:00Z' },
      { name: 'c', cluster: 'orders', method: 'FileCopy' as const, phase: 'Failed', completedAt: '2026-01-03T00:00:00Z' },
      { name: 'd', cluster: 'orders', method: 'FileCopy' as const, phase: 'Running' },
      { name: 'e', cluster: 'other', method: 'FileCopy' as const, phase: 'Completed', completedAt: '2026-02-01T00:00:00Z' },
    ];
    expect(lastBackupTimes(views, 'orders')).toEqual({ lastSuccessMs: Date.parse('2026-01-02T00:00:00Z'), lastFailureMs: Date.parse('2026-01-03T00:00:00Z') });
    expect(lastBackupTimes(views, 'none')).toEqual({});
  });
});

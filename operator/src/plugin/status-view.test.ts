import { describe, expect, it } from 'vitest';
import { renderStatus } from './render.js';
import { buildStatusView, lagSecondsOf, newestEventOf, replicaReports, type LiveMember, type NewestEvent, type ObjectLike } from './status-view.js';

const NOW = Date.parse('2026-12-02T02:00:00Z');

function pod(name: string, role: string, restarts = 0, ready = true): ObjectLike {
  return {
    metadata: { name, labels: { 'eventdb.io/cluster': 'orders', 'eventdb.io/role': role } },
    spec: { containers: [{ name: 'eventdb', image: 'eventdb:0.2.0' }] },
    status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }], containerStatuses: [{ name: 'eventdb', restartCount: restarts }] },
  };
}

const cluster: ObjectLike = {
  metadata: { name: 'orders', namespace: 'shop' },
  spec: { replicas: 3 },
  status: {
    phase: 'Ready',
    replicas: 3,
    readyReplicas: 3,
    leader: 'orders-1',
    image: 'eventdb:0.2.0',
    membersObservedAt: '2026-12-02T01:59:50Z',
    members: [
      { pod: 'orders-0', role: 'Follower', alive: true, writerCheckpoint: 900, chaserCheckpoint: 900, epochNumber: 3 },
      { pod: 'orders-1', role: 'Leader', alive: true, writerCheckpoint: 1000, chaserCheckpoint: 1000, epochNumber: 3 },
      { pod: 'orders-2', role: 'Follower', alive: true, writerCheckpoint: 950, chaserCheckpoint: 950, epochNumber: 3 },
    ],
    certificates: { notAfter: '2027-12-01T00:00:00Z', reloadedAt: '2026-12-01T00:00:00Z' },
    operation: { id: 'op1', kind: 'Backup', step: 'snapshot data of orders-0', startedAt: '2026-12-02T01:58:00Z' },
    conditions: [
      { type: 'Ready', status: 'True', reason: 'AllNodesReady', message: '3 of 3 ready' },
      { type: 'Degraded', status: 'False', reason: 'AllNodesHealthy', message: '' },
    ],
  },
};

const input = {
  cluster,
  pods: [pod('orders-1', 'leader'), pod('orders-0', 'follower', 2), pod('orders-2', 'follower')],
  claims: [{ metadata: { name: 'data-orders-0' }, status: { phase: 'Bound', capacity: { storage: '256Mi' } } }],
  backups: [
    { metadata: { name: 'b1', creationTimestamp: '2026-12-01T00:00:00Z' }, spec: { cluster: { name: 'orders' }, method: 'VolumeSnapshot' }, status: { phase: 'Completed', completedAt: '2026-12-01T00:05:00Z', writerCheckpoint: 800 } },
    { metadata: { name: 'other' }, spec: { cluster: { name: 'payments' } }, status: { phase: 'Completed', completedAt: '2026-12-02T00:00:00Z' } },
  ],
  schedules: [{ metadata: { name: 'weekly' }, spec: { cluster: { name: 'orders' } }, status: { state: 'Waiting', nextScheduleTime: '2026-12-06T03:00:00Z', history: [{ id: 'c1', startedAt: '2026-11-29T03:00:00Z', finishedAt: '2026-11-29T03:10:00Z', result: 'Success' }] } }],
  events: [
    { metadata: { name: 'e1' }, type: 'Warning', reason: 'NodeRecreated', note: 'orders-0 was deleted by someone else', regarding: { kind: 'EventDBCluster', name: 'orders' }, deprecatedLastTimestamp: '2026-12-02T01:50:00Z' },
    { metadata: { name: 'e2' }, type: 'Normal', reason: 'Created', note: 'fine', regarding: { kind: 'EventDBCluster', name: 'orders' } },
  ],
  nowMs: NOW,
};

describe('the status view', () => {
  it('lists every node in order with its role, checkpoints and lag behind the leader', () => {
    const view = buildStatusView({ ...input, live: undefined });
    expect(view.nodes.map((node) => [node.pod, node.role, node.lagBytes, node.restarts, node.source])).toEqual([
      ['orders-0', 'Follower', 100, 2, 'status'],
      ['orders-1', 'Leader', 0, 0, 'status'],
      ['orders-2', 'Follower', 50, 0, 'status'],
    ]);
    expect(view.nodes[0]?.storage).toBe('data 256Mi Bound');
    expect(view.backups.lastCompleted).toMatchObject({ name: 'b1', writerCheckpoint: 800 });
    expect(view.backups.total).toBe(1);
    expect(view.scavenges).toEqual([{ schedule: 'weekly', state: 'Waiting', next: '2026-12-06T03:00:00Z', last: { result: 'Success', finishedAt: '2026-11-29T03:10:00Z' } }]);
    expect(view.warnings).toEqual([{ at: '2026-12-02T01:50:00Z', reason: 'NodeRecreated', object: 'EventDBCluster/orders', message: 'orders-0 was deleted by someone else', count: 1 }]);
    expect(view.certificates.daysLeft).toBe(363);
    expect(view.healthy).toBe(true);
  });

  it('prefers each node\'s own live gossip over status.members, and says which it used', () => {
    const live = new Map<string, LiveMember>([
      ['orders-0', { pod: 'orders-0', role: 'Leader', alive: true, writerCheckpoint: 2000, epochNumber: 4, instanceId: 'i0' }],
      ['orders-1', { pod: 'orders-1', role: 'Follower', alive: true, writerCheckpoint: 1500, epochNumber: 4, instanceId: 'i1' }],
      ['orders-2', { pod: 'orders-2', role: 'Unreachable', alive: false }],
    ]);
    const replicas = replicaReports({ replication: { state: 'Leader', replicas: { i1: { lagBytes: 480, caughtUp: false, ackedPosition: 1520 }, i9: { lagBytes: 'x' } } } });
    expect(replicas).toEqual([{ instanceId: 'i1', lagBytes: 480, caughtUp: false }]);
    const view = buildStatusView({ ...input, live, replicas });
    expect(view.nodes.map((node) => [node.pod, node.role, node.epoch, node.lagBytes, node.ackedLagBytes, node.caughtUp, node.source])).toEqual([
      ['orders-0', 'Leader', 4, 0, 0, true, 'live'],
      ['orders-1', 'Follower', 4, 500, 480, false, 'live'],
      ['orders-2', 'Follower', 3, 1050, undefined, undefined, 'status'],
    ]);
    expect(replicaReports(undefined)).toEqual([]);
  });

  it('renders plain aligned text without colour, and ANSI colour on a terminal', () => {
    const view = buildStatusView({ ...input, live: undefined });
    const plain = renderStatus(view, { colour: false, nowMs: NOW });
    expect(plain).not.toContain('\u001b[');
    expect(plain).toContain('Phase      Ready');
    const header = plain.split('\n').find((line) => line.startsWith('POD'));
    expect(header).toMatch(/^POD\s+ROLE\s+READY\s+EPOCH\s+WRITER\s+CHASER\s+LAG\s+LAG-S\s+UNACKED\s+CAUGHT-UP\s+RESTARTS\s+IMAGE\s+STORAGE\s+SOURCE$/);
    expect(plain).toMatch(/orders-0\s+Follower\s+true\s+3\s+900\s+900\s+100 B\s+-\s+-\s+-\s+2\s+eventdb:0.2.0\s+data 256Mi Bound\s+status/);
    expect(plain).toContain('Operation     Backup: snapshot data of orders-0, since 2026-12-02T01:58:00Z (2m0s ago)');
    expect(plain).toContain('last completed b1 (VolumeSnapshot, writer 800)');
    expect(plain).toContain('weekly: Waiting; last Success');
    expect(plain).toMatch(/10m0s\s+NodeRecreated\s+EventDBCluster\/orders\s+1\s+orders-0 was deleted/);
    expect(plain).toContain('Verdict: healthy');
    const coloured = renderStatus(view, { colour: true, nowMs: NOW });
    expect(coloured).toContain('\u001b[32mReady\u001b[39m');
  });

  it('gives a bad verdict with the reasons when a node is not ready or the phase is not Ready', () => {
    const degraded = { ...cluster, status: { ...(cluster['status'] as object), phase: 'Degraded' } };
    const view = buildStatusView({ ...input, cluster: degraded, pods: [pod('orders-0', 'follower'), pod('orders-1', 'leader'), pod('orders-2', 'follower', 0, false)], live: undefined });
    expect(view.healthy).toBe(false);
    expect(renderStatus(view, { colour: false, nowMs: NOW })).toContain('Verdict: NOT healthy (phase Degraded; orders-2 not ready)');
  });

  it('gives each follower its lag in seconds from the nodes\' own newest events: the leader\'s newest minus the follower\'s', () => {
    const heads = new Map<string, NewestEvent>([
      ['orders-1', { event: '41@orders-7', createdMs: NOW - 200 }],
      ['orders-0', { event: '17@orders-3', createdMs: NOW - 2_950 }],
      ['orders-2', { event: '41@orders-7', createdMs: NOW - 200 }],
    ]);
    const view = buildStatusView({ ...input, live: undefined, newestEvents: heads });
    expect(view.nodes.map((node) => [node.pod, node.lagSeconds])).toEqual([
      ['orders-0', 2.75],
      ['orders-1', 0],
      ['orders-2', 0],
    ]);
    const plain = renderStatus(view, { colour: false, nowMs: NOW });
    expect(plain).toMatch(/orders-0\s+Follower\s+true\s+3\s+900\s+900\s+100 B\s+2\.750s\s/);
    expect(plain).toMatch(/orders-2\s+Follower\s+true\s+3\s+950\s+950\s+50 B\s+0s\s/);
    // a node that gave no head has no lag in seconds, rather than a guess
    const partial = buildStatusView({ ...input, live: undefined, newestEvents: new Map([['orders-1', { event: '41@orders-7', createdMs: NOW }]]) });
    expect(partial.nodes.map((node) => node.lagSeconds)).toEqual([undefined, 0, undefined]);
  });

  it('counts no lag in seconds for a node at or past the leader\'s writer checkpoint, and reads the head of a $all feed', () => {
    expect(lagSecondsOf({ event: '9@a', createdMs: 5000 }, { event: '8@a', createdMs: 1000 }, 100, 100)).toBe(0);
    expect(lagSecondsOf({ event: '9@a', createdMs: 5000 }, { event: '8@a', createdMs: 1000 }, 100, 90)).toBe(4);
    expect(lagSecondsOf({ event: '9@a', createdMs: 5000 }, undefined, 100, 90)).toBeUndefined();
    expect(lagSecondsOf({ event: '9@a', createdMs: 1000 }, { event: '8@a', createdMs: 5000 }, 100, 90)).toBe(0);
    expect(newestEventOf({ entries: [{ title: '3@orders-1', updated: '2026-12-02T01:59:59.5Z' }] })).toEqual({ event: '3@orders-1', createdMs: NOW - 500 });
    expect(newestEventOf({ entries: [] })).toBeUndefined();
    expect(newestEventOf({ entries: [{ title: '3@x', updated: 'yesterday' }] })).toBeUndefined();
    expect(newestEventOf('nonsense')).toBeUndefined();
  });
});

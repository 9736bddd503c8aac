// The switchover planner: refusals, the window gate, resign until the named node leads, bounded.
import { describe, expect, it } from 'vitest';
import type { OperationStatus } from '../../api/eventdb-cluster.js';
import type { ObservedMember, PodView } from './observe.js';
import { MAX_RESIGNS, planSwitchover, RESIGN_SETTLE_MS, SWITCHOVER_TIMEOUT_MS, type SwitchoverInput } from './switchover-plan.js';

const T0 = Date.parse('2026-03-04T10:00:00Z');

function pod(name: string, kind: PodView['kind'] = 'quorum', ready = true): PodView {
  return { name, kind, ordinal: Number(name.split('-').pop()), uid: `uid-${name}`, revision: 'r', clusterSize: 3, ready, terminating: false, ip: '10.0.0.1', image: 'eventdb:dev', roleLabel: undefined, phase: 'Running', servesTls: false, object: { apiVersion: 'v1', kind: 'Pod', metadata: { name } } };
}

function members(leader: string | undefined, names: string[]): Map<string, ObservedMember> {
  return new Map(names.map((name) => [name, { pod: name, role: name === leader ? 'Leader' : 'Follower', alive: true, writerCheckpoint: 100 }]));
}

function input(overrides: Partial<SwitchoverInput> = {}): SwitchoverInput {
  const names = ['orders-0', 'orders-1', 'orders-2'];
  return {
    requested: 'orders-2',
    now: false,
    windowOpen: true,
    operation: undefined,
    pods: [...names.map((name) => pod(name)), pod('orders-replica-0', 'read-only-replica')],
    members: members('orders-0', names),
    leader: 'orders-0',
    nowMs: T0,
    ...overrides,
  };
}

describe('planSwitchover', () => {
  it('does nothing without the annotation', () => {
    expect(planSwitchover(input({ requested: undefined }))).toEqual({ kind: 'none' });
  });

  it('refuses a pod that does not exist, a read-only replica and a node that is not ready', () => {
    expect(planSwitchover(input({ requested: 'orders-7' }))).toMatchObject({ kind: 'refuse', reason: 'SwitchoverTargetNotFound' });
    expect(planSwitchover(input({ requested: 'orders-replica-0' }))).toMatchObject({ kind: 'refuse', reason: 'SwitchoverTargetNotVoting' });
    const pods = [pod('orders-0'), pod('orders-1'), pod('orders-2', 'quorum', false)];
    expect(planSwitchover(input({ pods }))).toMatchObject({ kind: 'refuse', reason: 'SwitchoverTargetNotReady' });
  });

  it('completes at once, changing nothing, when the named node leads already', () => {
    expect(planSwitchover(input({ requested: 'orders-0' }))).toMatchObject({ kind: 'complete' });
  });

  it('waits for a maintenance window unless switchover-now, and for another operation', () => {
    expect(planSwitchover(input({ windowOpen: false, windowOpensAtMs: T0 + 3600_000 }))).toMatchObject({ kind: 'wait', reason: 'SwitchoverWaitingForMaintenanceWindow' });
    expect(planSwitchover(input({ windowOpen: false, now: true }))).toMatchObject({ kind: 'resign', leader: 'orders-0' });
    const rolling: OperationStatus = { id: 'op', kind: 'RollingUpdate', step: 'restart orders-1', startedAt: new Date(T0).toISOString() };
    expect(planSwitchover(input({ operation: rolling }))).toMatchObject({ kind: 'wait', reason: 'SwitchoverWaitingForOperation' });
  });

  it('asks the leader to resign, waits for the election, resigns a wrong winner, and completes when the target leads', () => {
    const first = planSwitchover(input());
    expect(first).toMatchObject({ kind: 'resign', leader: 'orders-0', target: 'orders-2', started: true, operation: { kind: 'Switchover', pod: 'orders-2', previousLeader: 'orders-0', completed: ['orders-0'] } });
    if (first.kind !== 'resign') throw new Error('expected resign');
    const names = ['orders-0', 'orders-1', 'orders-2'];
    // the old leader still leads a moment after the resign; then nobody leads
    expect(planSwitchover(input({ operation: first.operation, nowMs: T0 + 1000 })).kind).toBe('await-election');
    expect(planSwitchover(input({ operation: first.operation, leader: undefined, members: members(undefined, names), nowMs: T0 + 2000 })).kind).toBe('await-election');
    // orders-1 won (its log was ahead): it resigns in turn
    const second = planSwitchover(input({ operation: first.operation, leader: 'orders-1', members: members('orders-1', names), nowMs: T0 + 4000 }));
    expect(second).toMatchObject({ kind: 'resign', leader: 'orders-1', started: false, operation: { previousLeader: 'orders-1', completed: ['orders-0', 'orders-1'] } });
    if (second.kind !== 'resign') throw new Error('expected resign');
    const done = planSwitchover(input({ operation: second.operation, leader: 'orders-2', members: members('orders-2', names), nowMs: T0 + 8000 }));
    expect(done).toMatchObject({ kind: 'complete', operation: { id: first.operation.id } });
    if (done.kind === 'complete') expect(done.message).toBe('switchover to orders-2 completed in 8.0 s (resigned: orders-0, orders-1)');
  });

  it('resigns a leader that did not step down once the settle time passed', () => {
    const first = planSwitchover(input());
    if (first.kind !== 'resign') throw new Error('expected resign');
    expect(planSwitchover(input({ operation: first.operation, nowMs: T0 + RESIGN_SETTLE_MS + 1 }))).toMatchObject({ kind: 'resign', leader: 'orders-0', operation: { completed: ['orders-0', 'orders-0'] } });
  });

  it('gives up after MAX_RESIGNS resigns, after the timeout, or when the target goes away', () => {
    const names = ['orders-0', 'orders-1', 'orders-2'];
    const operation: OperationStatus = { id: 's', kind: 'Switchover', step: '', startedAt: new Date(T0).toISOString(), pod: 'orders-2', previousLeader: 'orders-1', stepStartedAt: new Date(T0).toISOString(), completed: Array.from({ length: MAX_RESIGNS }, () => 'orders-1') };
    expect(planSwitchover(input({ operation, leader: 'orders-0', members: members('orders-0', names), nowMs: T0 + 5000 }))).toMatchObject({ kind: 'fail', reason: 'SwitchoverNotElected' });
    expect(planSwitchover(input({ operation: { ...operation, completed: ['orders-0'] }, nowMs: T0 + SWITCHOVER_TIMEOUT_MS + 1 }))).toMatchObject({ kind: 'fail', reason: 'SwitchoverTimedOut' });
    const gone = input({ operation: { ...operation, completed: ['orders-0'] }, pods: [pod('orders-0'), pod('orders-1')], nowMs: T0 + 5000 });
    expect(planSwitchover(gone)).toMatchObject({ kind: 'fail', reason: 'SwitchoverTargetNotFound' });
  });

  it('ends the operation when the annotation is removed while it runs', () => {
    const first = planSwitchover(input());
    if (first.kind !== 'resign') throw new Error('expected resign');
    expect(planSwitchover(input({ requested: undefined, operation: first.operation }))).toMatchObject({ kind: 'cancel' });
  });
});

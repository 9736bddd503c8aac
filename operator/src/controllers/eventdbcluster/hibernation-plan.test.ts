// Hibernation order: replicas and followers first, the leader last with a resign, then Hibernated.
import { describe, expect, it } from 'vitest';
import type { PodView } from './observe.js';
import { planHibernation } from './hibernation-plan.js';

function pod(name: string, options: { kind?: PodView['kind']; terminating?: boolean; role?: string } = {}): PodView {
  return {
    name, kind: options.kind ?? 'quorum', ordinal: Number(name.split('-').pop()), uid: `uid-${name}`, revision: 'r', clusterSize: 3, ready: true,
    terminating: options.terminating ?? false, ip: '10.0.0.1', image: 'eventdb:dev', roleLabel: options.role, phase: 'Running', servesTls: false,
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name } },
  };
}

const names = (step: ReturnType<typeof planHibernation>): string[] => (step.kind === 'stop' ? step.pods.map((entry) => entry.name) : []);

describe('planHibernation', () => {
  it('stops the followers and read-only replicas first, never the leader with them', () => {
    const step = planHibernation([pod('orders-0'), pod('orders-1'), pod('orders-2'), pod('orders-replica-0', { kind: 'read-only-replica' })], 'orders-1');
    expect(names(step)).toEqual(['orders-0', 'orders-2', 'orders-replica-0']);
  });

  it('waits while they stop, then resigns and stops the leader, then is Hibernated', () => {
    expect(planHibernation([pod('orders-0', { terminating: true }), pod('orders-1')], 'orders-1')).toEqual({ kind: 'wait', stopping: ['orders-0'] });
    expect(planHibernation([pod('orders-1')], 'orders-1')).toMatchObject({ kind: 'stop-last', pod: { name: 'orders-1' }, resign: true });
    expect(planHibernation([pod('orders-1', { terminating: true })], undefined)).toEqual({ kind: 'wait', stopping: ['orders-1'] });
    expect(planHibernation([], undefined)).toEqual({ kind: 'hibernated' });
  });

  it('keeps the pod labelled leader for last when gossip shows no leader (its followers are gone: no quorum)', () => {
    expect(planHibernation([pod('orders-0'), pod('orders-2', { role: 'leader' })], undefined)).toMatchObject({ kind: 'stop', pods: [{ name: 'orders-0' }] });
    expect(planHibernation([pod('orders-2', { role: 'leader' })], undefined)).toMatchObject({ kind: 'stop-last', pod: { name: 'orders-2' }, resign: false });
  });
});

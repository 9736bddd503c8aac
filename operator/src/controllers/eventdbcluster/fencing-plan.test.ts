// Fencing: the annotation's list, "*", and the quorum guard with its force override.
import { describe, expect, it } from 'vitest';
import type { PodView } from './observe.js';
import { parseFenced, planFencing } from './fencing-plan.js';

function pod(name: string, kind: PodView['kind'] = 'quorum', terminating = false): PodView {
  return { name, kind, ordinal: Number(name.split('-').pop()), uid: `uid-${name}`, revision: 'r', clusterSize: 3, ready: true, terminating, ip: '10.0.0.1', image: 'eventdb:dev', roleLabel: undefined, phase: 'Running', servesTls: false, object: { apiVersion: 'v1', kind: 'Pod', metadata: { name } } };
}
const cluster = { name: 'orders', replicas: 3, readOnlyReplicas: 1 };
const pods = [pod('orders-0'), pod('orders-1'), pod('orders-2'), pod('orders-replica-0', 'read-only-replica')];

describe('parseFenced', () => {
  it('reads a list of the cluster\'s pods, and * as every pod', () => {
    expect(parseFenced(undefined, cluster, pods)).toEqual({ ok: true, pods: [] });
    expect(parseFenced('["orders-1", "orders-1"]', cluster, pods)).toEqual({ ok: true, pods: ['orders-1'] });
    expect(parseFenced('["*"]', cluster, pods)).toEqual({ ok: true, pods: ['orders-0', 'orders-1', 'orders-2', 'orders-replica-0'] });
  });

  it('refuses what is not a JSON array of names, and pods of another cluster', () => {
    expect(parseFenced('orders-1', cluster, pods)).toMatchObject({ ok: false });
    expect(parseFenced('{"pod":"orders-1"}', cluster, pods)).toMatchObject({ ok: false });
    expect(parseFenced('["payments-0"]', cluster, pods)).toEqual({ ok: false, message: 'eventdb.io/fenced names pods that are not this cluster\'s: payments-0' });
  });
});

describe('planFencing', () => {
  it('fences a follower of three: it is stopped, the others keep a quorum', () => {
    const decision = planFencing({ list: parseFenced('["orders-1"]', cluster, pods), force: false, pods, clusterSize: 3 });
    expect(decision).toMatchObject({ kind: 'fence', fenced: ['orders-1'], stop: [{ name: 'orders-1' }] });
  });

  it('refuses fencing below quorum unless forced; a stopped fenced pod is not stopped again', () => {
    expect(planFencing({ list: parseFenced('["orders-0","orders-1"]', cluster, pods), force: false, pods, clusterSize: 3 })).toMatchObject({ kind: 'refuse', reason: 'FencingBelowQuorum', keep: [] });
    // orders-1 was fenced (stopped) before; adding orders-0 is refused, orders-1 stays fenced
    const two = [pod('orders-0'), pod('orders-2')];
    expect(planFencing({ list: parseFenced('["orders-0","orders-1"]', cluster, two), force: false, pods: two, clusterSize: 3 })).toMatchObject({ kind: 'refuse', keep: ['orders-1'] });
    expect(planFencing({ list: parseFenced('["*"]', cluster, pods), force: false, pods, clusterSize: 3 })).toMatchObject({ kind: 'refuse', reason: 'FencingBelowQuorum' });
    expect(planFencing({ list: parseFenced('["*"]', cluster, pods), force: true, pods, clusterSize: 3 })).toMatchObject({ kind: 'fence', stop: [{ name: 'orders-0' }, { name: 'orders-1' }, { name: 'orders-2' }, { name: 'orders-replica-0' }] });
    // orders-1 is fenced and gone already: the fence holds, nothing to stop
    const rest = [pod('orders-0'), pod('orders-2')];
    expect(planFencing({ list: parseFenced('["orders-1"]', cluster, rest), force: false, pods: rest, clusterSize: 3 })).toEqual({ kind: 'fence', fenced: ['orders-1'], stop: [] });
  });

  it('fences read-only replicas without a quorum check', () => {
    expect(planFencing({ list: parseFenced('["orders-replica-0"]', cluster, pods), force: false, pods, clusterSize: 3 })).toMatchObject({ kind: 'fence', stop: [{ name: 'orders-replica-0' }] });
  });
});

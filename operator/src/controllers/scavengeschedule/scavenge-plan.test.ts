import { describe, expect, it } from 'vitest';
import {
  applyRunState,
  checkSchedule,
  formatTimeUntil,
  markResigning,
  markStarted,
  newCycle,
  nextOccurrenceMs,
  planCycle,
  removeLeftNodes,
  scheduleAt,
  stateOf,
  trimHistory,
  wantsHold,
  type Cycle,
  type CycleInput,
  type MemberView,
} from './scavenge-plan.js';

const T0 = Date.parse('2026-03-04T10:00:00Z');
const HOUR = 3_600_000;

const members = (list: MemberView[]): Map<string, MemberView> => new Map(list.map((m) => [m.pod, m]));
const three: MemberView[] = [
  { pod: 'orders-0', role: 'Leader', alive: true, writerCheckpoint: 900 },
  { pod: 'orders-1', role: 'Follower', alive: true, writerCheckpoint: 800 },
  { pod: 'orders-2', role: 'Follower', alive: true, writerCheckpoint: 700 },
];

function input(cycle: Cycle, overrides: Partial<CycleInput> = {}): CycleInput {
  return {
    cycle,
    members: members(three),
    leader: 'orders-0',
    expectedPods: new Set(['orders-0', 'orders-1', 'orders-2']),
    votingNodes: 3,
    suspend: false,
    nowMs: T0,
    nodeTimeoutMs: 6 * HOUR,
    resignRetryMs: 30_000,
    ...overrides,
  };
}

describe('the schedule', () => {
  it('computes the next CRON occurrence in the time zone', () => {
    // 03:00 on Sundays in Europe/Berlin (UTC+1 in March before DST): 02:00 UTC.
    expect(new Date(nextOccurrenceMs('0 3 * * 0', 'Europe/Berlin', T0) ?? 0).toISOString()).toBe('2026-03-08T02:00:00.000Z');
    expect(new Date(nextOccurrenceMs('0 3 * * 0', 'UTC', T0) ?? 0).toISOString()).toBe('2026-03-08T03:00:00.000Z');
    expect(nextOccurrenceMs('* * * * *', 'UTC', T0)).toBe(T0 + 60_000);
  });

  it('refuses a schedule without five fields or with a bad field', () => {
    expect(checkSchedule('0 3 * * 0', 'UTC')).toBeUndefined();
    expect(checkSchedule('0 3 * *', 'UTC')).toMatch(/five fields/);
    expect(checkSchedule('0 25 * * *', 'UTC')).toMatch(/schedule '0 25/);
  });

  it('is due once the persisted occurrence has come', () => {
    expect(scheduleAt({ schedule: '* * * * *', timeZone: 'UTC', nextScheduleMs: undefined, nowMs: T0 })).toEqual({ due: false, nextMs: T0 + 60_000 });
    expect(scheduleAt({ schedule: '* * * * *', timeZone: 'UTC', nextScheduleMs: T0 + 60_000, nowMs: T0 + 60_000 })).toEqual({ due: true, nextMs: T0 + 60_000 });
    expect(scheduleAt({ schedule: '* * * * *', timeZone: 'UTC', nextScheduleMs: T0 + 60_000, nowMs: T0 + 59_999 }).due).toBe(false);
  });

  it('formats the time until the next cycle as d.hh:mm:ss.fffffff', () => {
    expect(formatTimeUntil(((26 * 60 + 3) * 60 + 4) * 1000)).toBe('1.02:03:04.0000000');
    expect(formatTimeUntil(1.5)).toBe('0.00:00:00.0015000');
    expect(formatTimeUntil(59_999)).toBe('0.00:00:59.9990000');
    expect(formatTimeUntil(-5)).toBe('0.00:00:00.0000000');
  });

  it('keeps the history newest first, trimmed to historyLimit', () => {
    const old = [1, 2, 3].map((n) => ({ id: `c${n}`, startedAt: 'x', result: 'Success' }));
    expect(trimHistory(old, { id: 'c0', startedAt: 'y', result: 'Failed' }, 3).map((h) => h.id)).toEqual(['c0', 'c1', 'c2']);
    expect(trimHistory(old, { id: 'c0', startedAt: 'y', result: 'Failed' }, 0)).toEqual([]);
  });
});

describe('a cycle', () => {
  it('lists followers by writer checkpoint (lowest first), the leader last', () => {
    const cycle = newCycle('c', T0, three, 'orders-0');
    expect(cycle.nodes.map((node) => node.pod)).toEqual(['orders-2', 'orders-1', 'orders-0']);
    expect(cycle.nodes.every((node) => node.result === 'Pending')).toBe(true);
  });

  it('runs followers first, then the leader resigns and is scavenged once another node leads', () => {
    let cycle = newCycle('c', T0, three, 'orders-0');
    const order: string[] = [];
    let leader = 'orders-0';
    let view = three;
    for (let step = 0; step < 20; step++) {
      const action = planCycle(input(cycle, { leader, members: members(view) }));
      if (action.kind === 'finish') {
        expect(action.result).toBe('Success');
        break;
      }
      if (action.kind === 'start') {
        order.push(action.pod);
        cycle = markStarted(cycle, action.pod, `id-${action.pod}`, members(view).get(action.pod)?.role, T0);
      } else if (action.kind === 'check') {
        cycle = applyRunState(cycle, action.pod, 'Success', T0);
      } else if (action.kind === 'resign') {
        expect(action.pod).toBe('orders-0');
        cycle = markResigning(cycle, action.pod, T0);
        // Before another leader is seen the resigned node is not scavenged.
        expect(planCycle(input(cycle, { leader: 'orders-0' }))).toMatchObject({ kind: 'wait', reason: 'WaitingForNewLeader' });
        leader = 'orders-1';
        view = three.map((m) => (m.pod === 'orders-0' ? { ...m, role: 'Follower' } : m.pod === 'orders-1' ? { ...m, role: 'Leader' } : m));
      } else {
        throw new Error(`unexpected ${JSON.stringify(action)}`);
      }
    }
    expect(order).toEqual(['orders-2', 'orders-1', 'orders-0']);
    expect(cycle.nodes.map((node) => [node.pod, node.role, node.result])).toEqual([
      ['orders-2', 'Follower', 'Success'],
      ['orders-1', 'Follower', 'Success'],
      ['orders-0', 'Leader', 'Success'],
    ]);
  });

  it('designates by the writer checkpoint of the moment, and puts the nodes in the order they went', () => {
    const cycle = newCycle('c', T0, three, 'orders-0');
    const now = members(three.map((m) => (m.pod === 'orders-1' ? { ...m, writerCheckpoint: 10 } : m)));
    const action = planCycle(input(cycle, { members: now }));
    expect(action).toEqual({ kind: 'start', pod: 'orders-1' });
    expect(markStarted(cycle, 'orders-1', 'x', 'Follower', T0).nodes.map((n) => n.pod)).toEqual(['orders-1', 'orders-2', 'orders-0']);
  });

  it('scavenges a single node without a resign', () => {
    const cycle = newCycle('c', T0, [three[0] as MemberView], 'orders-0');
    expect(planCycle(input(cycle, { votingNodes: 1, expectedPods: new Set(['orders-0']) }))).toEqual({ kind: 'start', pod: 'orders-0' });
  });

  it('restarts a node scavenge the node lost, and fails the cycle when the node stays away past nodeTimeout', () => {
    let cycle = markStarted(newCycle('c', T0, three, 'orders-0'), 'orders-2', 'run-1', 'Follower', T0);
    const down = members(three.map((m) => (m.pod === 'orders-2' ? { ...m, alive: false } : m)));
    expect(planCycle(input(cycle, { members: down, nowMs: T0 + 1000 }))).toMatchObject({ kind: 'wait', reason: 'NodeLost' });
    // Back, without the run (a restart): started again, never skipped.
    cycle = applyRunState(cycle, 'orders-2', 'NotFound', T0 + 2000);
    expect(cycle.nodes[0]).toMatchObject({ pod: 'orders-2', result: 'Restarting' });
    expect(planCycle(input(cycle, { nowMs: T0 + 2000 }))).toEqual({ kind: 'start', pod: 'orders-2' });
    const again = markStarted(cycle, 'orders-2', 'run-2', 'Follower', T0 + 3000);
    expect(again.nodes[0]).toMatchObject({ scavengeId: 'run-2', result: 'InProgress', startedAt: new Date(T0).toISOString() });
    // Down past nodeTimeout: the cycle fails.
    expect(planCycle(input(again, { members: down, nowMs: T0 + 6 * HOUR }))).toMatchObject({ kind: 'finish', result: 'Failed' });
  });

  it('stops a node scavenge running past nodeTimeout', () => {
    const cycle = markStarted(newCycle('c', T0, three, 'orders-0'), 'orders-2', 'run-1', 'Follower', T0);
    expect(planCycle(input(cycle, { nowMs: T0 + HOUR }))).toEqual({ kind: 'check', pod: 'orders-2', scavengeId: 'run-1' });
    expect(planCycle(input(cycle, { nowMs: T0 + 6 * HOUR }))).toEqual({ kind: 'stop', pod: 'orders-2', scavengeId: 'run-1', why: 'timeout' });
  });

  it('suspend: Pausing stops the running node scavenge, then Paused; resume starts that node again, then the rest', () => {
    let cycle = markStarted(newCycle('c', T0, three, 'orders-0'), 'orders-2', 'run-1', 'Follower', T0);
    expect(stateOf(cycle, true)).toBe('Pausing');
    expect(planCycle(input(cycle, { suspend: true }))).toEqual({ kind: 'stop', pod: 'orders-2', scavengeId: 'run-1', why: 'suspend' });
    cycle = applyRunState(cycle, 'orders-2', 'Stopped', T0);
    expect(stateOf(cycle, true)).toBe('Paused');
    expect(planCycle(input(cycle, { suspend: true }))).toEqual({ kind: 'paused' });
    expect(wantsHold(cycle, true, () => false)).toBe(false);
    expect(stateOf(cycle, false)).toBe('InProgress');
    expect(planCycle(input(cycle))).toEqual({ kind: 'start', pod: 'orders-2' });
  });

  it('waits for pending followers that are down rather than skipping them; a node removed by a scale-down is marked Removed', () => {
    const cycle = newCycle('c', T0, three, 'orders-0');
    const down = members(three.map((m) => (m.role === 'Follower' ? { ...m, alive: false } : m)));
    expect(planCycle(input(cycle, { members: down }))).toMatchObject({ kind: 'wait', reason: 'NodeDown' });
    const smaller = removeLeftNodes(cycle, new Set(['orders-0', 'orders-1']));
    expect(smaller.nodes.find((n) => n.pod === 'orders-2')?.result).toBe('Removed');
  });

  it('finishes Failed when a node errored, Success only when every node succeeded', () => {
    let cycle = newCycle('c', T0, three, 'orders-0');
    for (const pod of ['orders-2', 'orders-1', 'orders-0']) cycle = applyRunState(markStarted(cycle, pod, 'x', 'Follower', T0), pod, pod === 'orders-1' ? 'Errored' : 'Success', T0);
    expect(planCycle(input(cycle))).toMatchObject({ kind: 'finish', result: 'Failed', message: expect.stringContaining('orders-1 Errored') });
  });

  it('holds the cluster while the cycle runs, not while paused nor while a node of it has no pod', () => {
    const cycle = newCycle('c', T0, three, 'orders-0');
    expect(wantsHold(undefined, false, () => false)).toBe(false);
    expect(wantsHold(cycle, false, () => false)).toBe(true);
    expect(wantsHold(cycle, false, (pod) => pod === 'orders-1')).toBe(false);
    expect(stateOf(undefined, false)).toBe('Waiting');
  });
});

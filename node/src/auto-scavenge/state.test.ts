import { describe, expect, it } from 'vitest';
import {
  applyEvent,
  assess,
  configure,
  designate,
  initialState,
  INVALID_CRON_MESSAGE,
  nextCycleMs,
  onNodeScavengeObserved,
  pause,
  PAUSING_MESSAGE,
  resume,
  statusOf,
  type Action,
  type AutoScavengeEvent,
  type AutoScavengeState,
  type ClusterView,
  type ViewMember,
} from './state.js';

const T0 = Date.parse('2026-03-01T10:00:30Z');
const member = (n: number, writerCheckpoint: number, alive = true): ViewMember =>
  ({ nodeId: `127.0.0.${n}:2113`, address: `127.0.0.${n}`, port: 2113, alive, writerCheckpoint });
/** Node 1 leads; node 3 is behind node 2. */
const view = (overrides: Partial<ClusterView> = {}): ClusterView =>
  ({ selfId: '127.0.0.1:2113', clusterSize: 3, members: [member(1, 900), member(2, 800), member(3, 700)], ...overrides });

function fold(state: AutoScavengeState, events: readonly AutoScavengeEvent[]): AutoScavengeState {
  return events.reduce(applyEvent, state);
}

/** Carries out `assess` until it asks for something else than an append. */
function runAppends(state: AutoScavengeState, v: ClusterView, nowMs: number): { state: AutoScavengeState; action: Action; written: AutoScavengeEvent[] } {
  const written: AutoScavengeEvent[] = [];
  for (;;) {
    const action = assess(state, v, nowMs);
    if (action.kind !== 'append') return { state, action, written };
    written.push(action.event);
    state = applyEvent(state, action.event);
  }
}

function configured(schedule = '* * * * *', at = T0): AutoScavengeState {
  const outcome = configure(schedule, at);
  if (outcome.status === 400) throw new Error(outcome.message);
  return fold(initialState(T0 - 3_600_000), outcome.events);
}

describe('auto-scavenge state machine', () => {
  it('is NotConfigured until a schedule is set, then Waiting; configuring does not start a cycle at once', () => {
    expect(statusOf(initialState(T0))).toBe('NotConfigured');
    expect(assess(initialState(T0), view(), T0 + 3_600_000)).toEqual({ kind: 'idle' });
    const state = configured();
    expect(statusOf(state)).toBe('Waiting');
    expect(new Date(nextCycleMs(state)!).toISOString()).toBe('2026-03-01T10:01:00.000Z');
    expect(assess(state, view(), T0 + 1_000)).toEqual({ kind: 'idle' });
  });

  it('refuses a bad CRON expression', () => {
    expect(configure('61 * * * *', T0)).toEqual({ status: 400, message: INVALID_CRON_MESSAGE });
  });

  it('skips missed cycles: the next one counts from the last completion, not from the last due time', () => {
    let state = configured('0 * * * *');
    const late = Date.parse('2026-03-01T15:20:00Z'); // four cycles were missed (the leader was down...)
    const run = runAppends(state, view(), late);
    expect(run.written.map((e) => e.type)).toEqual(['$cluster-scavenge-started', '$node-designated']);
    state = run.state;
    for (const nodeId of ['127.0.0.3:2113', '127.0.0.2:2113', '127.0.0.1:2113']) {
      state = fold(state, [
        { type: '$node-designated', data: { nodeId, designatedAt: new Date(late).toISOString() } },
        { type: '$node-scavenge-started', data: { nodeId, scavengeId: `s-${nodeId}`, startedAt: new Date(late).toISOString() } },
        { type: '$node-scavenge-completed', data: { nodeId, scavengeId: `s-${nodeId}`, completedAt: new Date(late).toISOString(), result: 'Success' } },
      ]);
    }
    const done = runAppends(state, view(), late + 60_000);
    expect(done.written.map((e) => e.type)).toEqual(['$cluster-scavenge-completed']);
    expect(statusOf(done.state)).toBe('Waiting');
    expect(new Date(nextCycleMs(done.state)!).toISOString()).toBe('2026-03-01T16:00:00.000Z');
    expect(assess(done.state, view(), Date.parse('2026-03-01T15:59:00Z'))).toEqual({ kind: 'idle' });
  });

  it('a cycle waits for a healthy cluster', () => {
    const action = assess(configured(), view({ members: [member(1, 1), member(2, 1), member(3, 1, false)] }), T0 + 60_000);
    expect(action).toMatchObject({ kind: 'wait', reason: expect.stringContaining('2 of 3') });
  });

  it('scavenges followers by lowest writer checkpoint, then the leader resigns; the new leader scavenges it', () => {
    const now = T0 + 60_000;
    let { state, action } = runAppends(configured(), view(), now);
    expect(statusOf(state)).toBe('InProgress');
    expect(action).toEqual({ kind: 'start-node-scavenge', node: { nodeId: '127.0.0.3:2113', address: '127.0.0.3', port: 2113 } });
    const order: string[] = [];
    for (let i = 0; i < 2; i++) {
      if (action.kind !== 'start-node-scavenge') throw new Error(action.kind);
      const { nodeId } = action.node;
      order.push(nodeId);
      state = applyEvent(state, { type: '$node-scavenge-started', data: { nodeId, scavengeId: `s${i}`, startedAt: '2026-03-01T10:01:01Z' } });
      expect(assess(state, view(), now)).toEqual({ kind: 'monitor-node-scavenge', node: action.node, scavengeId: `s${i}` });
      state = applyEvent(state, onNodeScavengeObserved(nodeId, `s${i}`, 'Success', now)!);
      ({ state, action } = runAppends(state, view(), now));
    }
    expect(order).toEqual(['127.0.0.3:2113', '127.0.0.2:2113']);
    expect(action).toEqual({ kind: 'resign' });
    // Node 2 leads now: it starts node 1's scavenge from the same state.
    const after = view({ selfId: '127.0.0.2:2113' });
    expect(assess(state, after, now)).toMatchObject({ kind: 'start-node-scavenge', node: { nodeId: '127.0.0.1:2113' } });
  });

  it('designation: followers first, lowest writer checkpoint, down nodes skipped, the leader last', () => {
    const v = view({ members: [member(1, 10), member(2, 500), member(3, 300, false)] });
    const all = v.members;
    expect(designate(all, v)?.nodeId).toBe('127.0.0.2:2113');
    expect(designate([all[0]!, all[2]!], v)).toBeUndefined(); // node 3 is down: wait for it, not the leader
    expect(designate([all[0]!], v)?.nodeId).toBe('127.0.0.1:2113');
    expect(designate([], v)).toBeUndefined();
  });

  it('a single node scavenges itself without resigning', () => {
    const single: ClusterView = { selfId: '127.0.0.1:2113', clusterSize: 1, members: [member(1, 5)] };
    const { action } = runAppends(configured(), single, T0 + 60_000);
    expect(action).toMatchObject({ kind: 'start-node-scavenge', node: { nodeId: '127.0.0.1:2113' } });
  });

  it('pause while a node scavenges: 202, Pausing, the scavenge is stopped, then Paused; resume starts it again', () => {
    const now = T0 + 60_000;
    let { state } = runAppends(configured(), view(), now);
    state = applyEvent(state, { type: '$node-scavenge-started', data: { nodeId: '127.0.0.3:2113', scavengeId: 's1', startedAt: '2026-03-01T10:01:01Z' } });
    const paused = pause(state, now);
    expect(paused.status).toBe(202);
    if (paused.status === 400) return;
    state = fold(state, paused.events);
    expect(statusOf(state)).toBe('Pausing');
    expect(pause(state, now).status).toBe(202);
    expect(resume(state, now)).toEqual({ status: 400, message: PAUSING_MESSAGE });
    expect(assess(state, view(), now)).toMatchObject({ kind: 'stop-node-scavenge', scavengeId: 's1' });
    state = applyEvent(state, { type: '$paused', data: { pausedAt: '2026-03-01T10:01:02Z' } });
    expect(statusOf(state)).toBe('Paused');
    expect(assess(state, view(), now)).toEqual({ kind: 'idle' });
    const resumed = resume(state, now);
    if (resumed.status === 400) throw new Error(resumed.message);
    state = fold(state, resumed.events);
    expect(statusOf(state)).toBe('InProgress');
    expect(assess(state, view(), now)).toMatchObject({ kind: 'start-node-scavenge', node: { nodeId: '127.0.0.3:2113' } });
  });

  it('pause while idle is immediate (200) and resume goes back to Waiting, anchored at the resume', () => {
    let state = configured();
    const paused = pause(state, T0);
    expect(paused.status).toBe(200);
    if (paused.status === 400) return;
    state = fold(state, paused.events);
    expect(statusOf(state)).toBe('Paused');
    expect(assess(state, view(), T0 + 3_600_000)).toEqual({ kind: 'idle' });
    const resumeAt = Date.parse('2026-03-01T12:30:10Z');
    const resumed = resume(state, resumeAt);
    if (resumed.status === 400) return;
    state = fold(state, resumed.events);
    expect(statusOf(state)).toBe('Waiting');
    expect(new Date(nextCycleMs(state)!).toISOString()).toBe('2026-03-01T12:31:00.000Z');
    expect(resume(state, resumeAt)).toEqual({ status: 200, events: [] });
  });

  it('a node that lost its scavenge (restart) is designated again; one that is down is waited for', () => {
    const now = T0 + 60_000;
    let { state } = runAppends(configured(), view(), now);
    state = applyEvent(state, { type: '$node-scavenge-started', data: { nodeId: '127.0.0.3:2113', scavengeId: 's1', startedAt: '2026-03-01T10:01:01Z' } });
    const down = view({ members: [member(1, 900), member(2, 800), member(3, 700, false)] });
    expect(assess(state, down, now)).toMatchObject({ kind: 'wait', reason: expect.stringContaining('down') });
    for (const observed of ['Interrupted', 'Unknown', 'NotFound'] as const) {
      expect(onNodeScavengeObserved('127.0.0.3:2113', 's1', observed, now)).toMatchObject({ type: '$node-designated', data: { nodeId: '127.0.0.3:2113' } });
    }
    expect(onNodeScavengeObserved('127.0.0.3:2113', 's1', 'InProgress', now)).toBeUndefined();
    state = applyEvent(state, onNodeScavengeObserved('127.0.0.3:2113', 's1', 'Interrupted', now)!);
    expect(assess(state, view(), now)).toMatchObject({ kind: 'start-node-scavenge', node: { nodeId: '127.0.0.3:2113' } });
  });

  it('a member gone from gossip is removed from the cycle (its scavenge cancelled)', () => {
    const now = T0 + 60_000;
    let { state } = runAppends(configured(), view(), now);
    const two = view({ members: [member(1, 900), member(2, 800)] });
    const run = runAppends(state, two, now);
    expect(run.written[0]).toMatchObject({ type: '$cluster-members-changed', data: { removed: [{ nodeId: '127.0.0.3:2113' }] } });
    state = run.state;
    expect(run.action).toMatchObject({ kind: 'start-node-scavenge', node: { nodeId: '127.0.0.2:2113' } });
  });
});

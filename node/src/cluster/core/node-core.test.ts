import { describe, expect, it } from 'vitest';
import type { Candidate } from '../elections/elections.js';
import {
  initialCoreState, isPreparing, noQuorumLimitMs, step,
  type CoreCommand, type CoreConfig, type CoreFacts, type CoreInput, type CoreState,
} from './node-core.js';

const config: CoreConfig = {
  instanceId: 'b', clusterSize: 3, readOnlyReplica: false, leaderElectionTimeoutMs: 1000, gossipIntervalMs: 100, gossipTimeoutMs: 500,
};

interface World {
  nowMs: number;
  liveLeader?: { instanceId: string; epochNumber: number };
  alive: Set<string>;
  link: { active: boolean; subscribed: boolean; silentMs: number };
  votingReplicas: number;
  candidate: Omit<Candidate, 'nodePriority' | 'resigning'>;
}

function world(change: Partial<World> = {}): World {
  return {
    nowMs: 10_000, alive: new Set(['a', 'b', 'c']), link: { active: false, subscribed: false, silentMs: Infinity }, votingReplicas: 0,
    candidate: {
      instanceId: 'b', epochNumber: 2, epochPosition: 100, epochId: 'e2', epochLeaderInstanceId: 'a',
      writerCheckpoint: 500, chaserCheckpoint: 500, proposalNumber: 2,
    },
    ...change,
  };
}

function factsOf(w: World): CoreFacts {
  return {
    nowMs: w.nowMs,
    liveLeader: () => w.liveLeader,
    isAlive: (id) => w.alive.has(id),
    link: () => w.link,
    votingReplicas: () => w.votingReplicas,
    candidate: () => w.candidate,
    aliveVoters: () => [...w.alive],
    resigningMember: () => undefined,
    durablePosition: () => w.candidate.writerCheckpoint,
    storageAvailable: () => true,
  };
}

function run(state: CoreState, input: CoreInput, w: World = world()): { state: CoreState; commands: readonly CoreCommand[] } {
  return step(state, input, factsOf(w), config);
}

const kinds = (commands: readonly CoreCommand[]): string[] => commands.filter((c) => c.kind !== 'log').map((c) => c.kind);

/** A node that was elected and whose epoch record is written (PreLeader). */
function preLeader(epochNumber = 3): CoreState {
  let s = initialCoreState(config, 0);
  s = run(s, { kind: 'elected', leaderId: 'b', epochNumber }).state;
  return run(s, { kind: 'epoch-written', epochNumber }).state;
}

describe('node core', () => {
  it('starts in DiscoverLeader and follows a live leader gossip shows, without an election', () => {
    const s = initialCoreState(config, 0);
    expect(s.role).toBe('DiscoverLeader');
    const out = run(s, { kind: 'gossip' }, world({ liveLeader: { instanceId: 'a', epochNumber: 2 } }));
    expect(out.state.role).toBe('PreReplica');
    expect(out.state.leaderId).toBe('a');
    expect(kinds(out.commands)).toEqual(['follow']);
  });

  it('elects only after two gossip rounds found no leader', () => {
    const s = initialCoreState(config, 0);
    const early = run(s, { kind: 'discovery-due', gossipRounds: 1 });
    expect(early.commands).toContainEqual({ kind: 'schedule-discovery', delayMs: 100 });
    expect(early.state.role).toBe('DiscoverLeader');
    const due = run(s, { kind: 'discovery-due', gossipRounds: 2 });
    expect(due.commands).toContainEqual({ kind: 'elections', input: { kind: 'start' } });
  });

  it('an election step broadcasts, schedules its timeout and records the log end it acknowledges up to', () => {
    const s = run(initialCoreState(config, 0), { kind: 'election', input: { kind: 'start' } }).state;
    expect(s.elections.electing).toBe(true);
    expect(s.ackLimit).toBe(500);
    const out = run(initialCoreState(config, 0), { kind: 'election', input: { kind: 'start' } });
    expect(kinds(out.commands)).toEqual(['broadcast', 'schedule-election-timeout']);
  });

  it('elected: PreLeader writes its epoch record; Leader only once it is on a quorum and the preparation is done', () => {
    const elected = run(initialCoreState(config, 0), { kind: 'elected', leaderId: 'b', epochNumber: 3 });
    expect(elected.state.role).toBe('PreLeader');
    expect(elected.commands).toEqual([{ kind: 'become-leader', epochNumber: 3 }]);
    let s = run(elected.state, { kind: 'epoch-written', epochNumber: 3 }).state;
    expect(isPreparing(s, 3)).toBe(true);
    // A preparation cannot finish a term that is not this one.
    expect(run(s, { kind: 'leadership-prepared', epochNumber: 2 }).state.role).toBe('PreLeader');
    expect(run(s, { kind: 'epoch-committed', epochNumber: 3 }).commands).toEqual([{ kind: 'prepare-leadership', epochNumber: 3 }]);
    s = run(s, { kind: 'leadership-prepared', epochNumber: 3 }).state;
    expect(s.role).toBe('Leader');
  });

  it('a leader re-elected keeps its term', () => {
    const s = run(preLeader(), { kind: 'leadership-prepared', epochNumber: 3 }).state;
    const out = run(s, { kind: 'elected', leaderId: 'b', epochNumber: 4 });
    expect(out.state.role).toBe('Leader');
    expect(kinds(out.commands)).toEqual([]);
  });

  it('a leader that another node beat steps down before it follows', () => {
    const s = run(preLeader(), { kind: 'leadership-prepared', epochNumber: 3 }).state;
    const out = run(s, { kind: 'elected', leaderId: 'a', epochNumber: 4 });
    expect(out.state.role).toBe('Unknown');
    expect(kinds(out.commands)).toEqual(['stop-leading', 'then']);
    const then = out.commands.find((c) => c.kind === 'then');
    const after = run(out.state, (then as Extract<CoreCommand, { kind: 'then' }>).input);
    expect(after.state.role).toBe('PreReplica');
    expect(after.state.leaderId).toBe('a');
  });

  it('a leader without a quorum steps down after the limit, then elects', () => {
    let s = run(preLeader(), { kind: 'leadership-prepared', epochNumber: 3 }).state;
    s = run(s, { kind: 'gossip' }, world({ nowMs: 10_000 })).state;
    expect(s.noQuorumSinceMs).toBe(10_000);
    const before = run(s, { kind: 'gossip' }, world({ nowMs: 10_000 + noQuorumLimitMs(config) - 1 }));
    expect(before.state.role).toBe('Leader');
    const after = run(s, { kind: 'gossip' }, world({ nowMs: 10_000 + noQuorumLimitMs(config) }));
    expect(after.state.role).toBe('Unknown');
    expect(kinds(after.commands)).toEqual(['stop-leading', 'then']);
    // A replica that votes again clears the clock.
    expect(run(s, { kind: 'gossip' }, world({ votingReplicas: 1 })).state.noQuorumSinceMs).toBeUndefined();
  });

  it('a leader steps down for a leader of a later epoch', () => {
    const s = run(preLeader(), { kind: 'leadership-prepared', epochNumber: 3 }).state;
    const out = run(s, { kind: 'gossip' }, world({ votingReplicas: 1, liveLeader: { instanceId: 'c', epochNumber: 5 } }));
    expect(out.state.role).toBe('Unknown');
    expect(out.commands).toContainEqual({ kind: 'then', input: { kind: 'follow', leaderId: 'c' } });
  });

  it('a healthy leader or follower ignores elections others start; a leader joins one of its own replica', () => {
    const leader = run(preLeader(), { kind: 'leadership-prepared', epochNumber: 3 }).state;
    const message = { type: 'ViewChange', from: 'c', view: 7 } as const;
    expect(kinds(run(leader, { kind: 'election-message', message, fromOwnReplica: false }).commands)).toEqual([]);
    expect(kinds(run(leader, { kind: 'election-message', message, fromOwnReplica: true }).commands)).toEqual(['elections']);
    const following = run(initialCoreState(config, 0), { kind: 'elected', leaderId: 'a', epochNumber: 3 }).state;
    const linked = world({ link: { active: true, subscribed: true, silentMs: 50 } });
    expect(kinds(run(following, { kind: 'election-message', message, fromOwnReplica: false }, linked).commands)).toEqual([]);
    const silent = world({ link: { active: true, subscribed: true, silentMs: 2 * 100 + 500 + 1 } });
    expect(kinds(run(following, { kind: 'election-message', message, fromOwnReplica: false }, silent).commands)).toEqual(['elections']);
  });

  it('the follower link: subscribed, caught up, three failures lose the leader', () => {
    let s = run(initialCoreState(config, 0), { kind: 'elected', leaderId: 'a', epochNumber: 3 }).state;
    s = run(s, { kind: 'link-subscribed' }).state;
    expect(s.role).toBe('CatchingUp');
    s = run(s, { kind: 'link-caught-up' }).state;
    expect(s.role).toBe('Follower');
    const first = run(s, { kind: 'link-ended', end: 'broken', reason: 'closed' });
    expect(first.commands).toContainEqual({ kind: 'reconnect', delayMs: 200 });
    const second = run(first.state, { kind: 'link-ended', end: 'broken', reason: 'closed' });
    expect(second.commands).toContainEqual({ kind: 'reconnect', delayMs: 400 });
    const third = run(second.state, { kind: 'link-ended', end: 'broken', reason: 'closed' });
    expect(third.state.role).toBe('Unknown');
    expect(third.state.leaderId).toBeUndefined();
    expect(kinds(third.commands)).toEqual(['close-link', 'elections']);
    // A planned reset reconnects at once and is no failure.
    expect(run(s, { kind: 'link-ended', end: 'reset', reason: 'interval' }).commands).toEqual([{ kind: 'connect' }]);
    expect(run(s, { kind: 'link-ended', end: 'refused', reason: 'not leading' }).state.role).toBe('Unknown');
  });

  it('a follower whose unsubscribed leader is dead in gossip elects', () => {
    const s = run(initialCoreState(config, 0), { kind: 'elected', leaderId: 'a', epochNumber: 3 }).state;
    const out = run(s, { kind: 'gossip' }, world({ alive: new Set(['b', 'c']) }));
    expect(out.state.role).toBe('Unknown');
    expect(out.commands).toContainEqual({ kind: 'elections', input: { kind: 'start' } });
  });

  it('resign: only a Leader; ResigningLeader, then an election once a replica caught up', () => {
    expect(run(preLeader(), { kind: 'resign' }).state.role).toBe('PreLeader');
    const leader = run(preLeader(), { kind: 'leadership-prepared', epochNumber: 3 }).state;
    const out = run(leader, { kind: 'resign' });
    expect(out.state.role).toBe('ResigningLeader');
    expect(out.state.resigning).toBe(true);
    expect(out.commands).toEqual([{ kind: 'complete-resignation' }]);
    const ready = run(out.state, { kind: 'resignation-ready' });
    expect(ready.commands).toContainEqual({ kind: 'elections', input: { kind: 'start' } });
    // The election ranks this node as resigning.
    const electing = run(out.state, { kind: 'election', input: { kind: 'start' } }).state;
    expect(electing.elections.electing).toBe(true);
  });

  it('a read-only replica never elects', () => {
    const ro: CoreConfig = { ...config, readOnlyReplica: true };
    const s = initialCoreState(ro, 0);
    expect(s.role).toBe('ReadOnlyLeaderless');
    expect(step(s, { kind: 'start-elections', reason: 'x' }, factsOf(world()), ro).commands).toEqual([]);
    const following = step(s, { kind: 'gossip' }, factsOf(world({ liveLeader: { instanceId: 'a', epochNumber: 2 } })), ro).state;
    expect(following.role).toBe('PreReadOnlyReplica');
    const lost = step(following, { kind: 'link-ended', end: 'refused', reason: 'x' }, factsOf(world()), ro).state;
    expect(lost.role).toBe('ReadOnlyLeaderless');
  });

  it('stopped: ShuttingDown, and nothing more happens', () => {
    const s = run(initialCoreState(config, 0), { kind: 'stop' }).state;
    expect(s.role).toBe('ShuttingDown');
    expect(run(s, { kind: 'gossip' }, world({ liveLeader: { instanceId: 'a', epochNumber: 2 } })).commands).toEqual([]);
    expect(run(s, { kind: 'election', input: { kind: 'start' } }).commands).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import {
  INITIAL_ELECTION_STATE, bestCandidate, isLegitimate, leaderOfElections, step,
  type Candidate, type ElectionEffect, type ElectionMessage, type ElectionState,
} from './elections.js';

function candidate(instanceId: string, over: Partial<Candidate> = {}): Candidate {
  return {
    instanceId, epochNumber: 1, epochPosition: 0, epochId: 'e1', epochLeaderInstanceId: 'x',
    writerCheckpoint: 100, chaserCheckpoint: 100, nodePriority: 0, proposalNumber: 1, ...over,
  };
}

/** Three (or more) nodes exchanging election messages in memory, delivering everything in order. */
function runElection(selves: Candidate[], starters: string[], opts: { drop?: (m: ElectionMessage, to: string) => boolean; resigning?: string } = {}) {
  const ids = selves.map((c) => c.instanceId);
  const states = new Map<string, ElectionState>(ids.map((id) => [id, INITIAL_ELECTION_STATE]));
  const proposals = new Map<string, number>(selves.map((c) => [c.instanceId, c.proposalNumber]));
  const elected: Array<{ at: string; leader: string; proposalNumber: number }> = [];
  const queue: Array<{ to: string; message: ElectionMessage }> = [];
  const run = (id: string, effects: ElectionEffect[]): void => {
    for (const e of effects) {
      if (e.kind === 'broadcast') for (const to of ids) if (to !== id) queue.push({ to, message: e.message });
      if (e.kind === 'send') queue.push({ to: e.to, message: e.message });
      if (e.kind === 'persist-proposal') proposals.set(id, Math.max(proposals.get(id)!, e.proposalNumber));
      if (e.kind === 'elected') elected.push({ at: id, leader: e.leader.instanceId, proposalNumber: e.proposalNumber });
    }
  };
  const ctx = (id: string) => ({
    self: { ...selves.find((c) => c.instanceId === id)!, proposalNumber: proposals.get(id)! },
    voters: ids, clusterSize: ids.length, electionTimeoutMs: 1000,
    ...(opts.resigning === undefined ? {} : { resigningLeaderId: opts.resigning }),
  });
  for (const id of starters) {
    const r = step(states.get(id)!, { kind: 'start' }, ctx(id));
    states.set(id, r.state);
    run(id, r.effects);
  }
  for (let i = 0; i < 10_000 && queue.length > 0; i++) {
    const { to, message } = queue.shift()!;
    if (opts.drop?.(message, to)) continue;
    const r = step(states.get(to)!, { kind: 'message', message }, ctx(to));
    states.set(to, r.state);
    run(to, r.effects);
  }
  return { elected, states, proposals };
}

describe('elections', () => {
  it('elect one leader, the best candidate, known to every node, with a proposal number above all epochs', () => {
    const nodes = [candidate('a'), candidate('b', { writerCheckpoint: 200 }), candidate('c')];
    const { elected, proposals } = runElection(nodes, ['a']);
    expect(new Set(elected.map((e) => e.leader))).toEqual(new Set(['b']));
    expect(new Set(elected.map((e) => e.at))).toEqual(new Set(['a', 'b', 'c']));
    expect(elected[0]!.proposalNumber).toBe(2);
    for (const id of ['a', 'b', 'c']) expect(proposals.get(id)).toBe(2);
  });

  it('agree on one leader when every node starts at once (the best of the first majority to answer)', () => {
    const nodes = [candidate('a'), candidate('b'), candidate('c', { nodePriority: 5 })];
    const { elected } = runElection(nodes, ['a', 'b', 'c']);
    expect(new Set(elected.map((e) => e.leader)).size).toBe(1);
    expect(new Set(elected.map((e) => e.at))).toEqual(new Set(['a', 'b', 'c']));
  });

  it('elect nobody without a majority of voters answering', () => {
    const nodes = [candidate('a'), candidate('b'), candidate('c')];
    const { elected } = runElection(nodes, ['a'], { drop: (_m, to) => to !== 'a' });
    expect(elected).toEqual([]);
  });

  it('never elect a proposal number that a majority already accepted, across rounds', () => {
    const nodes = [candidate('a', { proposalNumber: 7 }), candidate('b'), candidate('c')];
    const { elected } = runElection(nodes, ['b']);
    expect(elected[0]!.proposalNumber).toBe(8);
  });
});

describe('a resigning leader running the prepare phase', () => {
  // a leads view 0's prepare phase (the first of the sorted voters); it resigned with writer 500.
  const a = candidate('a', { writerCheckpoint: 500, resigning: true });
  const lagging = candidate('b', { writerCheckpoint: 300 });
  const caughtUp = candidate('c', { writerCheckpoint: 500 });
  const proposed = (effects: ElectionEffect[]): string | undefined =>
    effects.flatMap((e) => (e.kind === 'broadcast' && e.message.type === 'Proposal' ? [e.message.leader.instanceId] : []))[0];
  function prepare(voters: string[]): { state: ElectionState; ctx: Parameters<typeof step>[2] } {
    const ctx = { self: a, voters, clusterSize: 3, electionTimeoutMs: 1000, resigningLeaderId: 'a' };
    let state = step(INITIAL_ELECTION_STATE, { kind: 'start' }, ctx).state;
    state = step(state, { kind: 'message', message: { type: 'ViewChange', from: 'b', view: 0 } }, ctx).state;
    expect(state.prepareOks.has('a')).toBe(true);
    return { state, ctx };
  }

  it('does not elect itself on a majority with a replica still catching up while another alive voter has not answered', () => {
    const { state, ctx } = prepare(['a', 'b', 'c']);
    const first = step(state, { kind: 'message', message: { type: 'PrepareOk', from: 'b', view: 0, candidate: lagging } }, ctx);
    expect(proposed(first.effects)).toBeUndefined();
    const second = step(first.state, { kind: 'message', message: { type: 'PrepareOk', from: 'c', view: 0, candidate: caughtUp } }, ctx);
    expect(proposed(second.effects)).toBe('c');
  });

  it('elects itself when the voters that answered are all there is (the third is not alive)', () => {
    const { state, ctx } = prepare(['a', 'b']);
    const first = step(state, { kind: 'message', message: { type: 'PrepareOk', from: 'b', view: 0, candidate: lagging } }, ctx);
    expect(proposed(first.effects)).toBe('a');
  });

  it('a non-resigning best candidate is proposed on the first majority, as before', () => {
    const ctx = { self: candidate('a', { writerCheckpoint: 500 }), voters: ['a', 'b', 'c'], clusterSize: 3, electionTimeoutMs: 1000 };
    let state = step(INITIAL_ELECTION_STATE, { kind: 'start' }, ctx).state;
    state = step(state, { kind: 'message', message: { type: 'ViewChange', from: 'b', view: 0 } }, ctx).state;
    const first = step(state, { kind: 'message', message: { type: 'PrepareOk', from: 'b', view: 0, candidate: lagging } }, ctx);
    expect(proposed(first.effects)).toBe('a');
  });
});

describe('candidate ranking', () => {
  it('orders by epoch, writer, chaser, not resigning, priority, instance id', () => {
    expect(bestCandidate([candidate('a', { epochNumber: 2, writerCheckpoint: 1 }), candidate('b', { writerCheckpoint: 999 })])?.instanceId).toBe('a');
    expect(bestCandidate([candidate('a', { chaserCheckpoint: 50 }), candidate('b')])?.instanceId).toBe('b');
    expect(bestCandidate([candidate('a', { chaserCheckpoint: 500, resigning: true }), candidate('b')])?.instanceId).toBe('b');
    expect(bestCandidate([candidate('a', { writerCheckpoint: 500, resigning: true }), candidate('b')])?.instanceId).toBe('a');
    expect(bestCandidate([candidate('a', { nodePriority: 1 }), candidate('b')], 'a')?.instanceId).toBe('b');
    expect(bestCandidate([candidate('a', { nodePriority: 1 }), candidate('b')])?.instanceId).toBe('a');
    expect(bestCandidate([candidate('a'), candidate('b')])?.instanceId).toBe('b');
  });

  it('prefer the leader of the best epoch when it is a candidate with the same log, unless it resigns', () => {
    const led = (id: string) => candidate(id, { epochLeaderInstanceId: 'a' });
    expect(bestCandidate([led('a'), led('b'), candidate('c', { epochLeaderInstanceId: 'a', nodePriority: 9 })])?.instanceId).toBe('a');
    expect(bestCandidate([led('a'), led('b')], 'a')?.instanceId).toBe('b');
  });

  it('accept only candidates not behind the acceptor', () => {
    expect(isLegitimate(candidate('a', { writerCheckpoint: 50 }), candidate('b'))).toBe(false);
    expect(isLegitimate(candidate('a', { epochNumber: 2, writerCheckpoint: 50 }), candidate('b'))).toBe(true);
    expect(isLegitimate(candidate('a'), candidate('b'))).toBe(true);
  });

  it('choose the leader of elections by view over the sorted voters', () => {
    expect(leaderOfElections(0, ['c', 'a', 'b'])).toBe('a');
    expect(leaderOfElections(4, ['c', 'a', 'b'])).toBe('b');
  });
});

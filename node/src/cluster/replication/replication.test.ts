import { describe, expect, it } from 'vitest';
import { commitPosition, quorumPosition } from './commit-tracker.js';
import { planSubscription, type EpochRef } from './divergence.js';

const e = (epochNumber: number, epochPosition: number, epochId = `id${epochNumber}`): EpochRef => ({ epochNumber, epochId, epochPosition });

describe('commit tracker', () => {
  it('takes the quorum-th highest durable position among the leader and voting replicas', () => {
    expect(quorumPosition(100, [{ position: 80, votes: true }, { position: 50, votes: true }], 3)).toBe(80);
    expect(quorumPosition(100, [{ position: 120, votes: true }, { position: 50, votes: true }], 3)).toBe(100);
    expect(quorumPosition(100, [{ position: 90, votes: true }, { position: 95, votes: false }], 3)).toBe(90);
    expect(quorumPosition(100, [{ position: 95, votes: false }], 3)).toBe(-1);
    expect(quorumPosition(100, [{ position: 60, votes: true }, { position: 70, votes: true }, { position: 10, votes: true }, { position: 80, votes: true }], 5)).toBe(70);
    expect(quorumPosition(100, [], 1)).toBe(100);
  });

  it('commits nothing of a new epoch before its epoch record', () => {
    expect(commitPosition(90, 100, 40)).toBe(40);
    expect(commitPosition(100, 100, 40)).toBe(100);
    expect(commitPosition(120, 100, 130)).toBe(130);
  });
});

describe('divergence', () => {
  it('continues a replica that has only what the leader has', () => {
    expect(planSubscription([e(2, 500), e(1, 0)], 800, [e(1, 0)], 400)).toEqual({ position: 400, truncate: false });
    expect(planSubscription([e(2, 500), e(1, 0)], 800, [e(2, 500), e(1, 0)], 700)).toEqual({ position: 700, truncate: false });
    expect(planSubscription([e(1, 0)], 800, [], 0)).toEqual({ position: 0, truncate: false });
  });

  it('cuts a replica back to where the leader began its next epoch', () => {
    // The replica led epoch 2 at 500 but only the new leader's epoch 3 (at 450) continues epoch 1.
    expect(planSubscription([e(3, 450), e(1, 0)], 900, [e(2, 500, 'x'), e(1, 0)], 650)).toEqual({ position: 450, truncate: true });
    // The replica wrote past what epoch 1's leader gave the new leader before it began epoch 2.
    expect(planSubscription([e(2, 300), e(1, 0)], 900, [e(1, 0)], 350)).toEqual({ position: 300, truncate: true });
  });

  it('cuts an epoch of the replica\'s that the leader never saw, even when the leader\'s log is longer', () => {
    // The replica led epoch 3 at 600 (unreplicated); the leader continued epoch 2 and began 4 at 900.
    expect(planSubscription([e(4, 900), e(2, 300), e(1, 0)], 1200, [e(3, 600, 'lost'), e(2, 300), e(1, 0)], 700))
      .toEqual({ position: 600, truncate: true });
  });

  it('cuts everything when no epoch is shared', () => {
    expect(planSubscription([e(1, 0, 'a')], 900, [e(1, 0, 'b')], 350)).toEqual({ position: 0, truncate: true });
  });
});

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { decideLease, LeaderElection } from './leader-election.js';

const log = pino({ level: 'silent' });

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('decideLease', () => {
  const base = { identity: 'me', nowMs: 100_000, leaseDurationMs: 15_000 };

  it('acquires a missing or released Lease and renews its own', () => {
    expect(decideLease({ ...base, record: undefined, observedAtMs: 0 })).toBe('acquire');
    expect(decideLease({ ...base, record: { holderIdentity: '' }, observedAtMs: 99_000 })).toBe('acquire');
    expect(decideLease({ ...base, record: { holderIdentity: 'me' }, observedAtMs: 0 })).toBe('renew');
  });

  it("waits while another holder's Lease changed within its duration, by the candidate's own clock", () => {
    const record = { holderIdentity: 'other', leaseDurationSeconds: 15 };
    expect(decideLease({ ...base, record, observedAtMs: 85_001 })).toBe('wait');
    expect(decideLease({ ...base, record, observedAtMs: 85_000 })).toBe('acquire');
  });
});

describe('LeaderElection', () => {
  function candidate(api: FakeKubeApi, clock: ManualClock, identity: string) {
    const events: string[] = [];
    const election = new LeaderElection({ api, clock, log, namespace: 'ops', name: 'eventdb-operator', identity });
    void election.run({
      onStartedLeading: () => events.push('started'),
      onStoppedLeading: () => events.push('stopped'),
    });
    return { election, events };
  }

  it('lets exactly one of two replicas lead, and the other take over when the leader stops renewing', async () => {
    const api = new FakeKubeApi();
    const clock = new ManualClock(1_000_000);
    const a = candidate(api, clock, 'a');
    await settle();
    const b = candidate(api, clock, 'b');
    for (let i = 0; i < 5; i++) {
      clock.advance(2000);
      await settle();
    }
    expect([a.election.isLeader(), b.election.isLeader()]).toEqual([true, false]);
    // a's process freezes: it stops renewing (and cannot release).
    const renew = api.replace.bind(api);
    api.replace = async (type, object, options) => {
      if ((object['spec'] as { holderIdentity?: string }).holderIdentity === 'a') throw new Error('a is frozen');
      return renew(type, object, options);
    };
    for (let i = 0; i < 10; i++) {
      clock.advance(2000);
      await settle();
    }
    expect(b.election.isLeader()).toBe(true);
    expect(a.events).toEqual(['started', 'stopped']);
    expect(b.events).toEqual(['started']);
    const lease = api.objects({ group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true })[0];
    expect(lease?.['spec']).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.election.stop();
  });

  it('hands over at once when the leader releases the Lease on a graceful stop', async () => {
    const api = new FakeKubeApi();
    const clock = new ManualClock(1_000_000);
    const a = candidate(api, clock, 'a');
    await settle();
    const b = candidate(api, clock, 'b');
    clock.advance(2000);
    await settle();
    expect(a.election.isLeader()).toBe(true);
    await a.election.stop();
    clock.advance(2000);
    await settle();
    expect(b.election.isLeader()).toBe(true);
    await b.election.stop();
  });
});

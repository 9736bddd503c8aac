import { describe, expect, it } from 'vitest';
import type { OperationStatus } from '../../api/eventdb-cluster.js';
import {
  configuredSize,
  phasesOf,
  planRollout,
  RESIGN_RETRY_MS,
  type Action,
  type Gates,
  type MemberState,
  type PodState,
  type RolloutInput,
} from './rollout-plan.js';

/**
 * A small simulated cluster the planner drives: deleted pods go at once, created pods start
 * unready and become ready (and healthy in gossip) one round later, a resign moves leadership to
 * the lowest other healthy voting pod, and a cluster without a leader elects one when a quorum of
 * its configured size is healthy. The test records every action and checks the promises.
 */
interface SimPod {
  name: string;
  kind: 'quorum' | 'read-only-replica';
  ordinal: number;
  uid: string;
  revision: string;
  size: number;
  ready: boolean;
  checkpoint: number;
}

class SimCluster {
  pods = new Map<string, SimPod>();
  leader: string | undefined;
  operation: OperationStatus | undefined;
  actions: string[] = [];
  /** Healthy voting pods other than the target, at each disruptive action on a voting pod. */
  othersHealthyAtDisruption: number[] = [];
  replicas: number;
  readOnlyReplicas = 0;
  revision = 'r1';
  gates: Gates = { windowOpen: true, supervised: false };
  nowMs = Date.parse('2026-03-01T00:00:00Z');
  lastDecisionAction: Action | undefined;
  uidCounter = 0;
  leaderCheckpoint = 1000;
  /** Pods whose writer checkpoint lags this many rounds after a restart. */
  lagRounds = new Map<string, number>();

  constructor(replicas: number) {
    this.replicas = replicas;
    for (let ordinal = 0; ordinal < replicas; ordinal++) this.add(`orders-${ordinal}`, 'quorum', ordinal, replicas, true);
    this.leader = 'orders-0';
  }

  add(name: string, kind: SimPod['kind'], ordinal: number, size: number, ready: boolean): void {
    this.pods.set(name, { name, kind, ordinal, uid: `uid-${++this.uidCounter}`, revision: this.revision, size, ready, checkpoint: this.leaderCheckpoint });
  }

  input(): RolloutInput {
    const pods: PodState[] = [...this.pods.values()].map((pod) => ({
      name: pod.name,
      kind: pod.kind,
      ordinal: pod.ordinal,
      uid: pod.uid,
      revision: pod.revision,
      clusterSize: pod.size,
      ready: pod.ready,
      terminating: false,
    }));
    const members = new Map<string, MemberState>();
    for (const pod of this.pods.values()) {
      if (!pod.ready) continue;
      const role = pod.kind === 'read-only-replica' ? 'ReadOnlyReplica' : pod.name === this.leader ? 'Leader' : this.leader === undefined ? 'Unknown' : 'Follower';
      members.set(pod.name, { role, alive: true, writerCheckpoint: pod.name === this.leader ? this.leaderCheckpoint : pod.checkpoint });
    }
    return {
      cluster: 'orders',
      replicas: this.replicas,
      readOnlyReplicas: this.readOnlyReplicas,
      revisions: { quorum: this.revision, 'read-only-replica': `${this.revision}-ro` },
      pods,
      members,
      leader: this.leader,
      operation: this.operation === undefined ? undefined : (JSON.parse(JSON.stringify(this.operation)) as OperationStatus),
      gates: this.gates,
      nowMs: this.nowMs,
      restartReason: 'ImageChanged',
    };
  }

  healthyVoting(except: string): number {
    const input = this.input();
    return [...this.pods.values()].filter((pod) => pod.kind === 'quorum' && pod.name !== except && input.members.get(pod.name) !== undefined && (input.members.get(pod.name)?.role === 'Leader' || input.members.get(pod.name)?.role === 'Follower')).length;
  }

  /** One reconcile: plan, record, apply; then the world moves one round. */
  round(): Action {
    const decision = planRollout(this.input());
    this.operation = decision.finished === undefined ? decision.operation : undefined;
    const action = decision.action;
    this.lastDecisionAction = action;
    this.apply(action);
    this.world();
    this.nowMs += 2000;
    return action;
  }

  apply(action: Action): void {
    if (action.kind === 'create') {
      for (const pod of action.pods) {
        this.add(pod.name, pod.kind, pod.ordinal, pod.clusterSize, false);
        const created = this.pods.get(pod.name);
        if (created !== undefined) {
          created.revision = pod.kind === 'quorum' ? this.revision : `${this.revision}-ro`;
          created.checkpoint = 0;
        }
        this.actions.push(`create ${pod.name}@${pod.clusterSize}`);
      }
    } else if (action.kind === 'delete') {
      const pod = this.pods.get(action.pod);
      if (pod?.kind === 'quorum') this.othersHealthyAtDisruption.push(this.healthyVoting(action.pod));
      this.pods.delete(action.pod);
      if (this.leader === action.pod) this.leader = undefined;
      this.actions.push(`${action.why === 'restart' ? 'restart' : 'remove'} ${action.pod}`);
    } else if (action.kind === 'resign') {
      this.actions.push(`resign ${action.pod}`);
      const next = [...this.pods.values()].filter((pod) => pod.kind === 'quorum' && pod.ready && pod.name !== action.pod).sort((a, b) => a.ordinal - b.ordinal)[0];
      this.leader = next?.name;
    }
  }

  world(): void {
    for (const pod of this.pods.values()) {
      if (!pod.ready) {
        pod.ready = true;
        this.lagRounds.set(pod.name, 1);
        continue;
      }
      const lag = this.lagRounds.get(pod.name) ?? 0;
      if (lag > 0) this.lagRounds.set(pod.name, lag - 1);
      else pod.checkpoint = this.leaderCheckpoint;
    }
    this.leaderCheckpoint += 10;
    if (this.leader === undefined || !this.pods.has(this.leader)) {
      const voting = [...this.pods.values()].filter((pod) => pod.kind === 'quorum' && pod.ready);
      const size = voting[0]?.size ?? 1;
      if (voting.length >= Math.floor(size / 2) + 1) this.leader = voting.sort((a, b) => b.checkpoint - a.checkpoint || a.ordinal - b.ordinal)[0]?.name;
    }
  }

  /** Rounds until nothing is left to do (bounded). */
  run(limit = 200): void {
    for (let round = 0; round < limit; round++) {
      const action = this.round();
      if (action.kind === 'none' && this.operation === undefined) return;
    }
    throw new Error(`no steady state after ${limit} rounds: ${this.actions.join(' | ')} / ${JSON.stringify(this.operation)}`);
  }

  disruptive(): string[] {
    return this.actions.filter((action) => /^(restart|remove|resign)/.test(action));
  }
}

describe('planRollout: rolling update', () => {
  it('restarts followers one at a time, highest first, then the leader after it resigned', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    sim.run();
    expect(sim.disruptive()).toEqual(['restart orders-2', 'restart orders-1', 'resign orders-0', 'restart orders-0']);
    expect([...sim.pods.values()].every((pod) => pod.revision === 'r2' && pod.ready)).toBe(true);
    // Never more than one voting node down: both others healthy at every restart.
    expect(sim.othersHealthyAtDisruption).toEqual([2, 2, 2]);
  });

  it('waits for the restarted pod to catch up with the leader before the next restart', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    const trace: string[] = [];
    for (let round = 0; round < 40 && sim.disruptive().length < 2; round++) {
      const action = sim.round();
      if (action.kind === 'wait') trace.push(action.reason);
    }
    expect(sim.disruptive()).toEqual(['restart orders-2', 'restart orders-1']);
    expect(trace).toContain('WaitingForCatchUp');
  });

  it('restarts read-only replicas before any voting node', () => {
    const sim = new SimCluster(3);
    sim.readOnlyReplicas = 1;
    sim.run();
    expect(sim.actions).toEqual(['create orders-replica-0@3']);
    sim.revision = 'r2';
    sim.run();
    expect(sim.disruptive()[0]).toBe('restart orders-replica-0');
    expect(sim.disruptive().slice(1)).toEqual(['restart orders-2', 'restart orders-1', 'resign orders-0', 'restart orders-0']);
  });

  it('asks again when no new leader shows up after a resign', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    for (let round = 0; round < 60 && !sim.actions.includes('resign orders-0'); round++) sim.round();
    // The election keeps the old leader (it won again).
    sim.leader = 'orders-0';
    const first = sim.round();
    expect(first).toMatchObject({ kind: 'wait', reason: 'WaitingForNewLeader' });
    sim.leader = 'orders-0';
    sim.nowMs += RESIGN_RETRY_MS;
    expect(sim.round()).toEqual({ kind: 'resign', pod: 'orders-0' });
  });

  it('restarts a single node in place', () => {
    const sim = new SimCluster(1);
    sim.revision = 'r2';
    sim.run();
    expect(sim.actions).toEqual(['restart orders-0', 'create orders-0@1']);
  });

  it('does nothing to a cluster that is up to date', () => {
    const sim = new SimCluster(3);
    expect(sim.round()).toEqual({ kind: 'none' });
    expect(sim.operation).toBeUndefined();
  });

  it('remakes a pod someone deleted, without an operation and outside windows', () => {
    const sim = new SimCluster(3);
    sim.gates = { windowOpen: false, supervised: true };
    sim.pods.delete('orders-1');
    expect(sim.round()).toEqual({ kind: 'create', pods: [{ name: 'orders-1', kind: 'quorum', ordinal: 1, clusterSize: 3 }] });
    expect(sim.operation).toBeUndefined();
  });
});

describe('planRollout: gates', () => {
  it('starts no disruptive step outside a maintenance window, and says when the next opens', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    sim.gates = { windowOpen: false, windowOpensAtMs: Date.parse('2026-03-07T01:00:00Z'), supervised: false };
    for (let round = 0; round < 5; round++) expect(sim.round().kind).toBe('wait');
    expect(sim.disruptive()).toEqual([]);
    expect(sim.operation).toMatchObject({ kind: 'RollingUpdate', waitingFor: 'waiting for a maintenance window (next window opens 2026-03-07T01:00:00.000Z)' });
    sim.gates = { windowOpen: true, supervised: false };
    sim.run();
    expect(sim.disruptive()).toHaveLength(4);
  });

  it('waits for the approve annotation naming the operation with updateStrategy Supervised', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    sim.gates = { windowOpen: true, supervised: true, approvedId: 'something-else' };
    expect(sim.round()).toMatchObject({ kind: 'wait', reason: 'WaitingForApproval' });
    const id = sim.operation?.id ?? '';
    expect(id).toMatch(/^rollingupdate-[0-9a-f]{8}$/);
    sim.gates = { windowOpen: true, supervised: true, approvedId: id };
    sim.run();
    expect(sim.disruptive()).toHaveLength(4);
  });

  it('makes a new operation id, needing a new approval, when the target changes', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    sim.gates = { windowOpen: true, supervised: true };
    sim.round();
    const first = sim.operation?.id;
    sim.revision = 'r3';
    sim.round();
    expect(sim.operation?.id).not.toBe(first);
  });
});

describe('planRollout: scaling', () => {
  it('1 -> 3: restarts the single node with the new size before the empty nodes join', () => {
    const sim = new SimCluster(1);
    sim.replicas = 3;
    sim.run();
    expect(sim.actions.slice(0, 4)).toEqual(['restart orders-0', 'create orders-0@3', 'create orders-1@3', 'create orders-2@3']);
    expect(sim.leader).toBe('orders-0');
    expect([...sim.pods.values()].map((pod) => pod.size)).toEqual([3, 3, 3]);
  });

  it('3 -> 5: adds the nodes first, then restarts the old ones with the new size, leader last', () => {
    const sim = new SimCluster(3);
    sim.replicas = 5;
    sim.run();
    expect(sim.actions).toEqual([
      'create orders-3@5',
      'create orders-4@5',
      'restart orders-2',
      'create orders-2@5',
      'restart orders-1',
      'create orders-1@5',
      'resign orders-0',
      'restart orders-0',
      'create orders-0@5',
    ]);
    expect(sim.othersHealthyAtDisruption.every((healthy) => healthy === 4)).toBe(true);
  });

  it('5 -> 3: restarts the survivors with the new size first, then removes the highest nodes', () => {
    const sim = new SimCluster(5);
    sim.replicas = 3;
    sim.run();
    const disruptive = sim.disruptive();
    expect(disruptive.slice(-2)).toEqual(['remove orders-4', 'remove orders-3']);
    expect(disruptive.filter((action) => action.startsWith('restart'))).toEqual(['restart orders-2', 'restart orders-1', 'restart orders-0']);
    expect([...sim.pods.keys()].sort()).toEqual(['orders-0', 'orders-1', 'orders-2']);
    expect([...sim.pods.values()].every((pod) => pod.size === 3)).toBe(true);
  });

  it('3 -> 1: removes nodes while the survivor leads, then restarts it alone', () => {
    const sim = new SimCluster(3);
    sim.leader = 'orders-1';
    sim.replicas = 1;
    sim.run();
    const disruptive = sim.disruptive();
    expect(disruptive[0]).toBe('remove orders-2');
    expect(disruptive).toContain('resign orders-1');
    expect(disruptive.indexOf('resign orders-1')).toBeLessThan(disruptive.indexOf('remove orders-1'));
    expect(disruptive.at(-1)).toBe('restart orders-0');
    expect(sim.pods.get('orders-0')?.size).toBe(1);
  });

  it('1 -> 3 -> 5 -> 3 -> 1 ends with the asked size every time', () => {
    const sim = new SimCluster(1);
    for (const replicas of [3, 5, 3, 1]) {
      sim.replicas = replicas;
      sim.run();
      expect([...sim.pods.values()].filter((pod) => pod.kind === 'quorum').map((pod) => pod.size)).toEqual(Array(replicas).fill(replicas));
      expect(sim.leader).toBeDefined();
    }
  });

  it('does not remove a node while a survivor is not caught up', () => {
    const sim = new SimCluster(5);
    sim.replicas = 3;
    for (let round = 0; round < 100 && !sim.operation?.step.startsWith('remove') && sim.disruptive().filter((a) => a.startsWith('restart')).length < 3; round++) sim.round();
    // Finish the restarts, then make orders-1 unready just before removals start.
    for (let round = 0; round < 100 && !sim.disruptive().includes('remove orders-4'); round++) {
      const input = sim.input();
      const done = input.pods.filter((pod) => pod.kind === 'quorum' && pod.ordinal < 3).every((pod) => pod.clusterSize === 3 && pod.ready);
      if (done && input.operation?.pod === undefined) break;
      sim.round();
    }
    const pod = sim.pods.get('orders-1');
    if (pod !== undefined) pod.ready = false;
    const decision = planRollout(sim.input());
    expect(decision.action).toMatchObject({ kind: 'wait' });
    expect(JSON.stringify(decision.action)).toMatch(/orders-1/);
  });
});

describe('planRollout: resuming', () => {
  it('continues from the operation in status after an operator restart, restarting no pod twice', () => {
    const sim = new SimCluster(3);
    sim.revision = 'r2';
    for (let round = 0; round < 8; round++) sim.round();
    // A new operator starts: it knows only what status says (a JSON round trip) and what it sees.
    sim.operation = JSON.parse(JSON.stringify(sim.operation)) as OperationStatus;
    sim.run();
    const restarts = sim.disruptive().filter((action) => action.startsWith('restart'));
    expect(new Set(restarts).size).toBe(restarts.length);
    expect(restarts).toHaveLength(3);
  });
});

describe('helpers', () => {
  it('orders the phases of each kind of scale', () => {
    expect(phasesOf(3, 3)).toEqual(['roll']);
    expect(phasesOf(1, 3)).toEqual(['roll', 'create', 'settle']);
    expect(phasesOf(3, 5)).toEqual(['create', 'settle', 'roll']);
    expect(phasesOf(5, 3)).toEqual(['roll', 'remove']);
    expect(phasesOf(5, 1)).toEqual(['remove', 'roll']);
  });

  it('takes the most common cluster size of the voting pods', () => {
    const pod = (clusterSize: number): PodState => ({ name: 'x', kind: 'quorum', ordinal: 0, uid: 'u', revision: 'r', clusterSize, ready: true, terminating: false });
    expect(configuredSize([pod(3), pod(3), pod(5)], 1)).toBe(3);
    expect(configuredSize([pod(3), pod(5)], 1)).toBe(5);
    expect(configuredSize([], 3)).toBe(3);
  });
});

/**
 * A deterministic simulation of a cluster's elections and replication, after TigerBeetle's VOPR:
 * nodes with an in-memory log (their disk), an in-memory network that delays, reorders, drops
 * and partitions messages, a fake clock, crashes and restarts, client writes. The decisions are
 * the node's own pure code: the election state machine (elections.ts), candidate ranking,
 * where a replica's log parts from its leader's (divergence.ts), and the quorum and commit
 * rules (commit-tracker.ts). The driver around them mirrors cluster-node.ts in miniature.
 *
 * Invariants, checked as the run goes and at its end:
 * - no epoch number is ever led by two nodes;
 * - a truncation never removes an acknowledged write;
 * - after the faults stop, every log is the same, and every acknowledged write is in it at the
 *   position it was acknowledged at.
 * Everything random comes from one seed: a failing seed replays exactly.
 */
import {
  INITIAL_ELECTION_STATE, step as electionStep,
  type Candidate, type ElectionContext, type ElectionMessage, type ElectionState,
} from '../../node/src/cluster/elections/elections.js';
import { commitPosition, quorumPosition } from '../../node/src/cluster/replication/commit-tracker.js';
import { planSubscription, type EpochRef } from '../../node/src/cluster/replication/divergence.js';

/** mulberry32: small, fast, good enough to drive a simulation. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Entry {
  readonly kind: 'epoch' | 'write';
  readonly epochNumber: number;
  readonly epochId: string;
  readonly leader: string;
  /** A write's id; an epoch's id for epoch entries. */
  readonly id: string;
}

type Message =
  | { kind: 'election'; message: ElectionMessage }
  | { kind: 'heartbeat'; leader: string; epochNumber: number; commit: number; term: string }
  | { kind: 'subscribe'; writer: number; epochs: EpochRef[]; session: number }
  | { kind: 'truncate'; position: number; session: number }
  | { kind: 'subscribed'; position: number; session: number; term: string }
  | { kind: 'append'; from: number; entries: Entry[]; commit: number; session: number; term: string }
  | { kind: 'ack'; position: number; session: number }
  /** The leader has no session for this replica (its connection closed): subscribe again. */
  | { kind: 'reset'; session: number }
  /** The node subscribed to is not leading (the real node: the replication channel refuses). */
  | { kind: 'refused'; session: number };

interface Envelope { from: string; to: string; message: Message }

interface NodeState {
  readonly id: string;
  // durable ("disk")
  log: Entry[];
  proposal: number;
  // volatile
  up: boolean;
  role: 'discover' | 'unknown' | 'leader' | 'follower';
  elections: ElectionState;
  leader: string | undefined;
  /** This node's term id while leading (epoch id). */
  term: string | undefined;
  epochIndex: number;
  commit: number;
  lastHeard: Map<string, number>;
  lastLeaderHeard: number;
  session: number;
  subscribed: boolean;
  /** Leader: replicas by node id. */
  replicas: Map<string, { session: number; sent: number; acked: number; caughtUp: boolean }>;
  noQuorumSince: number | undefined;
  electionTimers: number[];
  startedAt: number;
}

export interface SimOptions {
  readonly seed: number;
  readonly nodes: number;
  /** Simulated milliseconds of faults, then as long again without them. */
  readonly durationMs: number;
}

export interface SimResult {
  readonly seed: number;
  readonly acknowledged: number;
  readonly epochs: number;
  readonly crashes: number;
  readonly partitions: number;
  readonly messagesDropped: number;
}

const ELECTION_TIMEOUT_MS = 300;
const HEARTBEAT_MS = 50;
const DEAD_AFTER_MS = 250;
const NO_QUORUM_MS = 600;
const BATCH_ENTRIES = 8;
const FREEZE = process.env['SIM_NO_FREEZE'] === undefined;

export class SimulationError extends Error {}

export function runSimulation(options: SimOptions): SimResult {
  const random = prng(options.seed);
  const chance = (p: number): boolean => random() < p;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const ids = Array.from({ length: options.nodes }, (_, i) => `n${i}`);
  const clusterSize = options.nodes;
  const majority = Math.floor(clusterSize / 2) + 1;
  let now = 0;
  let nextTerm = 1;
  let nextWrite = 1;
  const queue: Array<{ at: number; seq: number; run: () => void }> = [];
  let seq = 0;
  const schedule = (delayMs: number, run: () => void): void => {
    queue.push({ at: now + delayMs, seq: seq++, run });
  };
  const faulty = (): boolean => now < options.durationMs;
  const stats = { acknowledged: 0, epochs: 0, crashes: 0, partitions: 0, messagesDropped: 0 };
  const leaderOfEpoch = new Map<number, string>();
  /** Acknowledged writes: id -> log index. */
  const acked = new Map<string, number>();
  /** Partition: a group id per node; messages cross only within a group. */
  let groups = new Map<string, number>(ids.map((id) => [id, 0]));

  const fail = (message: string): never => {
    throw new SimulationError(`seed ${options.seed} at ${now} ms: ${message}`);
  };

  const fresh = (id: string): NodeState => ({
    id, log: [], proposal: -1, up: true, role: 'discover', elections: INITIAL_ELECTION_STATE, leader: undefined,
    term: undefined, epochIndex: -1, commit: 0, lastHeard: new Map(), lastLeaderHeard: -Infinity, session: 0,
    subscribed: false, replicas: new Map(), noQuorumSince: undefined, electionTimers: [], startedAt: 0,
  });
  const nodes = new Map<string, NodeState>(ids.map((id) => [id, fresh(id)]));

  // ---------------------------------------------------------------- log helpers
  const epochsOf = (n: NodeState): EpochRef[] => {
    const out: EpochRef[] = [];
    for (let i = n.log.length - 1; i >= 0; i--) {
      const e = n.log[i]!;
      if (e.kind === 'epoch') out.push({ epochNumber: e.epochNumber, epochId: e.epochId, epochPosition: i });
    }
    return out;
  };
  const lastEpoch = (n: NodeState): EpochRef | undefined => epochsOf(n)[0];
  const truncate = (n: NodeState, position: number): void => {
    for (let i = position; i < n.log.length; i++) {
      const e = n.log[i]!;
      if (e.kind === 'write' && acked.get(e.id) === i) fail(`${n.id} truncates to ${position}, removing acknowledged write ${e.id} at ${i}`);
    }
    n.log.length = Math.min(n.log.length, position);
    n.commit = Math.min(n.commit, position);
  };

  // ---------------------------------------------------------------- network
  const send = (from: string, to: string, message: Message): void => {
    if (from === to) return;
    if (faulty() && chance(0.02)) { stats.messagesDropped += 1; return; }
    const delay = 1 + Math.floor(random() * (faulty() ? 30 : 5));
    schedule(delay, () => {
      const target = nodes.get(to)!;
      if (!target.up || groups.get(from) !== groups.get(to)) { stats.messagesDropped += 1; return; }
      deliver(target, { from, to, message });
    });
  };
  const broadcast = (from: NodeState, message: Message): void => {
    for (const id of ids) if (id !== from.id) send(from.id, id, message);
  };

  // ---------------------------------------------------------------- elections
  const alive = (n: NodeState, other: string): boolean => other === n.id || now - (n.lastHeard.get(other) ?? -Infinity) <= DEAD_AFTER_MS;
  const context = (n: NodeState): ElectionContext => {
    const epoch = lastEpoch(n);
    const epochEntry = epoch === undefined ? undefined : n.log[epoch.epochPosition];
    const self: Candidate = {
      instanceId: n.id, epochNumber: epoch?.epochNumber ?? -1, epochPosition: epoch?.epochPosition ?? -1,
      epochId: epoch?.epochId ?? '', epochLeaderInstanceId: epochEntry?.leader ?? '', writerCheckpoint: n.log.length,
      chaserCheckpoint: n.commit, nodePriority: 0, proposalNumber: n.proposal,
    };
    return { self, voters: ids.filter((id) => alive(n, id)), clusterSize, electionTimeoutMs: ELECTION_TIMEOUT_MS };
  };
  const runElections = (n: NodeState, input: Parameters<typeof electionStep>[1]): void => {
    const { state, effects } = electionStep(n.elections, input, context(n));
    n.elections = state;
    for (const effect of effects) {
      switch (effect.kind) {
        case 'broadcast': broadcast(n, { kind: 'election', message: effect.message }); break;
        case 'send': send(n.id, effect.to, { kind: 'election', message: effect.message }); break;
        case 'schedule-timeout': {
          const startedAt = n.startedAt;
          schedule(effect.delayMs, () => { if (n.up && n.startedAt === startedAt) runElections(n, { kind: 'timeout', view: effect.view }); });
          break;
        }
        case 'persist-proposal': n.proposal = Math.max(n.proposal, effect.proposalNumber); break;
        case 'elected': onElected(n, effect.leader.instanceId, effect.proposalNumber); break;
      }
    }
  };
  const startElections = (n: NodeState): void => {
    if (n.role !== 'leader') n.role = 'unknown';
    runElections(n, { kind: 'start' });
  };

  // ---------------------------------------------------------------- roles
  const onElected = (n: NodeState, leader: string, epochNumber: number): void => {
    if (leader === n.id) {
      if (n.role === 'leader') return;
      const holder = leaderOfEpoch.get(epochNumber);
      if (holder !== undefined && holder !== n.id) fail(`epoch ${epochNumber} led by ${holder} and ${n.id}`);
      leaderOfEpoch.set(epochNumber, n.id);
      stats.epochs += 1;
      const term = `t${nextTerm++}`;
      n.role = 'leader';
      n.leader = n.id;
      n.term = term;
      n.replicas = new Map();
      n.noQuorumSince = undefined;
      n.log.push({ kind: 'epoch', epochNumber, epochId: term, leader: n.id, id: term });
      n.epochIndex = n.log.length - 1;
      return;
    }
    if (n.role === 'leader') stepDown(n);
    if (n.leader === leader && n.role === 'follower') return;
    follow(n, leader);
  };
  const stepDown = (n: NodeState): void => {
    n.role = 'unknown';
    n.leader = undefined;
    n.term = undefined;
    n.replicas = new Map();
  };
  const follow = (n: NodeState, leader: string): void => {
    if (n.role !== 'follower' || n.leader !== leader) n.lastLeaderHeard = now; // a retry does not make the leader alive
    n.role = 'follower';
    n.leader = leader;
    n.subscribed = false;
    n.session += 1;
    send(n.id, leader, { kind: 'subscribe', writer: n.log.length, epochs: epochsOf(n), session: n.session });
  };

  // ---------------------------------------------------------------- leader's replication
  const leaderProgress = (n: NodeState): void => {
    // A node taking part in an election has told the others how far its log goes: it commits
    // nothing beyond that until the election ends (the elected leader may not have it).
    if (n.role !== 'leader' || (FREEZE && n.elections.electing)) return;
    const progress = [...n.replicas.values()].map((r) => ({ position: r.acked, votes: r.caughtUp }));
    const quorum = quorumPosition(n.log.length, progress, clusterSize);
    const before = n.commit;
    n.commit = commitPosition(quorum, n.epochIndex + 1, n.commit);
    if (n.commit < before) fail(`${n.id}'s commit moved back`);
    for (let i = before; i < n.commit; i++) {
      const e = n.log[i]!;
      if (e.kind === 'write' && !acked.has(e.id) && pendingClients.has(e.id) && pendingClients.get(e.id) === n.term) {
        acked.set(e.id, i);
        pendingClients.delete(e.id);
        stats.acknowledged += 1;
      }
    }
  };
  const shipTo = (n: NodeState, replicaId: string): void => {
    const r = n.replicas.get(replicaId);
    if (r === undefined || n.role !== 'leader') return;
    if (r.sent < n.log.length && r.sent - r.acked < 4 * BATCH_ENTRIES) {
      const entries = n.log.slice(r.sent, r.sent + BATCH_ENTRIES);
      send(n.id, replicaId, { kind: 'append', from: r.sent, entries, commit: n.commit, session: r.session, term: n.term! });
      r.sent += entries.length;
    }
  };
  /** Client writes in flight: id -> the term of the leader that took them. */
  const pendingClients = new Map<string, string>();

  // ---------------------------------------------------------------- message handling
  const deliver = (n: NodeState, { from, message }: Envelope): void => {
    n.lastHeard.set(from, now);
    switch (message.kind) {
      case 'election':
        runElections(n, { kind: 'message', message: message.message });
        return;
      case 'heartbeat': {
        if (n.role === 'leader' && message.leader !== n.id) {
          const mine = lastEpoch(n)?.epochNumber ?? -1;
          if (message.epochNumber > mine) { stepDown(n); follow(n, message.leader); }
          return;
        }
        if ((n.role === 'discover' || n.role === 'unknown') && message.leader === from) {
          if (n.elections.electing) runElections(n, { kind: 'leader-found' });
          follow(n, from);
          return;
        }
        if (n.role === 'follower' && n.leader === from) {
          n.lastLeaderHeard = now;
          if (n.subscribed) n.commit = Math.max(n.commit, Math.min(message.commit, n.log.length));
        }
        return;
      }
      case 'subscribe': {
        if (n.role !== 'leader') { send(n.id, from, { kind: 'refused', session: message.session }); return; }
        const plan = planSubscription(epochsOf(n), n.log.length, message.epochs, message.writer);
        if (plan.truncate) { send(n.id, from, { kind: 'truncate', position: plan.position, session: message.session }); return; }
        n.replicas.set(from, { session: message.session, sent: plan.position, acked: plan.position, caughtUp: false });
        send(n.id, from, { kind: 'subscribed', position: plan.position, session: message.session, term: n.term! });
        shipTo(n, from);
        return;
      }
      case 'truncate':
        if (n.role !== 'follower' || n.leader !== from || message.session !== n.session) return;
        truncate(n, message.position);
        follow(n, from);
        return;
      case 'reset':
        if (n.role === 'follower' && n.leader === from && message.session === n.session) follow(n, from);
        return;
      case 'refused':
        if (n.role === 'follower' && n.leader === from && message.session === n.session) {
          n.leader = undefined;
          n.role = 'unknown';
          startElections(n);
        }
        return;
      case 'subscribed':
        if (n.role !== 'follower' || n.leader !== from || message.session !== n.session) return;
        if (message.position !== n.log.length) { follow(n, from); return; }
        n.subscribed = true;
        n.lastLeaderHeard = now;
        return;
      case 'append': {
        if (n.role !== 'follower' || n.leader !== from || message.session !== n.session || !n.subscribed) return;
        n.lastLeaderHeard = now;
        if (message.from !== n.log.length) { follow(n, from); return; } // a gap: subscribe again
        n.log.push(...message.entries);
        n.commit = Math.max(n.commit, Math.min(message.commit, n.log.length));
        if (!(FREEZE && n.elections.electing)) send(n.id, from, { kind: 'ack', position: n.log.length, session: n.session });
        return;
      }
      case 'ack': {
        if (n.role !== 'leader') return;
        const r = n.replicas.get(from);
        if (r === undefined || r.session !== message.session) {
          send(n.id, from, { kind: 'reset', session: message.session });
          return;
        }
        r.acked = Math.max(r.acked, message.position);
        if (r.acked >= n.log.length) r.caughtUp = true;
        leaderProgress(n);
        shipTo(n, from);
        return;
      }
    }
  };

  // ---------------------------------------------------------------- periodic work
  const tick = (n: NodeState): void => {
    if (!n.up) return;
    if (n.role === 'leader') {
      broadcast(n, { kind: 'heartbeat', leader: n.id, epochNumber: lastEpoch(n)?.epochNumber ?? -1, commit: n.commit, term: n.term! });
      for (const id of n.replicas.keys()) shipTo(n, id);
      for (const [id, r] of n.replicas) {
        if (r.sent > r.acked && now - (n.lastHeard.get(id) ?? 0) > DEAD_AFTER_MS) n.replicas.delete(id);
        else if (r.sent > r.acked) r.sent = Math.max(r.acked, r.sent - BATCH_ENTRIES); // resend what may be lost
      }
      leaderProgress(n);
      const voting = 1 + [...n.replicas.entries()].filter(([id, r]) => r.caughtUp && alive(n, id)).length;
      if (voting >= majority) n.noQuorumSince = undefined;
      else if (n.noQuorumSince === undefined) n.noQuorumSince = now;
      else if (now - n.noQuorumSince > NO_QUORUM_MS) { stepDown(n); startElections(n); }
    } else if (n.role === 'follower') {
      if (now - n.lastLeaderHeard > DEAD_AFTER_MS) { n.leader = undefined; n.role = 'unknown'; startElections(n); }
      else if (!n.subscribed && n.leader !== undefined) follow(n, n.leader);
      else if (!(FREEZE && n.elections.electing)) send(n.id, n.leader!, { kind: 'ack', position: n.log.length, session: n.session });
    } else if (n.role === 'discover' && now - n.startedAt > 2 * ELECTION_TIMEOUT_MS && !n.elections.electing) {
      startElections(n);
    } else if (n.role === 'unknown' && !n.elections.electing) {
      startElections(n);
    }
    schedule(HEARTBEAT_MS, () => tick(n));
  };

  // ---------------------------------------------------------------- faults and clients
  const crash = (n: NodeState): void => {
    if (!n.up) return;
    stats.crashes += 1;
    n.up = false;
    schedule(50 + Math.floor(random() * 500), () => restart(n));
  };
  const restart = (n: NodeState): void => {
    const disk = { log: n.log, proposal: n.proposal };
    const next = fresh(n.id);
    next.log = disk.log;
    next.proposal = disk.proposal;
    next.commit = disk.log.length; // the engine makes everything durable visible at open
    next.startedAt = now;
    Object.assign(n, next); // the same object: timers and deliveries keep pointing at it
    schedule(1, () => tick(n));
  };
  const clientWrite = (): void => {
    const leaders = [...nodes.values()].filter((n) => n.up && n.role === 'leader' && n.commit >= n.epochIndex + 1);
    if (leaders.length === 0) return;
    const leader = pick(leaders);
    const id = `w${nextWrite++}`;
    leader.log.push({ kind: 'write', epochNumber: lastEpoch(leader)!.epochNumber, epochId: leader.term!, leader: leader.id, id });
    pendingClients.set(id, leader.term!);
    for (const rid of leader.replicas.keys()) shipTo(leader, rid);
    leaderProgress(leader);
  };
  const chaos = (): void => {
    if (!faulty()) {
      groups = new Map(ids.map((id) => [id, 0]));
      return;
    }
    const r = random();
    if (r < 0.25) crash(pick([...nodes.values()]));
    else if (r < 0.35) {
      const leader = [...nodes.values()].find((n) => n.up && n.role === 'leader');
      if (leader) crash(leader);
    } else if (r < 0.5) {
      stats.partitions += 1;
      groups = new Map(ids.map((id) => [id, chance(0.5) ? 1 : 0]));
    } else if (r < 0.7) {
      groups = new Map(ids.map((id) => [id, 0]));
    }
    schedule(100 + Math.floor(random() * 600), chaos);
  };

  for (const n of nodes.values()) schedule(Math.floor(random() * 20), () => tick(n));
  schedule(200, chaos);
  const writes = (): void => {
    if (now < options.durationMs * 1.5) {
      clientWrite();
      schedule(5 + Math.floor(random() * 30), writes);
    }
  };
  schedule(100, writes);

  const endMs = options.durationMs * 3;
  for (let steps = 0; queue.length > 0 && steps < 5_000_000; steps++) {
    let best = 0;
    for (let i = 1; i < queue.length; i++) {
      const q = queue[i]!;
      const b = queue[best]!;
      if (q.at < b.at || (q.at === b.at && q.seq < b.seq)) best = i;
    }
    const next = queue[best]!;
    queue[best] = queue[queue.length - 1]!;
    queue.pop();
    if (next.at > endMs) break;
    now = next.at;
    next.run();
  }

  // The end: no faults for a while; every node up, one leader, the same log everywhere.
  const live = [...nodes.values()];
  for (const n of live) if (!n.up) fail(`${n.id} is still down at the end`);
  const leaders = live.filter((n) => n.role === 'leader');
  if (leaders.length !== 1) fail(`${leaders.length} leaders at the end (${live.map((n) => `${n.id}:${n.role}`).join(' ')})`);
  const reference = leaders[0]!.log.map((e) => e.id).join(',');
  for (const n of live) {
    if (n.log.map((e) => e.id).join(',') !== reference) {
      fail(`${n.id}'s log (${n.log.length} entries) differs from the leader's (${leaders[0]!.log.length})`);
    }
  }
  for (const [id, index] of acked) {
    if (leaders[0]!.log[index]?.id !== id) fail(`acknowledged write ${id} is not at ${index} at the end`);
  }
  return { seed: options.seed, ...stats };
}

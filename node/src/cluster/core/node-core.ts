/**
 * The cluster member's decisions as one pure state machine: its role (VNodeState), the leader it
 * follows, the elections it takes part in, leadership and the quorum it needs, resignation, the
 * follower link's failures. `step(state, input, facts, config)` returns the next state and the
 * commands to carry out, in order; it touches no network, timer, disk or clock (the time comes in
 * `facts.nowMs`). ClusterNode (cluster-node.ts) is the shell that feeds it what happens and
 * carries the commands out; the seeded simulation (test/sim) drives the same function with a
 * simulated network, disk and clock.
 *
 * The shell's contract:
 * - election inputs (`{ kind: 'election' }`, asked for by the `elections` command) are stepped one
 *   at a time, each after the commands of the previous one are done (they persist a proposal
 *   number and write an epoch record before the next message is judged);
 * - `then` means: once the commands before it are carried out, step this input (a leader that
 *   steps down stops its storage's leading before it follows or elects);
 * - a changed `role` is announced (gossip, /info, leader-only services) as soon as it is stepped.
 */
import {
  INITIAL_ELECTION_STATE, majorityOf, step as electionStep,
  type Candidate, type ElectionContext, type ElectionInput, type ElectionMessage, type ElectionState,
} from '../elections/elections.js';
import type { NodeState } from '../member-info.js';

/** States in which this node leads (accepts replicas and, as Leader, writes). */
export const LEADING: ReadonlySet<NodeState> = new Set<NodeState>(['PreLeader', 'Leader', 'ResigningLeader']);
/** States in which this node has (or is making) a replication link to a leader. */
export const FOLLOWING: ReadonlySet<NodeState> = new Set<NodeState>(['PreReplica', 'CatchingUp', 'Follower', 'PreReadOnlyReplica', 'ReadOnlyReplica']);

export interface CoreConfig {
  readonly instanceId: string;
  readonly clusterSize: number;
  readonly readOnlyReplica: boolean;
  readonly leaderElectionTimeoutMs: number;
  readonly gossipIntervalMs: number;
  readonly gossipTimeoutMs: number;
}

export interface CoreState {
  readonly role: NodeState;
  /** The leader: this node while leading, the node followed, undefined when none is known. */
  readonly leaderId: string | undefined;
  readonly priority: number;
  /** This node is a leader that resigned (ranked below equal candidates). */
  readonly resigning: boolean;
  readonly elections: ElectionState;
  /** While electing: this node's log end when the election began (it acknowledges no further). */
  readonly ackLimit: number;
  /** Leading: the term's epoch number, once its epoch record is written. */
  readonly leaderEpoch: number | undefined;
  /** Leading: since when too few voters replicate from this node. */
  readonly noQuorumSinceMs: number | undefined;
  /** Following: replication links to the leader that failed in a row. */
  readonly linkFailures: number;
  readonly stopped: boolean;
}

export function initialCoreState(config: CoreConfig, priority: number): CoreState {
  return {
    role: config.readOnlyReplica ? 'ReadOnlyLeaderless' : 'DiscoverLeader', leaderId: undefined, priority, resigning: false,
    elections: INITIAL_ELECTION_STATE, ackLimit: Number.POSITIVE_INFINITY, leaderEpoch: undefined,
    noQuorumSinceMs: undefined, linkFailures: 0, stopped: false,
  };
}

/** What the shell observes when a step needs it (read-only queries of its view, log and links). */
export interface CoreFacts {
  readonly nowMs: number;
  /**
   * The leader gossip shows: alive, in state Leader, not this node, of an epoch not older than
   * this node's own last epoch; the one of the latest epoch.
   */
  liveLeader(): { readonly instanceId: string; readonly epochNumber: number } | undefined;
  /** Whether gossip heard from this member within the dead-member time. */
  isAlive(instanceId: string): boolean;
  /** The link to the leader: one exists (connecting or connected), it is subscribed, ms since the leader was heard on it. */
  link(): { readonly active: boolean; readonly subscribed: boolean; readonly silentMs: number };
  /** Leading: voting replicas caught up with this node (this node not counted). */
  votingReplicas(): number;
  /** This node as an election candidate (its last epoch and checkpoints), less priority and resignation. */
  candidate(): Omit<Candidate, 'nodePriority' | 'resigning'>;
  /** The voters gossip shows alive, this node included. */
  aliveVoters(): readonly string[];
  /** A member gossip shows alive in state ResigningLeader. */
  resigningMember(): string | undefined;
  /** This node's log end (durable). */
  durablePosition(): number;
  /** The storage is open (not reopening after a truncation). */
  storageAvailable(): boolean;
}

export type CoreInput =
  /** Gossip changed (a round ended, a peer posted): a leader to follow, a leader lost, a quorum lost. */
  | { readonly kind: 'gossip' }
  /** The discovery timer fired; `gossipRounds` completed since start. */
  | { readonly kind: 'discovery-due'; readonly gossipRounds: number }
  /** Find a leader by election. */
  | { readonly kind: 'start-elections'; readonly reason: string }
  /** `POST /elections`; `fromOwnReplica`: a replica of this leader sent it. */
  | { readonly kind: 'election-message'; readonly message: ElectionMessage; readonly fromOwnReplica: boolean }
  /** One step of the election state machine (asked for by the `elections` command; serialized). */
  | { readonly kind: 'election'; readonly input: ElectionInput }
  /** The election chose a leader with this epoch number. */
  | { readonly kind: 'elected'; readonly leaderId: string; readonly epochNumber: number }
  /** Follow this leader (after a step-down). */
  | { readonly kind: 'follow'; readonly leaderId: string }
  /** `become-leader` done: the epoch record is written and durable here. */
  | { readonly kind: 'epoch-written'; readonly epochNumber: number }
  /** The epoch record is on a quorum (the commit position reached its end). */
  | { readonly kind: 'epoch-committed'; readonly epochNumber: number }
  /** `prepare-leadership` done (the default users are written): the node can serve writes. */
  | { readonly kind: 'leadership-prepared'; readonly epochNumber: number }
  /** `POST /admin/node/resign` (only a Leader resigns: check `canResign` first). */
  | { readonly kind: 'resign' }
  /** `complete-resignation` done: a voting replica caught up (or the wait ended). */
  | { readonly kind: 'resignation-ready' }
  /** The link to the leader subscribed. */
  | { readonly kind: 'link-subscribed' }
  /** The link's log is level with the leader's. */
  | { readonly kind: 'link-caught-up' }
  /** The link to the leader ended (not by a truncation, which the shell handles and reconnects). */
  | { readonly kind: 'link-ended'; readonly end: 'reset' | 'refused' | 'broken'; readonly reason: string }
  | { readonly kind: 'set-priority'; readonly priority: number }
  | { readonly kind: 'stop' };

export type CoreCommand =
  /** Send to every voter gossip knows (alive or not), this node excepted. */
  | { readonly kind: 'broadcast'; readonly message: ElectionMessage }
  | { readonly kind: 'send'; readonly to: string; readonly message: ElectionMessage }
  /** Step `{ kind: 'election', input: { kind: 'timeout', view } }` after `delayMs`. */
  | { readonly kind: 'schedule-election-timeout'; readonly view: number; readonly delayMs: number }
  /** Persist the proposal number (proposal.chk) before any later command. */
  | { readonly kind: 'persist-proposal'; readonly proposalNumber: number }
  /** Queue this election input (stepped as `{ kind: 'election' }`, one at a time). */
  | { readonly kind: 'elections'; readonly input: ElectionInput }
  /** The election ended: the link acknowledges again up to its log end; the leader's commit may move. */
  | { readonly kind: 'election-ended' }
  /** Close any link, gate commits, write this term's epoch record; then step `epoch-written`. */
  | { readonly kind: 'become-leader'; readonly epochNumber: number }
  /** Stop leading: pending writes fail, commits gated, replicas' sessions closed. */
  | { readonly kind: 'stop-leading'; readonly reason: string }
  /** Write what a leader needs before it serves writes (the default users); then step `leadership-prepared`. */
  | { readonly kind: 'prepare-leadership'; readonly epochNumber: number }
  /** Stop taking writes; wait, bounded, for a voting replica to catch up; then step `resignation-ready`. */
  | { readonly kind: 'complete-resignation' }
  /** Close any link and connect to `leaderId`. */
  | { readonly kind: 'follow'; readonly leaderId: string }
  /** Connect to the current leader again, now. */
  | { readonly kind: 'connect' }
  /** Connect to the current leader again after `delayMs`, if still following without a link. */
  | { readonly kind: 'reconnect'; readonly delayMs: number }
  | { readonly kind: 'close-link' }
  /** Step `discovery-due` after `delayMs`. */
  | { readonly kind: 'schedule-discovery'; readonly delayMs: number }
  /** Writes may route differently now (a link subscribed). */
  | { readonly kind: 'route-changed' }
  /** After the commands before it, step this input. */
  | { readonly kind: 'then'; readonly input: CoreInput }
  | { readonly kind: 'log'; readonly level: 'debug' | 'info' | 'warn'; readonly message: string; readonly fields: Record<string, unknown> };

export interface CoreStep {
  readonly state: CoreState;
  readonly commands: readonly CoreCommand[];
}

/** A leader that sees no quorum for this long steps down. */
export function noQuorumLimitMs(config: CoreConfig): number {
  return Math.max(3000, 3 * config.leaderElectionTimeoutMs);
}

/** Only a Leader resigns. */
export function canResign(state: CoreState): boolean {
  return state.role === 'Leader';
}

/** The leadership preparation of `epochNumber` is still wanted (this node is PreLeader of that term). */
export function isPreparing(state: CoreState, epochNumber: number): boolean {
  return !state.stopped && state.role === 'PreLeader' && state.leaderEpoch === epochNumber;
}

interface Out { state: CoreState; commands: CoreCommand[] }

export function step(state: CoreState, input: CoreInput, facts: CoreFacts, config: CoreConfig): CoreStep {
  const out: Out = { state, commands: [] };
  switch (input.kind) {
    case 'gossip': evaluate(out, facts, config); break;
    case 'discovery-due': discover(out, input.gossipRounds, facts, config); break;
    case 'start-elections': startElections(out, input.reason, config); break;
    case 'election-message': onElectionMessage(out, input.message, input.fromOwnReplica, facts, config); break;
    case 'election': runElection(out, input.input, facts, config); break;
    case 'elected': onElected(out, input.leaderId, input.epochNumber, facts, config); break;
    case 'follow': follow(out, input.leaderId, config); break;
    case 'epoch-written':
      if (LEADING.has(out.state.role) && out.state.leaderId === config.instanceId) {
        set(out, { leaderEpoch: input.epochNumber, noQuorumSinceMs: undefined });
      }
      break;
    case 'epoch-committed':
      if (isPreparing(out.state, input.epochNumber)) out.commands.push({ kind: 'prepare-leadership', epochNumber: input.epochNumber });
      break;
    case 'leadership-prepared':
      if (isPreparing(out.state, input.epochNumber)) set(out, { role: 'Leader' });
      break;
    case 'resign':
      if (!canResign(out.state)) break;
      set(out, { resigning: true, role: 'ResigningLeader' });
      out.commands.push({ kind: 'complete-resignation' });
      break;
    case 'resignation-ready': startElections(out, 'the leader resigned', config); break;
    case 'link-subscribed':
      set(out, { linkFailures: 0 });
      out.commands.push({ kind: 'route-changed' });
      if (out.state.role === 'PreReplica') set(out, { role: 'CatchingUp' });
      break;
    case 'link-caught-up':
      if (out.state.role === 'CatchingUp') set(out, { role: 'Follower' });
      if (out.state.role === 'PreReadOnlyReplica') set(out, { role: 'ReadOnlyReplica' });
      break;
    case 'link-ended': onLinkEnded(out, input.end, input.reason, facts, config); break;
    case 'set-priority': set(out, { priority: input.priority }); break;
    case 'stop': set(out, { stopped: true, role: 'ShuttingDown' }); break;
  }
  return out;
}

function set(out: Out, change: Partial<CoreState>): void {
  out.state = { ...out.state, ...change };
}

function log(out: Out, level: 'debug' | 'info' | 'warn', message: string, fields: Record<string, unknown> = {}): void {
  out.commands.push({ kind: 'log', level, message, fields });
}

/** Reacts to what gossip now says: a leader to follow, a leader lost, a quorum lost. */
function evaluate(out: Out, facts: CoreFacts, config: CoreConfig): void {
  if (out.state.stopped) return;
  const role = out.state.role;
  const liveLeader = facts.liveLeader();
  if ((role === 'DiscoverLeader' || role === 'Unknown' || role === 'ReadOnlyLeaderless') && liveLeader) {
    // A leader others follow: join it rather than elect (a restarted node would otherwise keep
    // starting views until it pulled the whole cluster into a needless election).
    if (out.state.elections.electing) out.commands.push({ kind: 'elections', input: { kind: 'leader-found' } });
    follow(out, liveLeader.instanceId, config);
    return;
  }
  if (LEADING.has(role)) {
    checkQuorum(out, facts, config);
    if (liveLeader && liveLeader.epochNumber > (out.state.leaderEpoch ?? -1)) {
      log(out, 'warn', 'another leader of a later epoch: stepping down', { otherLeader: liveLeader.instanceId, epochNumber: liveLeader.epochNumber });
      stepDown(out, 'a leader of a later epoch exists');
      out.commands.push({ kind: 'then', input: { kind: 'follow', leaderId: liveLeader.instanceId } });
    }
    return;
  }
  const leaderId = out.state.leaderId;
  if (FOLLOWING.has(role) && leaderId !== undefined && !facts.link().subscribed && !facts.isAlive(leaderId)) {
    leaderLost(out, 'the leader is not alive in gossip', config);
  }
}

function checkQuorum(out: Out, facts: CoreFacts, config: CoreConfig): void {
  const voting = 1 + facts.votingReplicas();
  if (voting >= majorityOf(config.clusterSize)) {
    set(out, { noQuorumSinceMs: undefined });
    return;
  }
  const since = out.state.noQuorumSinceMs ?? facts.nowMs;
  set(out, { noQuorumSinceMs: since });
  if (facts.nowMs - since < noQuorumLimitMs(config)) return;
  log(out, 'warn', 'the leader sees no quorum: stepping down', { votingMembers: voting, clusterSize: config.clusterSize });
  stepDown(out, 'no quorum');
  out.commands.push({ kind: 'then', input: { kind: 'start-elections', reason: 'the leader lost its quorum' } });
}

function discover(out: Out, gossipRounds: number, facts: CoreFacts, config: CoreConfig): void {
  if (out.state.stopped || out.state.role !== 'DiscoverLeader') return;
  evaluate(out, facts, config);
  if (out.state.role !== 'DiscoverLeader') return;
  if (gossipRounds < 2) {
    out.commands.push({ kind: 'schedule-discovery', delayMs: config.gossipIntervalMs });
    return;
  }
  startElections(out, 'no leader found', config);
}

function startElections(out: Out, reason: string, config: CoreConfig): void {
  if (config.readOnlyReplica || out.state.stopped) return;
  const role = out.state.role;
  if (role !== 'ResigningLeader' && !LEADING.has(role) && role !== 'Unknown' && role !== 'DiscoverLeader') set(out, { role: 'Unknown' });
  log(out, 'info', 'starting an election', { reason, view: out.state.elections.lastAttemptedView + 1 });
  out.commands.push({ kind: 'elections', input: { kind: 'start' } });
}

function onElectionMessage(out: Out, message: ElectionMessage, fromOwnReplica: boolean, facts: CoreFacts, config: CoreConfig): void {
  if (config.readOnlyReplica || out.state.stopped) return;
  const ownReplica = LEADING.has(out.state.role) && fromOwnReplica;
  if (!out.state.elections.electing && message.from !== out.state.leaderId && !ownReplica && hasHealthyLeader(out.state, facts, config)) {
    // Like EventStoreDB's refusal of proposals against a live leader: a node that lags or was cut
    // off cannot pull a working cluster into elections (and, while they ran, hold its commits back).
    // A leader does join an election one of its own replicas started: that replica acknowledges
    // no further until an election ends, and the leader, the best candidate, is simply re-elected.
    log(out, 'debug', 'election message ignored: the leader is alive', { from: message.from, type: message.type, view: message.view });
    return;
  }
  out.commands.push({ kind: 'elections', input: { kind: 'message', message } });
}

/** This node leads with a quorum, or follows a leader it heard from within the dead-member time. */
function hasHealthyLeader(state: CoreState, facts: CoreFacts, config: CoreConfig): boolean {
  if (state.role === 'Leader' || state.role === 'PreLeader') return state.noQuorumSinceMs === undefined;
  if (!FOLLOWING.has(state.role)) return false;
  const link = facts.link();
  if (!link.active || !link.subscribed) return false;
  return link.silentMs <= 2 * config.gossipIntervalMs + config.gossipTimeoutMs;
}

function electionContext(state: CoreState, facts: CoreFacts, config: CoreConfig): ElectionContext {
  const self: Candidate = { ...facts.candidate(), nodePriority: state.priority, resigning: state.resigning };
  const resigning = state.resigning ? config.instanceId : facts.resigningMember();
  return {
    self, voters: facts.aliveVoters(), clusterSize: config.clusterSize, electionTimeoutMs: config.leaderElectionTimeoutMs,
    ...(resigning === undefined ? {} : { resigningLeaderId: resigning }),
  };
}

function runElection(out: Out, input: ElectionInput, facts: CoreFacts, config: CoreConfig): void {
  if (out.state.stopped || !facts.storageAvailable()) return;
  const wasElecting = out.state.elections.electing;
  const { state: elections, effects } = electionStep(out.state.elections, input, electionContext(out.state, facts, config));
  if (!wasElecting && elections.electing) set(out, { ackLimit: facts.durablePosition() });
  set(out, { elections });
  for (const effect of effects) {
    switch (effect.kind) {
      case 'broadcast': out.commands.push({ kind: 'broadcast', message: effect.message }); break;
      case 'send': out.commands.push({ kind: 'send', to: effect.to, message: effect.message }); break;
      case 'schedule-timeout': out.commands.push({ kind: 'schedule-election-timeout', view: effect.view, delayMs: effect.delayMs }); break;
      case 'persist-proposal': out.commands.push({ kind: 'persist-proposal', proposalNumber: effect.proposalNumber }); break;
      case 'elected':
        log(out, 'info', 'election done', { view: effect.view, leader: effect.leader.instanceId, epochNumber: effect.proposalNumber });
        out.commands.push({ kind: 'then', input: { kind: 'elected', leaderId: effect.leader.instanceId, epochNumber: effect.proposalNumber } });
        break;
    }
  }
  // While a node takes part in an election it acknowledges its leader's data no further than its
  // log end when the election began (replica), and does not move the commit position (leader):
  // what it told the voters of its log must stay an upper bound of what it helped commit, or the
  // elected node could lack an acknowledged write (found by the seeded simulation, test/sim).
  if (wasElecting && !elections.electing) {
    set(out, { ackLimit: Number.POSITIVE_INFINITY });
    out.commands.push({ kind: 'election-ended' });
  }
}

function onElected(out: Out, leaderId: string, epochNumber: number, facts: CoreFacts, config: CoreConfig): void {
  if (leaderId === config.instanceId) {
    if (out.state.role === 'Leader' || out.state.role === 'PreLeader') return; // re-elected: the term goes on
    set(out, { leaderId: config.instanceId, resigning: false, leaderEpoch: undefined, role: 'PreLeader' });
    out.commands.push({ kind: 'become-leader', epochNumber });
    return;
  }
  if (LEADING.has(out.state.role)) {
    stepDown(out, 'another node was elected');
    out.commands.push({ kind: 'then', input: { kind: 'elected', leaderId, epochNumber } });
    return;
  }
  if (out.state.leaderId === leaderId && facts.link().active) return; // following it already
  follow(out, leaderId, config);
}

function stepDown(out: Out, reason: string): void {
  if (!LEADING.has(out.state.role)) return;
  log(out, 'info', 'stepping down', { reason });
  set(out, { role: 'Unknown', leaderId: undefined, leaderEpoch: undefined, noQuorumSinceMs: undefined });
  out.commands.push({ kind: 'stop-leading', reason });
}

function follow(out: Out, leaderId: string, config: CoreConfig): void {
  set(out, { leaderId, resigning: false, role: config.readOnlyReplica ? 'PreReadOnlyReplica' : 'PreReplica' });
  out.commands.push({ kind: 'follow', leaderId });
}

function onLinkEnded(out: Out, end: 'reset' | 'refused' | 'broken', reason: string, facts: CoreFacts, config: CoreConfig): void {
  if (out.state.stopped) return;
  if (end === 'reset') {
    // Planned (connection-reset interval): not a failure; reconnect with the certificates in force.
    if (FOLLOWING.has(out.state.role)) out.commands.push({ kind: 'connect' });
    return;
  }
  if (end === 'refused') {
    leaderLost(out, `the leader refused: ${reason}`, config);
    return;
  }
  const failures = out.state.linkFailures + 1;
  set(out, { linkFailures: failures });
  const leaderId = out.state.leaderId;
  if (failures >= 3 && leaderId !== undefined && !facts.isAlive(leaderId)) {
    leaderLost(out, 'the leader is unreachable', config);
    return;
  }
  if (failures >= 3) {
    // Reachable in gossip but not for replication, or gone: let an election decide.
    leaderLost(out, 'replication from the leader keeps failing', config);
    return;
  }
  out.commands.push({ kind: 'reconnect', delayMs: 200 * failures });
}

function leaderLost(out: Out, reason: string, config: CoreConfig): void {
  log(out, 'warn', 'leader lost', { leader: out.state.leaderId, reason });
  out.commands.push({ kind: 'close-link' });
  set(out, { leaderId: undefined, linkFailures: 0 });
  if (config.readOnlyReplica) {
    set(out, { role: 'ReadOnlyLeaderless' });
    return;
  }
  set(out, { role: 'Unknown' });
  startElections(out, reason, config);
}

/**
 * The rollout planner: from what exists (pods, their revision and cluster size, gossip) and the
 * operation in progress, the ONE next thing to do. Pure; the controller persists the returned
 * operation in status before it acts, so a restarted operator resumes where this one stopped.
 *
 * Promises kept here (operator-api.md):
 * - restarts in order: read-only replicas, then followers one at a time (highest ordinal
 *   first), each back, healthy and caught up with the leader before the next; the leader last,
 *   after it resigned and another leader is seen;
 * - never more than one voting node down on purpose: a voting pod is disrupted only while every
 *   other voting pod is ready and healthy in gossip;
 * - scaling keeps quorum: 1→3/5 restarts the single node with the new size before empty nodes
 *   join (so they cannot elect a leader without its data); 3→5 adds nodes, lets them catch up,
 *   then restarts the old ones with the new size; 5→3 restarts the survivors first, then removes
 *   nodes; →1 removes nodes (the survivor leading before the last goes), then restarts it alone;
 * - every disruptive step waits for an open maintenance window and, with updateStrategy
 *   Supervised, for the approve annotation naming the operation.
 */
import type { OperationKind, OperationStatus } from '../../api/eventdb-cluster.js';
import { hashOf } from '../../resources/revision.js';

export type NodeKind = 'quorum' | 'read-only-replica';

export interface PodState {
  readonly name: string;
  readonly kind: NodeKind;
  readonly ordinal: number;
  readonly uid: string;
  readonly revision: string | undefined;
  readonly clusterSize: number | undefined;
  readonly ready: boolean;
  readonly terminating: boolean;
}

export interface MemberState {
  /** Node state from gossip: Leader, Follower, CatchingUp, ReadOnlyReplica, ... */
  readonly role: string;
  readonly alive: boolean;
  readonly writerCheckpoint?: number;
}

export interface Gates {
  readonly windowOpen: boolean;
  readonly windowOpensAtMs?: number;
  readonly supervised: boolean;
  /** Value of the eventdb.io/approve annotation. */
  readonly approvedId?: string;
}

export interface RolloutInput {
  readonly cluster: string;
  readonly replicas: number;
  readonly readOnlyReplicas: number;
  readonly revisions: Readonly<Record<NodeKind, string>>;
  readonly pods: readonly PodState[];
  readonly members: ReadonlyMap<string, MemberState>;
  readonly leader: string | undefined;
  readonly operation: OperationStatus | undefined;
  readonly gates: Gates;
  readonly nowMs: number;
  /** Why pods are stale (ImageChanged, ConfigurationChanged, RestartRequested, ...). */
  readonly restartReason: string;
}

export interface PodToCreate {
  readonly name: string;
  readonly kind: NodeKind;
  readonly ordinal: number;
  readonly clusterSize: number;
}

export type Action =
  | { readonly kind: 'none' }
  | { readonly kind: 'create'; readonly pods: readonly PodToCreate[] }
  | { readonly kind: 'delete'; readonly pod: string; readonly uid: string; readonly why: 'restart' | 'remove' }
  | { readonly kind: 'resign'; readonly pod: string }
  | { readonly kind: 'wait'; readonly reason: WaitReason; readonly message: string };

export type WaitReason =
  | 'WaitingForMaintenanceWindow'
  | 'WaitingForApproval'
  | 'WaitingForPod'
  | 'WaitingForCatchUp'
  | 'WaitingForQuorum'
  | 'WaitingForNewLeader'
  | 'WaitingForLeader';

export interface RolloutDecision {
  readonly action: Action;
  /** The operation to persist before acting; undefined: none in progress. */
  readonly operation: OperationStatus | undefined;
  /** Set when this decision starts an operation. */
  readonly started?: OperationStatus;
  /** Set when this decision ends the operation in progress. */
  readonly finished?: { readonly operation: OperationStatus; readonly result: 'Succeeded' };
}

/** How long to wait for a new leader after a resign before asking again. */
export const RESIGN_RETRY_MS = 30_000;

const HEALTHY_VOTING_ROLES = new Set(['Leader', 'Follower']);
const HEALTHY_REPLICA_ROLES = new Set(['ReadOnlyReplica', 'ReadOnlyLeaderless', 'Follower']);

type Phase = 'create' | 'settle' | 'roll' | 'remove';

export function votingPodName(cluster: string, ordinal: number): string {
  return `${cluster}-${ordinal}`;
}

export function replicaPodName(cluster: string, ordinal: number): string {
  return `${cluster}-replica-${ordinal}`;
}

/** The cluster size the voting nodes run with now: the most common, the larger on a tie. */
export function configuredSize(pods: readonly PodState[], fallback: number): number {
  const counts = new Map<number, number>();
  for (const pod of pods) {
    if (pod.kind !== 'quorum' || pod.clusterSize === undefined) continue;
    counts.set(pod.clusterSize, (counts.get(pod.clusterSize) ?? 0) + 1);
  }
  let best: [number, number] | undefined;
  for (const [size, count] of counts) {
    if (best === undefined || count > best[1] || (count === best[1] && size > best[0])) best = [size, count];
  }
  return best?.[0] ?? fallback;
}

/** The phases of an operation from size `from` to size `to`, in the order they run. */
export function phasesOf(from: number, to: number): Phase[] {
  if (to === from) return ['roll'];
  if (from === 1) return ['roll', 'create', 'settle'];
  if (to > from) return ['create', 'settle', 'roll'];
  if (to === 1) return ['remove', 'roll'];
  return ['roll', 'remove'];
}

export function planRollout(input: RolloutInput): RolloutDecision {
  const voting = input.pods.filter((pod) => pod.kind === 'quorum');
  const replicaWork = planReplicaPresence(input);
  if (voting.length === 0 && input.operation === undefined) {
    // A new cluster (or one whose pods all went): every node starts empty, together.
    return { action: { kind: 'create', pods: [...missingVoting(input, input.replicas), ...replicaCreates(input)] }, operation: undefined };
  }
  const operation = input.operation ?? startOperation(input);
  if (operation === undefined) {
    return { action: replicaWork ?? recoverMissing(input) ?? { kind: 'none' }, operation: undefined };
  }
  const current = refreshOperation(input, operation);
  const started = input.operation === undefined ? current : undefined;
  if (replicaWork !== undefined && replicaWork.kind === 'delete') return { action: replicaWork, operation: current, ...(started ? { started } : {}) };
  const from = current.fromReplicas ?? input.replicas;
  const to = input.replicas;
  for (const phase of phasesOf(from, to)) {
    const step = PHASES[phase](input, current, from, to);
    if (step !== undefined) return { ...step, ...(started ? { started } : {}) };
  }
  return { action: { kind: 'none' }, operation: undefined, finished: { operation: current, result: 'Succeeded' } };
}

type PhaseStep = (input: RolloutInput, operation: OperationStatus, from: number, to: number) => { action: Action; operation: OperationStatus } | undefined;

const PHASES: Record<Phase, PhaseStep> = {
  create: phaseCreate,
  settle: phaseSettle,
  roll: phaseRoll,
  remove: phaseRemove,
};

/** Non-disruptive work on read-only replicas: create missing ones, delete ones no longer wanted. */
function planReplicaPresence(input: RolloutInput): Action | undefined {
  const extra = input.pods
    .filter((pod) => pod.kind === 'read-only-replica' && pod.ordinal >= input.readOnlyReplicas && !pod.terminating)
    .sort((a, b) => b.ordinal - a.ordinal)[0];
  if (extra !== undefined) return { kind: 'delete', pod: extra.name, uid: extra.uid, why: 'remove' };
  if (input.operation !== undefined) return undefined;
  const creates = replicaCreates(input);
  return creates.length > 0 ? { kind: 'create', pods: creates } : undefined;
}

function replicaCreates(input: RolloutInput): PodToCreate[] {
  const existing = new Set(input.pods.map((pod) => pod.name));
  const size = input.operation?.toReplicas ?? input.replicas;
  const creates: PodToCreate[] = [];
  for (let ordinal = 0; ordinal < input.readOnlyReplicas; ordinal++) {
    const name = replicaPodName(input.cluster, ordinal);
    if (!existing.has(name)) creates.push({ name, kind: 'read-only-replica', ordinal, clusterSize: size });
  }
  return creates;
}

function missingVoting(input: RolloutInput, size: number): PodToCreate[] {
  const existing = new Set(input.pods.map((pod) => pod.name));
  const creates: PodToCreate[] = [];
  for (let ordinal = 0; ordinal < size; ordinal++) {
    const name = votingPodName(input.cluster, ordinal);
    if (!existing.has(name)) creates.push({ name, kind: 'quorum', ordinal, clusterSize: size });
  }
  return creates;
}

/** Outside operations, a pod that went missing (deleted, evicted) is made again as it was. */
function recoverMissing(input: RolloutInput): Action | undefined {
  const size = configuredSize(input.pods, input.replicas);
  const creates = missingVoting(input, size);
  return creates.length > 0 ? { kind: 'create', pods: creates } : undefined;
}

function isStale(input: RolloutInput, pod: PodState, size: number): boolean {
  return pod.revision !== input.revisions[pod.kind] || pod.clusterSize !== size;
}

function startOperation(input: RolloutInput): OperationStatus | undefined {
  const from = configuredSize(input.pods, input.replicas);
  const to = input.replicas;
  const kept = input.pods.filter((pod) => isKept(input, pod, to));
  const stale = kept.some((pod) => isStale(input, pod, to));
  const removable = input.pods.some((pod) => pod.kind === 'quorum' && pod.ordinal >= to);
  if (from === to && !stale && !removable) return undefined;
  const kind: OperationKind = from === to && !removable ? 'RollingUpdate' : 'Scale';
  return {
    id: operationId(kind, input, from, to),
    kind,
    step: 'starting',
    startedAt: new Date(input.nowMs).toISOString(),
    reason: kind === 'Scale' ? `ScaleFrom${from}To${to}` : input.restartReason,
    targetRevision: input.revisions.quorum,
    fromReplicas: from,
    toReplicas: to,
    completed: [],
  };
}

function operationId(kind: OperationKind, input: RolloutInput, from: number, to: number): string {
  return `${kind.toLowerCase()}-${hashOf(input.revisions, from, to).slice(0, 8)}`;
}

/** Keeps the operation pointed at the current spec; a changed target is a new operation id. */
function refreshOperation(input: RolloutInput, operation: OperationStatus): OperationStatus {
  const from = operation.fromReplicas ?? input.replicas;
  const target = input.revisions.quorum;
  if (operation.targetRevision === target && operation.toReplicas === input.replicas) return operation;
  const kind: OperationKind = from === input.replicas && operation.kind === 'RollingUpdate' ? 'RollingUpdate' : 'Scale';
  return { ...operation, kind, id: operationId(kind, input, from, input.replicas), targetRevision: target, toReplicas: input.replicas };
}

function isKept(input: RolloutInput, pod: PodState, size: number): boolean {
  return pod.kind === 'quorum' ? pod.ordinal < size : pod.ordinal < input.readOnlyReplicas;
}

function memberHealthy(input: RolloutInput, pod: PodState): boolean {
  const member = input.members.get(pod.name);
  if (member === undefined || !member.alive || !pod.ready || pod.terminating) return false;
  return (pod.kind === 'quorum' ? HEALTHY_VOTING_ROLES : HEALTHY_REPLICA_ROLES).has(member.role);
}

function withStep(operation: OperationStatus, step: string, changes: Partial<OperationStatus> = {}): OperationStatus {
  const { waitingFor: _cleared, ...rest } = operation;
  return { ...rest, step, ...changes };
}

function waiting(operation: OperationStatus, reason: WaitReason, message: string): { action: Action; operation: OperationStatus } {
  return { action: { kind: 'wait', reason, message }, operation: { ...operation, waitingFor: message } };
}

/** Window and approval: both must allow a disruptive step. */
function gated(input: RolloutInput, operation: OperationStatus): { action: Action; operation: OperationStatus } | undefined {
  const { gates } = input;
  if (gates.supervised && gates.approvedId !== operation.id) {
    return waiting(operation, 'WaitingForApproval', `waiting for the annotation eventdb.io/approve: ${operation.id}`);
  }
  if (!gates.windowOpen) {
    const opens = gates.windowOpensAtMs === undefined ? 'no window ahead' : `next window opens ${new Date(gates.windowOpensAtMs).toISOString()}`;
    return waiting(operation, 'WaitingForMaintenanceWindow', `waiting for a maintenance window (${opens})`);
  }
  return undefined;
}

function phaseCreate(input: RolloutInput, operation: OperationStatus, _from: number, to: number): ReturnType<PhaseStep> {
  const creates = missingVoting(input, to);
  if (creates.length === 0) return undefined;
  const blocked = gated(input, operation);
  if (blocked !== undefined) return blocked;
  const names = creates.map((pod) => pod.name).join(', ');
  return { action: { kind: 'create', pods: creates }, operation: withStep(operation, `create ${names}`) };
}

function phaseSettle(input: RolloutInput, operation: OperationStatus, _from: number, to: number): ReturnType<PhaseStep> {
  const kept = input.pods.filter((pod) => pod.kind === 'quorum' && pod.ordinal < to);
  const unhealthy = kept.find((pod) => !memberHealthy(input, pod));
  if (unhealthy === undefined && kept.length === to) return undefined;
  const name = unhealthy?.name ?? 'new nodes';
  return waiting(operation, 'WaitingForCatchUp', `waiting for ${name} to be ready and caught up`);
}

/** The pods to restart, in order: read-only replicas, followers (highest ordinal first), the leader. */
export function restartOrder(input: RolloutInput, candidates: readonly PodState[]): PodState[] {
  const rank = (pod: PodState): number => (pod.kind === 'read-only-replica' ? 0 : pod.name === input.leader ? 2 : 1);
  return [...candidates].sort((a, b) => rank(a) - rank(b) || b.ordinal - a.ordinal);
}

function rollSet(input: RolloutInput, from: number, to: number): { kept: PodToCreate[]; size: number } {
  const votingCount = from === 1 && to > 1 ? 1 : to;
  const kept: PodToCreate[] = [];
  for (let ordinal = 0; ordinal < votingCount; ordinal++) kept.push({ name: votingPodName(input.cluster, ordinal), kind: 'quorum', ordinal, clusterSize: to });
  for (let ordinal = 0; ordinal < input.readOnlyReplicas; ordinal++) {
    kept.push({ name: replicaPodName(input.cluster, ordinal), kind: 'read-only-replica', ordinal, clusterSize: to });
  }
  return { kept, size: to };
}

function phaseRoll(input: RolloutInput, operation: OperationStatus, from: number, to: number): ReturnType<PhaseStep> {
  const { kept, size } = rollSet(input, from, to);
  const byName = new Map(input.pods.map((pod) => [pod.name, pod]));
  const missing = kept.filter((pod) => !byName.has(pod.name));
  if (missing.length > 0) {
    // A pod this operation restarted: make it again, with the new revision and size.
    return { action: { kind: 'create', pods: missing }, operation: withStep(operation, `start ${missing.map((pod) => pod.name).join(', ')}`, { podStep: 'Starting' }) };
  }
  const pods = kept.map((pod) => byName.get(pod.name)).filter((pod): pod is PodState => pod !== undefined);
  // Going from one node to more, the single node restarted with the new size cannot lead
  // alone: ready is all it can be until the others join.
  const back = settleRestartedPod(input, operation, pods, size, from === 1 && to > 1);
  if (back !== undefined) return back;
  const next = restartOrder(input, pods.filter((pod) => isStale(input, pod, size)))[0];
  if (next === undefined) return undefined;
  return disrupt(input, operation, next, 'restart');
}

/**
 * After a restart: the pod must be ready and healthy in gossip, then reach the leader's writer
 * checkpoint as it was when the pod came back, before anything else is disrupted.
 */
function settleRestartedPod(
  input: RolloutInput,
  operation: OperationStatus,
  pods: readonly PodState[],
  size: number,
  readyIsEnough: boolean,
): ReturnType<PhaseStep> {
  const name = operation.pod;
  const pod = pods.find((candidate) => candidate.name === name);
  if (name === undefined || pod === undefined || operation.podStep === 'WaitingNewLeader') return undefined;
  if (isStale(input, pod, size)) return undefined;
  if (readyIsEnough ? !pod.ready || pod.terminating : !memberHealthy(input, pod)) {
    return { action: { kind: 'wait', reason: 'WaitingForPod', message: `waiting for ${name} to be ready` }, operation: withStep(operation, `wait for ${name}`, { podStep: 'WaitingReady' }) };
  }
  const leaderCheckpoint = readyIsEnough || input.leader === undefined ? undefined : input.members.get(input.leader)?.writerCheckpoint;
  if (operation.catchUpTarget === undefined && leaderCheckpoint !== undefined && input.leader !== name) {
    return waiting(withStep(operation, `${name} catching up`, { podStep: 'CatchingUp', catchUpTarget: leaderCheckpoint }), 'WaitingForCatchUp', `waiting for ${name} to catch up to ${leaderCheckpoint}`);
  }
  const checkpoint = input.members.get(name)?.writerCheckpoint;
  if (operation.catchUpTarget !== undefined && checkpoint !== undefined && checkpoint < operation.catchUpTarget) {
    return waiting(operation, 'WaitingForCatchUp', `waiting for ${name} to catch up (${checkpoint} of ${operation.catchUpTarget})`);
  }
  const { pod: _pod, podStep: _podStep, catchUpTarget: _target, previousLeader: _previous, stepStartedAt: _at, ...rest } = operation;
  return phaseRollAfter(input, { ...rest, completed: [...(operation.completed ?? []).filter((done) => done !== name), name] });
}

/** Re-plans with the finished pod recorded, so one call still yields the next action. */
function phaseRollAfter(input: RolloutInput, operation: OperationStatus): ReturnType<PhaseStep> {
  const decision = planRollout({ ...input, operation });
  if (decision.finished !== undefined) return { action: { kind: 'none' }, operation };
  return decision.operation === undefined ? undefined : { action: decision.action, operation: decision.operation };
}

function phaseRemove(input: RolloutInput, operation: OperationStatus, _from: number, to: number): ReturnType<PhaseStep> {
  const doomed = input.pods.filter((pod) => pod.kind === 'quorum' && pod.ordinal >= to).sort((a, b) => b.ordinal - a.ordinal);
  const next = doomed[0];
  if (next === undefined) return undefined;
  if (next.terminating) return waiting(operation, 'WaitingForPod', `waiting for ${next.name} to stop`);
  const survivors = input.pods.filter((pod) => pod.kind === 'quorum' && pod.ordinal < to);
  const lagging = survivors.find((pod) => !memberHealthy(input, pod));
  if (lagging !== undefined) {
    return waiting(operation, 'WaitingForCatchUp', `not removing ${next.name} while ${lagging.name} is not ready and caught up`);
  }
  if (doomed.length === 1 && to === 1) {
    // The last node to go leaves one survivor: it must lead, so it holds every acknowledged write.
    const survivor = votingPodName(input.cluster, 0);
    if (input.leader !== survivor && input.leader !== next.name) return waiting(operation, 'WaitingForLeader', `waiting for ${survivor} to lead`);
  }
  return disrupt(input, operation, next, 'remove');
}

/** Resign first if `pod` leads and another voting node can take over, then delete it. */
function disrupt(input: RolloutInput, operation: OperationStatus, pod: PodState, why: 'restart' | 'remove'): ReturnType<PhaseStep> {
  const blocked = gated(input, operation);
  if (blocked !== undefined) return blocked;
  const others = input.pods.filter((other) => other.kind === 'quorum' && other.name !== pod.name);
  const unhealthy = pod.kind === 'quorum' ? others.find((other) => !memberHealthy(input, other)) : undefined;
  if (unhealthy !== undefined) {
    return waiting(operation, 'WaitingForQuorum', `not disrupting ${pod.name} while ${unhealthy.name} is not ready and healthy`);
  }
  const verb = why === 'restart' ? 'restart' : 'remove';
  if (pod.name === input.leader && others.length > 0) {
    const resigning = operation.pod === pod.name && operation.podStep === 'WaitingNewLeader';
    const askedAtMs = resigning && operation.stepStartedAt !== undefined ? Date.parse(operation.stepStartedAt) : undefined;
    if (askedAtMs === undefined || input.nowMs - askedAtMs >= RESIGN_RETRY_MS) {
      return {
        action: { kind: 'resign', pod: pod.name },
        operation: withStep(operation, `resign ${pod.name} before ${verb}`, {
          pod: pod.name,
          podStep: 'WaitingNewLeader',
          previousLeader: pod.name,
          stepStartedAt: new Date(input.nowMs).toISOString(),
        }),
      };
    }
    return waiting(operation, 'WaitingForNewLeader', `${pod.name} resigned; waiting for another leader`);
  }
  const { catchUpTarget: _target, ...rest } = operation;
  return {
    action: { kind: 'delete', pod: pod.name, uid: pod.uid, why },
    operation: withStep(rest, `${verb} ${pod.name}`, { pod: pod.name, podStep: why === 'restart' ? 'Restarting' : 'Removing', stepStartedAt: new Date(input.nowMs).toISOString() }),
  };
}

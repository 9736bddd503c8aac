/**
 * PURE: the switchover the annotation `eventdb.io/switchover: <pod>` asks for, one step at a
 * time. The target's election priority is raised and the others' lowered, then the leader
 * resigns; the election ranks epoch and writer checkpoint before priority, so another follower
 * can still win: that one resigns in turn, up to MAX_RESIGNS times, within SWITCHOVER_TIMEOUT_MS.
 * The progress is status.operation (kind Switchover: pod = target, previousLeader = the last
 * leader asked to resign, completed = every resign so far), so a restarted operator resumes it.
 */
import type { OperationStatus } from '../../api/eventdb-cluster.js';
import type { ObservedMember, PodView } from './observe.js';

/** How many resigns a switchover may ask for before it gives up. */
export const MAX_RESIGNS = 3;
/** How long after a resign the old leader may still be seen leading (the election takes a moment). */
export const RESIGN_SETTLE_MS = 20_000;
/** A switchover not done in this long fails (with an Event; the annotation is cleared). */
export const SWITCHOVER_TIMEOUT_MS = 180_000;
/** The election priority the target gets; the other voting nodes get LOWERED_PRIORITY. */
export const TARGET_PRIORITY = 100;
export const LOWERED_PRIORITY = 0;

export interface SwitchoverInput {
  /** The annotation's value (trimmed); undefined: none. */
  readonly requested: string | undefined;
  readonly now: boolean;
  readonly windowOpen: boolean;
  readonly windowOpensAtMs?: number;
  readonly operation: OperationStatus | undefined;
  readonly pods: readonly PodView[];
  readonly members: ReadonlyMap<string, ObservedMember>;
  readonly leader: string | undefined;
  readonly nowMs: number;
}

export type SwitchoverDecision =
  /** Nothing asked, nothing going. */
  | { readonly kind: 'none' }
  /** Refused: Warning Event, annotation cleared, nothing changed. */
  | { readonly kind: 'refuse'; readonly reason: string; readonly message: string }
  /** Asked, but another operation holds the cluster or the window is closed: the request stays. */
  | { readonly kind: 'wait'; readonly reason: string; readonly message: string }
  /** Set the priorities, persist `operation`, then ask `leader` to resign. */
  | { readonly kind: 'resign'; readonly leader: string; readonly target: string; readonly operation: OperationStatus; readonly started: boolean }
  /** A resign was asked: the election runs. */
  | { readonly kind: 'await-election'; readonly operation: OperationStatus }
  /** Done (or nothing to do: the target led already): Event, annotation cleared. */
  | { readonly kind: 'complete'; readonly operation?: OperationStatus; readonly message: string }
  /** Given up: Warning Event, annotation cleared. */
  | { readonly kind: 'fail'; readonly operation?: OperationStatus; readonly reason: string; readonly message: string }
  /** The annotation went away while it ran: the operation ends, nothing more is asked. */
  | { readonly kind: 'cancel'; readonly operation: OperationStatus };

function targetProblem(input: SwitchoverInput, target: string): { reason: string; message: string } | undefined {
  const pod = input.pods.find((candidate) => candidate.name === target);
  if (pod === undefined) return { reason: 'SwitchoverTargetNotFound', message: `switchover to ${target}: no such pod in this cluster` };
  if (pod.kind !== 'quorum') return { reason: 'SwitchoverTargetNotVoting', message: `switchover to ${target}: a read-only replica never leads; name a voting node` };
  const member = input.members.get(target);
  if (!pod.ready || pod.terminating || member?.alive !== true) {
    return { reason: 'SwitchoverTargetNotReady', message: `switchover to ${target}: the node is not ready and alive in gossip` };
  }
  return undefined;
}

/** PURE: the next switchover step. */
export function planSwitchover(input: SwitchoverInput): SwitchoverDecision {
  const current = input.operation?.kind === 'Switchover' ? input.operation : undefined;
  const target = input.requested;
  if (target === undefined || target === '') {
    return current === undefined ? { kind: 'none' } : { kind: 'cancel', operation: current };
  }
  if (input.operation !== undefined && current === undefined) {
    return { kind: 'wait', reason: 'SwitchoverWaitingForOperation', message: `switchover to ${target} waits for operation ${input.operation.id} (${input.operation.kind})` };
  }
  const problem = targetProblem(input, target);
  if (current === undefined || current.pod !== target) {
    if (problem !== undefined) return { kind: 'refuse', ...problem };
    if (input.leader === target) return { kind: 'complete', message: `switchover to ${target}: it leads already; nothing changed` };
    if (!input.now && !input.windowOpen) {
      const opens = input.windowOpensAtMs === undefined ? '' : ` (opens ${new Date(input.windowOpensAtMs).toISOString()})`;
      return { kind: 'wait', reason: 'SwitchoverWaitingForMaintenanceWindow', message: `switchover to ${target} waits for the maintenance window${opens}; eventdb.io/switchover-now: "true" runs it now` };
    }
    if (input.leader === undefined) return { kind: 'wait', reason: 'SwitchoverWaitingForLeader', message: `switchover to ${target} waits for a leader` };
    const nowIso = new Date(input.nowMs).toISOString();
    const operation: OperationStatus = {
      id: `switchover-${target}-${input.nowMs}`,
      kind: 'Switchover',
      step: `switchover to ${target}: ${input.leader} resigns`,
      startedAt: nowIso,
      pod: target,
      podStep: 'Resigning',
      previousLeader: input.leader,
      stepStartedAt: nowIso,
      completed: [input.leader],
    };
    return { kind: 'resign', leader: input.leader, target, operation, started: true };
  }
  // A switchover in progress.
  if (input.leader === target) {
    const seconds = (input.nowMs - Date.parse(current.startedAt)) / 1000;
    return { kind: 'complete', operation: current, message: `switchover to ${target} completed in ${seconds.toFixed(1)} s (resigned: ${(current.completed ?? []).join(', ')})` };
  }
  if (input.nowMs - Date.parse(current.startedAt) > SWITCHOVER_TIMEOUT_MS) {
    return { kind: 'fail', operation: current, reason: 'SwitchoverTimedOut', message: `switchover to ${target}: not leading after ${SWITCHOVER_TIMEOUT_MS / 1000} s; leader ${input.leader ?? 'none'}` };
  }
  if (problem !== undefined) return { kind: 'fail', operation: current, reason: problem.reason, message: problem.message };
  const sinceResignMs = input.nowMs - Date.parse(current.stepStartedAt ?? current.startedAt);
  const electing = input.leader === undefined || (input.leader === current.previousLeader && sinceResignMs < RESIGN_SETTLE_MS);
  if (electing) {
    return { kind: 'await-election', operation: { ...current, waitingFor: `the election after ${current.previousLeader ?? ''} resigned` } };
  }
  const leader = input.leader as string;
  const resigns = current.completed ?? [];
  if (resigns.length >= MAX_RESIGNS) {
    return { kind: 'fail', operation: current, reason: 'SwitchoverNotElected', message: `switchover to ${target}: ${resigns.length} resign(s) (${resigns.join(', ')}) did not make it leader; leader ${leader} (the election ranks a node's log before its priority)` };
  }
  const nowIso = new Date(input.nowMs).toISOString();
  const { waitingFor: _waiting, ...rest } = current;
  return {
    kind: 'resign',
    leader,
    target,
    started: false,
    operation: { ...rest, step: `switchover to ${target}: ${leader} resigns`, previousLeader: leader, stepStartedAt: nowIso, completed: [...resigns, leader] },
  };
}

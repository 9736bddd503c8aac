/**
 * PURE decisions of the ScavengeSchedule controller: when the next cycle is due (CRON in a time
 * zone), how long until then (`d.hh:mm:ss.fffffff`), and, during a cycle, the ONE next thing to
 * do: check or stop the running node scavenge, start the next node's, ask the leader to resign,
 * wait (and why), or finish the cycle. The algorithm is the node's own auto-scavenge
 * (node/src/auto-scavenge/state.ts): one node scavenge at a time; the remaining node with the
 * lowest writer checkpoint first, followers and read-only replicas before the leader; when only
 * the leader is left it resigns and is scavenged once another node leads. A node lost during its
 * scavenge has it started again when it is back, or the cycle fails after nodeTimeout: no node
 * is ever skipped silently.
 *
 * The cycle lives in the ScavengeSchedule's status (`currentCycle.nodes`), so a restarted
 * operator resumes it. Node results: Pending, Resigning (the leader was asked to step down),
 * InProgress, Restarting (the node lost its run), Stopped (stopped by suspend or by someone
 * else: started again, the node resumes it), Success, Errored, TimedOut, Removed (the node left
 * the cluster by a scale-down before its turn).
 */
import { CronExpressionParser } from 'cron-parser';

export type ScheduleState = 'NotConfigured' | 'Waiting' | 'InProgress' | 'Pausing' | 'Paused';

export interface CycleNode {
  readonly pod: string;
  readonly role?: string;
  readonly scavengeId?: string;
  readonly result?: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
}

export interface Cycle {
  readonly id: string;
  readonly startedAt: string;
  readonly nodes: readonly CycleNode[];
}

export interface HistoryEntry {
  readonly id: string;
  readonly startedAt: string;
  readonly finishedAt?: string;
  readonly result: string;
}

/** A node of the cluster as its own gossip describes it now. */
export interface MemberView {
  readonly pod: string;
  readonly role: string;
  readonly alive: boolean;
  readonly writerCheckpoint?: number;
}

// ---------------------------------------------------------------------------------------------
// The schedule

/** The first CRON occurrence strictly after `afterMs` in `timeZone`; undefined when there is none. */
export function nextOccurrenceMs(schedule: string, timeZone: string, afterMs: number): number | undefined {
  try {
    return CronExpressionParser.parse(schedule, { tz: timeZone, currentDate: afterMs }).next().getTime();
  } catch {
    return undefined;
  }
}

/** Why the schedule or zone cannot be used, or undefined when it can. */
export function checkSchedule(schedule: string, timeZone: string): string | undefined {
  if (schedule.trim().split(/\s+/).length !== 5 && !schedule.startsWith('@')) return `schedule '${schedule}' must have five fields`;
  try {
    CronExpressionParser.parse(schedule, { tz: timeZone, currentDate: 0 }).next();
    return undefined;
  } catch (err: unknown) {
    return `schedule '${schedule}' in ${timeZone}: ${(err as Error).message}`;
  }
}

const pad2 = (value: number): string => String(value).padStart(2, '0');

/** A duration as `d.hh:mm:ss.fffffff` (days, then seven digits of 100 ns ticks), as in the contract's example. */
export function formatTimeUntil(durationMs: number): string {
  const ticks = Math.max(0, Math.round(durationMs * 10_000));
  const fraction = ticks % 10_000_000;
  const totalSeconds = (ticks - fraction) / 10_000_000;
  const days = Math.floor(totalSeconds / 86_400);
  const ofDay = totalSeconds % 86_400;
  return `${days}.${pad2(Math.floor(ofDay / 3600))}:${pad2(Math.floor((ofDay % 3600) / 60))}:${pad2(ofDay % 60)}.${String(fraction).padStart(7, '0')}`;
}

export interface ScheduleInput {
  readonly schedule: string;
  readonly timeZone: string;
  /** status.nextScheduleTime, when one was computed for the current schedule. */
  readonly nextScheduleMs: number | undefined;
  readonly nowMs: number;
}

/**
 * The occurrence the schedule is at: `due` when it has come. Occurrences missed while a cycle ran
 * or the operator was away are not made up: after a due one, the next is computed from now.
 */
export function scheduleAt(input: ScheduleInput): { readonly due: boolean; readonly nextMs: number | undefined } {
  const nextMs = input.nextScheduleMs ?? nextOccurrenceMs(input.schedule, input.timeZone, input.nowMs);
  return { due: nextMs !== undefined && nextMs <= input.nowMs, nextMs };
}

/** The history, newest first, at most `limit` entries. */
export function trimHistory(history: readonly HistoryEntry[], entry: HistoryEntry | undefined, limit: number): HistoryEntry[] {
  const all = entry === undefined ? [...history] : [entry, ...history.filter((old) => old.id !== entry.id)];
  return all.slice(0, Math.max(0, limit));
}

// ---------------------------------------------------------------------------------------------
// The cycle

/**
 * The nodes of a new cycle in the order they are expected to go: followers and read-only replicas
 * by writer checkpoint (lowest first, ties by name), the leader last. The order is recomputed at
 * each designation from the checkpoints of the moment.
 */
export function newCycle(id: string, nowMs: number, members: readonly MemberView[], leader: string): Cycle {
  const others = members.filter((member) => member.pod !== leader).sort(byCheckpoint);
  return {
    id,
    startedAt: new Date(nowMs).toISOString(),
    nodes: [...others, ...members.filter((member) => member.pod === leader)].map((member) => ({ pod: member.pod, result: 'Pending' })),
  };
}

function byCheckpoint(a: MemberView, b: MemberView): number {
  return (a.writerCheckpoint ?? 0) - (b.writerCheckpoint ?? 0) || a.pod.localeCompare(b.pod);
}

export interface CycleInput {
  readonly cycle: Cycle;
  /** Gossip of every running pod of the cluster, by pod. */
  readonly members: ReadonlyMap<string, MemberView>;
  readonly leader: string | undefined;
  /** Pods the cluster's spec has (voting and read-only replicas): a pending node outside it left by a scale-down. */
  readonly expectedPods: ReadonlySet<string>;
  readonly votingNodes: number;
  readonly suspend: boolean;
  readonly nowMs: number;
  readonly nodeTimeoutMs: number;
  /** A resign not followed by another leader within this is asked again. */
  readonly resignRetryMs: number;
}

export type CycleAction =
  | { readonly kind: 'check'; readonly pod: string; readonly scavengeId: string }
  | { readonly kind: 'stop'; readonly pod: string; readonly scavengeId: string; readonly why: 'suspend' | 'timeout' }
  | { readonly kind: 'start'; readonly pod: string }
  | { readonly kind: 'resign'; readonly pod: string }
  | { readonly kind: 'wait'; readonly reason: string; readonly message: string }
  | { readonly kind: 'paused' }
  | { readonly kind: 'finish'; readonly result: 'Success' | 'Failed'; readonly message: string };

/** What the cycle does next. Pure; the controller carries the action out and folds the answer back in. */
export function planCycle(input: CycleInput): CycleAction {
  const { cycle, members, nowMs } = input;
  const alive = (pod: string): boolean => members.get(pod)?.alive === true;
  const elapsedMs = (node: CycleNode): number => nowMs - Date.parse(node.startedAt ?? new Date(nowMs).toISOString());
  const timeoutAt = (node: CycleNode): string => new Date(Date.parse(node.startedAt ?? '') + input.nodeTimeoutMs).toISOString();

  const running = cycle.nodes.find((node) => node.result === 'InProgress' && node.scavengeId !== undefined);
  if (running !== undefined) {
    const scavengeId = running.scavengeId as string;
    if (input.suspend) return { kind: 'stop', pod: running.pod, scavengeId, why: 'suspend' };
    if (elapsedMs(running) >= input.nodeTimeoutMs) {
      if (alive(running.pod)) return { kind: 'stop', pod: running.pod, scavengeId, why: 'timeout' };
      return { kind: 'finish', result: 'Failed', message: `${running.pod} was lost during its scavenge and did not come back within nodeTimeout` };
    }
    if (!alive(running.pod)) {
      return { kind: 'wait', reason: 'NodeLost', message: `${running.pod} is down during its scavenge; it is started again when the node is back (the cycle fails at ${timeoutAt(running)})` };
    }
    return { kind: 'check', pod: running.pod, scavengeId };
  }
  if (input.suspend) return { kind: 'paused' };

  // A run the node lost (restart) or that was stopped (suspend, by hand): started again first.
  const again = cycle.nodes.find((node) => node.result === 'Restarting' || node.result === 'Stopped');
  if (again !== undefined) {
    if (again.result === 'Restarting' && elapsedMs(again) >= input.nodeTimeoutMs) {
      return { kind: 'finish', result: 'Failed', message: `${again.pod} was lost during its scavenge and did not come back within nodeTimeout` };
    }
    if (!alive(again.pod)) {
      return { kind: 'wait', reason: 'NodeLost', message: `${again.pod} is down; its scavenge is started again when the node is back${again.result === 'Restarting' ? ` (the cycle fails at ${timeoutAt(again)})` : ''}` };
    }
    if (again.pod === input.leader && input.votingNodes > 1) return { kind: 'resign', pod: again.pod };
    return { kind: 'start', pod: again.pod };
  }

  const resigning = cycle.nodes.find((node) => node.result === 'Resigning');
  if (resigning !== undefined) {
    if (input.leader !== undefined && input.leader !== resigning.pod && alive(resigning.pod)) return { kind: 'start', pod: resigning.pod };
    if (input.leader === resigning.pod && elapsedMs(resigning) >= input.resignRetryMs) return { kind: 'resign', pod: resigning.pod };
    return { kind: 'wait', reason: 'WaitingForNewLeader', message: `${resigning.pod} was asked to resign; its scavenge starts once another node leads` };
  }

  const pending = cycle.nodes.filter((node) => node.result === undefined || node.result === 'Pending');
  if (pending.length === 0) return finish(cycle);
  const candidates = pending
    .filter((node) => node.pod !== input.leader && input.expectedPods.has(node.pod) && alive(node.pod))
    .map((node) => members.get(node.pod) as MemberView)
    .sort(byCheckpoint);
  if (candidates[0] !== undefined) return { kind: 'start', pod: candidates[0].pod };
  const waitingFor = pending.filter((node) => node.pod !== input.leader && input.expectedPods.has(node.pod));
  if (waitingFor.length > 0) {
    return { kind: 'wait', reason: 'NodeDown', message: `the nodes left to scavenge are down: ${waitingFor.map((node) => node.pod).join(', ')}` };
  }
  const leaderPending = pending.find((node) => node.pod === input.leader);
  if (leaderPending === undefined) {
    if (input.leader === undefined && pending.some((node) => input.expectedPods.has(node.pod))) {
      return { kind: 'wait', reason: 'NoLeader', message: 'no node leads now; the leader is scavenged last, after it resigned' };
    }
    return finish(cycle); // only nodes that left the cluster remain: removeLeftNodes marks them
  }
  if (input.votingNodes > 1) return { kind: 'resign', pod: leaderPending.pod };
  return { kind: 'start', pod: leaderPending.pod };
}

function finish(cycle: Cycle): CycleAction {
  const notDone = cycle.nodes.filter((node) => node.result !== 'Success');
  if (notDone.length === 0) return { kind: 'finish', result: 'Success', message: `every node scavenged: ${cycle.nodes.map((node) => node.pod).join(', ')}` };
  return { kind: 'finish', result: 'Failed', message: `not every node scavenged: ${notDone.map((node) => `${node.pod} ${node.result ?? 'Pending'}`).join(', ')}` };
}

/** Pending nodes whose pod the cluster no longer has (a scale-down): Removed, said in the status, not skipped silently. */
export function removeLeftNodes(cycle: Cycle, expectedPods: ReadonlySet<string>): Cycle {
  if (!cycle.nodes.some((node) => (node.result ?? 'Pending') === 'Pending' && !expectedPods.has(node.pod))) return cycle;
  return { ...cycle, nodes: cycle.nodes.map((node) => ((node.result ?? 'Pending') === 'Pending' && !expectedPods.has(node.pod) ? { ...node, result: 'Removed' } : node)) };
}

function update(cycle: Cycle, pod: string, change: (node: CycleNode) => CycleNode): Cycle {
  return { ...cycle, nodes: cycle.nodes.map((node) => (node.pod === pod ? change(node) : node)) };
}

/**
 * The node's run started: InProgress with its id. The nodes list keeps the order the nodes went
 * in: the started node moves behind the last one that already went.
 */
export function markStarted(cycle: Cycle, pod: string, scavengeId: string, role: string | undefined, nowMs: number): Cycle {
  const iso = new Date(nowMs).toISOString();
  const node = cycle.nodes.find((candidate) => candidate.pod === pod);
  if (node === undefined) return cycle;
  // A run started again after a loss keeps its first start: nodeTimeout counts from there.
  const startedAt = node.result === 'Restarting' && node.startedAt !== undefined ? node.startedAt : iso;
  const { finishedAt: _finished, ...rest } = node;
  const started: CycleNode = { ...rest, ...(node.role === undefined && role !== undefined ? { role } : {}), scavengeId, result: 'InProgress', startedAt };
  const others = cycle.nodes.filter((candidate) => candidate.pod !== pod);
  const went = (candidate: CycleNode): boolean => !['Pending', 'Resigning', undefined].includes(candidate.result);
  const lastWent = others.reduce((index, candidate, position) => (went(candidate) ? position : index), -1);
  return { ...cycle, nodes: [...others.slice(0, lastWent + 1), started, ...others.slice(lastWent + 1)] };
}

export function markResigning(cycle: Cycle, pod: string, nowMs: number): Cycle {
  return update(cycle, pod, (node) => ({ ...node, role: node.role ?? 'Leader', result: 'Resigning', startedAt: new Date(nowMs).toISOString() }));
}

/** What the node said of its run, folded into the cycle. */
export function applyRunState(cycle: Cycle, pod: string, state: string, nowMs: number): Cycle {
  const iso = new Date(nowMs).toISOString();
  switch (state) {
    case 'InProgress':
      return cycle;
    case 'Success':
    case 'Errored':
    case 'Stopped':
      return update(cycle, pod, (node) => ({ ...node, result: state, finishedAt: iso }));
    default:
      // Interrupted, Unknown, NotFound: the node restarted and lost the run; it is started again.
      return update(cycle, pod, (node) => ({ ...node, result: 'Restarting' }));
  }
}

export function markTimedOut(cycle: Cycle, pod: string, nowMs: number): Cycle {
  return update(cycle, pod, (node) => ({ ...node, result: 'TimedOut', finishedAt: new Date(nowMs).toISOString() }));
}

/**
 * The cluster must be held (status.operation Scavenge) while the cycle runs, and only then:
 * not while it is paused, and not while a node of it has no pod (the cluster controller
 * recreates a deleted pod only when nothing holds the cluster). `podMissing`: the cluster's spec
 * has the pod but it does not exist.
 */
export function wantsHold(cycle: Cycle | undefined, suspend: boolean, podMissing: (pod: string) => boolean): boolean {
  if (cycle === undefined || suspend) return false;
  const open = cycle.nodes.filter((node) => ['Pending', 'Resigning', 'InProgress', 'Restarting', 'Stopped', undefined].includes(node.result));
  return !open.some((node) => podMissing(node.pod));
}

/** The state the status reports. */
export function stateOf(cycle: Cycle | undefined, suspend: boolean): ScheduleState {
  if (cycle === undefined) return 'Waiting';
  if (!suspend) return 'InProgress';
  return cycle.nodes.some((node) => node.result === 'InProgress') ? 'Pausing' : 'Paused';
}

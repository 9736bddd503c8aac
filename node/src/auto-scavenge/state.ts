/**
 * The auto-scavenge state machine, pure: events fold into a state (`applyEvent`), commands
 * (configure, pause, resume) decide which events to write and what to answer, and `assess` says
 * what the leader does next given the cluster as gossip sees it and the time. The runtime
 * (service.ts) writes the events, carries out the actions and feeds the results back.
 *
 * The state is event-sourced as in the original: `$configuration-updated` in
 * `$auto-scavenge-configuration`, everything else in `$auto-scavenges`. A new leader rebuilds it
 * from the configuration's last event and from `$auto-scavenges` back to the last completed
 * cluster scavenge.
 *
 * A cluster scavenge runs one node scavenge at a time: the remaining node with the lowest writer
 * checkpoint is designated, followers before the leader; when only the leader is left it
 * resigns and the new leader has it scavenged. Schedules are anchored: the next cycle is the
 * first CRON occurrence after the latest of the last completed cluster scavenge, the last
 * configuration, the last resume and the leader's start, so missed cycles are skipped and
 * configuring does not start a cycle at once.
 */
import { randomUUID } from 'node:crypto';
import { nextOccurrenceMs, tryParseCron } from './cron.js';

export const CONFIGURATION_STREAM = '$auto-scavenge-configuration';
export const AUTO_SCAVENGES_STREAM = '$auto-scavenges';

/** The status endpoint's `state` values. */
export type AutoScavengeStatus = 'NotConfigured' | 'Waiting' | 'InProgress' | 'Pausing' | 'Paused';

/** A cluster member taking part in a cluster scavenge; `nodeId` is its `address:port`. */
export interface NodeRef {
  readonly nodeId: string;
  readonly address: string;
  readonly port: number;
}

/** The node scavenge results the original records. */
export type NodeScavengeResult = 'Success' | 'Stopped' | 'Errored';

export type AutoScavengeEvent =
  | { readonly type: '$configuration-updated'; readonly data: { readonly schedule: string; readonly updatedAt: string } }
  | { readonly type: '$cluster-scavenge-started'; readonly data: { readonly clusterScavengeId: string; readonly members: readonly NodeRef[]; readonly startedAt: string } }
  | { readonly type: '$node-designated'; readonly data: { readonly nodeId: string; readonly designatedAt: string } }
  | { readonly type: '$node-scavenge-started'; readonly data: { readonly nodeId: string; readonly scavengeId: string; readonly startedAt: string } }
  | { readonly type: '$node-scavenge-completed'; readonly data: { readonly nodeId: string; readonly scavengeId: string; readonly completedAt: string; readonly result: NodeScavengeResult } }
  | { readonly type: '$cluster-scavenge-completed'; readonly data: { readonly clusterScavengeId: string; readonly members: readonly NodeRef[]; readonly completedAt: string } }
  | { readonly type: '$cluster-members-changed'; readonly data: { readonly added: readonly NodeRef[]; readonly removed: readonly NodeRef[]; readonly changedAt: string } }
  | { readonly type: '$pause-requested'; readonly data: { readonly requestedAt: string } }
  | { readonly type: '$paused'; readonly data: { readonly pausedAt: string } }
  | { readonly type: '$resumed'; readonly data: { readonly resumedAt: string } };

export type AutoScavengeEventType = AutoScavengeEvent['type'];
export const AUTO_SCAVENGE_EVENT_TYPES: ReadonlySet<string> = new Set<AutoScavengeEventType>([
  '$configuration-updated', '$cluster-scavenge-started', '$node-designated', '$node-scavenge-started',
  '$node-scavenge-completed', '$cluster-scavenge-completed', '$cluster-members-changed', '$pause-requested',
  '$paused', '$resumed',
]);

export interface ClusterScavenge {
  readonly clusterScavengeId: string;
  readonly members: readonly NodeRef[];
  /** Node ids whose node scavenge has completed in this cluster scavenge. */
  readonly done: readonly string[];
  readonly startedAtMs: number;
}

export interface AutoScavengeState {
  readonly schedule: string | undefined;
  /** What the next cycle is computed from (see the module comment). */
  readonly anchorMs: number;
  readonly pause: 'running' | 'pausing' | 'paused';
  readonly cluster: ClusterScavenge | undefined;
  /** The node being scavenged; `scavengeId` once its scavenge was started. */
  readonly designated: { readonly nodeId: string; readonly scavengeId?: string } | undefined;
}

/** The state before any event: anchored at the leader's start. */
export function initialState(leaderStartMs: number): AutoScavengeState {
  return { schedule: undefined, anchorMs: leaderStartMs, pause: 'running', cluster: undefined, designated: undefined };
}

const ms = (iso: string): number => Date.parse(iso);

export function applyEvent(state: AutoScavengeState, event: AutoScavengeEvent): AutoScavengeState {
  switch (event.type) {
    case '$configuration-updated':
      return { ...state, schedule: event.data.schedule, anchorMs: Math.max(state.anchorMs, ms(event.data.updatedAt)) };
    case '$cluster-scavenge-started':
      return {
        ...state,
        cluster: { clusterScavengeId: event.data.clusterScavengeId, members: event.data.members, done: [], startedAtMs: ms(event.data.startedAt) },
        designated: undefined,
      };
    case '$node-designated':
      return { ...state, designated: { nodeId: event.data.nodeId } };
    case '$node-scavenge-started':
      return { ...state, designated: { nodeId: event.data.nodeId, scavengeId: event.data.scavengeId } };
    case '$node-scavenge-completed': {
      const cluster = state.cluster === undefined
        ? undefined
        : { ...state.cluster, done: [...state.cluster.done, event.data.nodeId] };
      return { ...state, cluster, designated: undefined };
    }
    case '$cluster-scavenge-completed':
      return { ...state, cluster: undefined, designated: undefined, anchorMs: Math.max(state.anchorMs, ms(event.data.completedAt)) };
    case '$cluster-members-changed': {
      if (state.cluster === undefined) return state;
      const removed = new Set(event.data.removed.map((m) => m.nodeId));
      const members = [...state.cluster.members.filter((m) => !removed.has(m.nodeId)), ...event.data.added];
      const designated = state.designated !== undefined && removed.has(state.designated.nodeId) ? undefined : state.designated;
      return { ...state, cluster: { ...state.cluster, members }, designated };
    }
    case '$pause-requested':
      return { ...state, pause: 'pausing' };
    case '$paused':
      // A stopped node scavenge is started again (and resumes where it stopped) after resume.
      return {
        ...state, pause: 'paused',
        designated: state.designated === undefined ? undefined : { nodeId: state.designated.nodeId },
      };
    case '$resumed':
      return { ...state, pause: 'running', anchorMs: Math.max(state.anchorMs, ms(event.data.resumedAt)) };
  }
}

export function statusOf(state: AutoScavengeState): AutoScavengeStatus {
  if (state.pause === 'pausing') return 'Pausing';
  if (state.pause === 'paused') return 'Paused';
  if (state.cluster !== undefined) return 'InProgress';
  return state.schedule === undefined ? 'NotConfigured' : 'Waiting';
}

/** When the next cluster scavenge is due (ms since the epoch), if a schedule is set. */
export function nextCycleMs(state: AutoScavengeState): number | undefined {
  if (state.schedule === undefined) return undefined;
  const schedule = tryParseCron(state.schedule);
  return schedule === undefined ? undefined : nextOccurrenceMs(schedule, state.anchorMs);
}

// ---- commands ----------------------------------------------------------------------------

export type CommandOutcome =
  | { readonly status: 200 | 202; readonly events: readonly AutoScavengeEvent[] }
  | { readonly status: 400; readonly message: string };

export const INVALID_CRON_MESSAGE = 'Invalid CRON expression';
export const PAUSING_MESSAGE = 'Auto scavenge process is currently pausing';

export function configure(schedule: string, nowMs: number): CommandOutcome {
  if (tryParseCron(schedule) === undefined) return { status: 400, message: INVALID_CRON_MESSAGE };
  return { status: 200, events: [{ type: '$configuration-updated', data: { schedule: schedule.trim(), updatedAt: iso(nowMs) } }] };
}

/**
 * Pause: at once (200) when no node scavenge is running; otherwise 202, the state is Pausing
 * and the running node scavenge is stopped (assess), after which it is Paused.
 */
export function pause(state: AutoScavengeState, nowMs: number): CommandOutcome {
  if (state.pause === 'paused') return { status: 200, events: [] };
  if (state.pause === 'pausing') return { status: 202, events: [] };
  if (state.designated?.scavengeId !== undefined) {
    return { status: 202, events: [{ type: '$pause-requested', data: { requestedAt: iso(nowMs) } }] };
  }
  return { status: 200, events: [{ type: '$paused', data: { pausedAt: iso(nowMs) } }] };
}

export function resume(state: AutoScavengeState, nowMs: number): CommandOutcome {
  if (state.pause === 'pausing') return { status: 400, message: PAUSING_MESSAGE };
  if (state.pause === 'running') return { status: 200, events: [] };
  return { status: 200, events: [{ type: '$resumed', data: { resumedAt: iso(nowMs) } }] };
}

// ---- what the leader does next -----------------------------------------------------------

/** A voting member as gossip sees it. */
export interface ViewMember extends NodeRef {
  readonly alive: boolean;
  readonly writerCheckpoint: number;
}

export interface ClusterView {
  /** This node (the leader). */
  readonly selfId: string;
  readonly clusterSize: number;
  /** Voting members (read-only replicas are not scavenged by auto-scavenge). */
  readonly members: readonly ViewMember[];
}

export type Action =
  | { readonly kind: 'idle' }
  /** Nothing can be done now; `reason` is logged when it changes. */
  | { readonly kind: 'wait'; readonly reason: string }
  | { readonly kind: 'append'; readonly event: AutoScavengeEvent }
  | { readonly kind: 'resign' }
  | { readonly kind: 'start-node-scavenge'; readonly node: NodeRef }
  | { readonly kind: 'monitor-node-scavenge'; readonly node: NodeRef; readonly scavengeId: string }
  | { readonly kind: 'stop-node-scavenge'; readonly node: NodeRef; readonly scavengeId: string };

/**
 * The node to scavenge next among those not yet done: alive followers first, lowest writer
 * checkpoint first (ties by id); the leader (`selfId`) only when no other remains.
 * Undefined when every remaining node is down.
 */
export function designate(remaining: readonly NodeRef[], view: ClusterView): NodeRef | undefined {
  const alive = new Map(view.members.filter((m) => m.alive).map((m) => [m.nodeId, m]));
  const others = remaining
    .filter((r) => r.nodeId !== view.selfId)
    .map((r) => alive.get(r.nodeId))
    .filter((m): m is ViewMember => m !== undefined)
    .sort((a, b) => a.writerCheckpoint - b.writerCheckpoint || a.nodeId.localeCompare(b.nodeId));
  if (others.length > 0) return refOf(others[0]!);
  if (remaining.some((r) => r.nodeId !== view.selfId)) return undefined; // followers left, all down: wait for them
  const self = remaining.find((r) => r.nodeId === view.selfId);
  return self === undefined ? undefined : refOf(self);
}

function refOf(m: NodeRef): NodeRef {
  return { nodeId: m.nodeId, address: m.address, port: m.port };
}

export function assess(state: AutoScavengeState, view: ClusterView, nowMs: number): Action {
  if (state.pause === 'paused') return { kind: 'idle' };
  const cluster = state.cluster;
  if (state.pause === 'pausing') {
    const designated = state.designated;
    const node = designated === undefined ? undefined : cluster?.members.find((m) => m.nodeId === designated.nodeId);
    if (designated?.scavengeId !== undefined && node !== undefined) {
      return { kind: 'stop-node-scavenge', node, scavengeId: designated.scavengeId };
    }
    return { kind: 'append', event: { type: '$paused', data: { pausedAt: iso(nowMs) } } };
  }
  if (cluster === undefined) {
    const next = nextCycleMs(state);
    if (next === undefined || nowMs < next) return { kind: 'idle' };
    const alive = view.members.filter((m) => m.alive);
    if (alive.length < view.clusterSize) {
      return { kind: 'wait', reason: `a cluster scavenge is due but only ${alive.length} of ${view.clusterSize} nodes are alive` };
    }
    return {
      kind: 'append',
      event: { type: '$cluster-scavenge-started', data: { clusterScavengeId: randomUUID(), members: alive.map(refOf), startedAt: iso(nowMs) } },
    };
  }
  const known = new Set(view.members.map((m) => m.nodeId));
  const removed = cluster.members.filter((m) => !known.has(m.nodeId));
  if (removed.length > 0) {
    return { kind: 'append', event: { type: '$cluster-members-changed', data: { added: [], removed, changedAt: iso(nowMs) } } };
  }
  const designated = state.designated;
  if (designated !== undefined) {
    const node = cluster.members.find((m) => m.nodeId === designated.nodeId)!;
    const alive = view.members.some((m) => m.nodeId === node.nodeId && m.alive);
    if (designated.scavengeId === undefined) {
      if (node.nodeId === view.selfId && view.clusterSize > 1) return { kind: 'resign' };
      if (!alive) return { kind: 'wait', reason: `the designated node ${node.nodeId} is down; its scavenge starts when it is back` };
      return { kind: 'start-node-scavenge', node };
    }
    if (!alive) return { kind: 'wait', reason: `the node being scavenged, ${node.nodeId}, is down; waiting for it to come back` };
    return { kind: 'monitor-node-scavenge', node, scavengeId: designated.scavengeId };
  }
  const done = new Set(cluster.done);
  const remaining = cluster.members.filter((m) => !done.has(m.nodeId));
  if (remaining.length === 0) {
    return {
      kind: 'append',
      event: { type: '$cluster-scavenge-completed', data: { clusterScavengeId: cluster.clusterScavengeId, members: cluster.members, completedAt: iso(nowMs) } },
    };
  }
  const next = designate(remaining, view);
  if (next === undefined) return { kind: 'wait', reason: `the nodes left to scavenge (${remaining.map((r) => r.nodeId).join(', ')}) are down` };
  return { kind: 'append', event: { type: '$node-designated', data: { nodeId: next.nodeId, designatedAt: iso(nowMs) } } };
}

/** What a node scavenge's observed status means for the cycle. */
export type ObservedNodeScavenge = 'InProgress' | NodeScavengeResult | 'Interrupted' | 'Unknown' | 'NotFound';

/**
 * The event for an observed status: none while it runs; completed with its result when it
 * ended; designated again (so it starts again and resumes) when the node lost it (a restart).
 */
export function onNodeScavengeObserved(
  nodeId: string,
  scavengeId: string,
  observed: ObservedNodeScavenge,
  nowMs: number,
): AutoScavengeEvent | undefined {
  switch (observed) {
    case 'InProgress':
      return undefined;
    case 'Success':
    case 'Stopped':
    case 'Errored':
      return { type: '$node-scavenge-completed', data: { nodeId, scavengeId, completedAt: iso(nowMs), result: observed } };
    case 'Interrupted':
    case 'Unknown':
    case 'NotFound':
      return { type: '$node-designated', data: { nodeId, designatedAt: iso(nowMs) } };
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

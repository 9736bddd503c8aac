/**
 * Reconciling one ScavengeSchedule: a straight list of short, named, idempotent steps. The cycle
 * in progress lives in the schedule's status (currentCycle), the cluster's turn in the
 * annotation eventdb.io/scavenge-hold, so a restarted operator resumes where the last one stopped.
 *
 *   load-spec             parse the spec, check the CRON and time zone (invalid: Ready=False InvalidSpec)
 *   find-cluster          the EventDBCluster named by spec.cluster
 *   observe-nodes         the cluster's pods and each running node's own gossip
 *   check-node-auto-scavenge  nodes running their licensed auto-scavenge: the operator runs no cycle
 *   schedule              next occurrence; a due one starts a cycle (not when suspended, not outside
 *                         a maintenance window, not while a cycle runs)
 *   hold                  take the cluster's one disruptive operation (kind Scavenge) while the cycle
 *                         runs; give it back when paused, finished, or when a node's pod is gone
 *   run-cycle             the planner's next actions: check, stop, start, resign, wait, finish
 */
import type { OperatorMetrics } from '../../runtime/metrics.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { parseDurationMs } from '../../api/common.js';
import type { EventDBClusterStatus } from '../../api/eventdb-cluster.js';
import { ANNOTATION_BACKUP_HOLD, ANNOTATION_SCAVENGE_HOLD } from '../../api/group.js';
import { ScavengeScheduleSpec, type ScavengeSchedule } from '../../api/scavenge-schedule.js';
import type { NodeAccess } from '../../node-client/node-access.js';
import type { Credentials, NodeClient, NodeEndpoint } from '../../node-client/node-client.js';
import { effectiveSpec, type EffectiveSpec, type OperatorDefaults } from '../../resources/effective-spec.js';
import { podName, replicaPodName } from '../../resources/names.js';
import { canonicalJson } from '../../resources/revision.js';
import type { Clock } from '../../runtime/clock.js';
import { setCondition, setKstatusConditions, type KstatusInput } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileResult } from '../../runtime/controller.js';
import type { EventInput, EventSink } from '../../runtime/events.js';
import type { InformerSet } from '../../runtime/informer-set.js';
import { isNotFound, type KubeApi, type KubeObject } from '../../runtime/kube-api.js';
import { runSteps, type Step, type StepOutcome } from '../../runtime/steps.js';
import { EVENTDB_CLUSTERS, SCAVENGE_SCHEDULES } from '../../runtime/resource-types.js';
import { nodeTrustCertificates, opsCredentials } from '../eventdbcluster/children.js';
import { windowState } from '../eventdbcluster/maintenance-window.js';
import { clusterTurn } from '../cluster-turn.js';
import { leaderOf, nodeEndpoint, observeMembers, podView, type ObservedMember, type PodView } from '../eventdbcluster/observe.js';
import {
  applyRunState,
  checkSchedule,
  formatTimeUntil,
  markResigning,
  markStarted,
  markTimedOut,
  newCycle,
  nextOccurrenceMs,
  planCycle,
  removeLeftNodes,
  scheduleAt,
  stateOf,
  trimHistory,
  wantsHold,
  type Cycle,
  type CycleAction,
  type MemberView,
} from './scavenge-plan.js';

export interface ScavengeScheduleControllerDeps {
  readonly api: KubeApi;
  readonly schedules: InformerSet;
  readonly clusters: InformerSet;
  readonly pods: InformerSet;
  readonly client: NodeClient;
  readonly access: NodeAccess;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly defaults: OperatorDefaults;
  /** The status last written for each schedule (by uid): the informer's copy may lag behind it. */
  readonly writtenStatus: Map<string, Record<string, unknown>>;
  /** Cycle figures (finished cycles, durations, last cycle per result); none without it. */
  readonly metrics?: OperatorMetrics;
}

export const CYCLE_REQUEUE_MS = 2000;
const IDLE_REQUEUE_MAX_MS = 60_000;
const RESIGN_RETRY_MS = 30_000;
/** Actions carried out in one reconcile at most (a finished node check is followed by the next start). */
const ACTIONS_PER_RECONCILE = 4;

type Status = NonNullable<ScavengeSchedule['status']>;
type Condition = { status: 'True' | 'False'; reason: string; message: string };

interface State {
  readonly deps: ScavengeScheduleControllerDeps;
  readonly log: Logger;
  readonly object: KubeObject;
  readonly name: string;
  readonly namespace: string;
  readonly previous: Status;
  /** The state the status said when this reconcile began (Paused: a resume emits CycleResumed). */
  readonly stateBefore: string | undefined;
  readonly nowMs: number;
  status: Status;
  spec?: ScavengeScheduleSpec;
  cluster?: KubeObject;
  clusterSpec?: EffectiveSpec;
  pods: PodView[];
  members: Map<string, ObservedMember>;
  leader: string | undefined;
  endpoints: Map<string, NodeEndpoint>;
  credentials?: Credentials;
  ready: Condition;
  progressing: Condition;
  requeueAfterMs: number | undefined;
}

export const SCAVENGE_SCHEDULE_STEPS: readonly Step<State>[] = [
  { name: 'load-spec', run: loadSpec },
  { name: 'find-cluster', run: findCluster },
  { name: 'observe-nodes', run: observeNodes },
  { name: 'check-node-auto-scavenge', run: checkNodeAutoScavenge },
  { name: 'schedule', run: schedule },
  { name: 'hold', run: hold },
  { name: 'run-cycle', run: runCycle },
];

export async function reconcileScavengeSchedule(deps: ScavengeScheduleControllerDeps, context: ReconcileContext): Promise<ReconcileResult> {
  const object = deps.schedules.get(context.key);
  if (object === undefined || object.metadata.deletionTimestamp !== undefined) return {};
  const written = deps.writtenStatus.get(object.metadata.uid ?? '');
  const previous = structuredClone((written ?? object['status'] ?? {}) as Status);
  const state: State = {
    deps,
    log: context.log,
    object,
    name: object.metadata.name ?? '',
    namespace: object.metadata.namespace ?? '',
    previous,
    stateBefore: previous.state,
    nowMs: deps.clock.nowMs(),
    status: { ...previous },
    pods: [],
    members: new Map(),
    leader: undefined,
    endpoints: new Map(),
    ready: { status: 'True', reason: 'Scheduled', message: 'cycles run on schedule' },
    progressing: { status: 'False', reason: 'Waiting', message: 'waiting for the next cycle' },
    requeueAfterMs: IDLE_REQUEUE_MAX_MS,
  };
  await runSteps(SCAVENGE_SCHEDULE_STEPS, state, {
    log: context.log,
    onError: async (err) => {
      state.ready = { status: 'False', reason: 'ReconcileError', message: err instanceof Error ? err.message : String(err) };
      await writeStatus(state).catch((statusErr: unknown) => context.log.warn({ err: statusErr }, 'scavenge schedule status not written'));
    },
  });
  await writeStatus(state);
  // the last cycle of each result, from status.history: a new leader reports them at once
  for (const result of ['Success', 'Failed']) {
    const last = state.status.history?.find((entry) => entry.result === result && entry.finishedAt !== undefined);
    const atMs = last?.finishedAt === undefined ? NaN : Date.parse(last.finishedAt);
    if (!Number.isNaN(atMs)) deps.metrics?.scavengeLastCycle.set({ namespace: state.namespace, schedule: state.name, result }, atMs / 1000);
  }
  return state.requeueAfterMs === undefined ? {} : { requeueAfterMs: state.requeueAfterMs };
}

async function emit(state: State, event: EventInput): Promise<void> {
  state.log.info({ reason: event.reason, eventType: event.type }, event.note);
  await state.deps.events.record(state.object, event);
}

const iso = (ms: number): string => new Date(ms).toISOString();

async function loadSpec(state: State): Promise<StepOutcome> {
  const parsed = ScavengeScheduleSpec.safeParse(state.object['spec']);
  const problem = parsed.success
    ? checkSchedule(parsed.data.schedule, parsed.data.timeZone)
    : parsed.error.issues.map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`).join('; ');
  if (!parsed.success || problem !== undefined) {
    const message = problem ?? 'invalid spec';
    if (state.previous.conditions?.find((c) => c.type === 'Ready')?.message !== message) {
      await emit(state, { type: 'Warning', reason: 'InvalidSpec', action: 'Validate', note: message });
    }
    state.ready = { status: 'False', reason: 'InvalidSpec', message };
    state.status = { ...state.status, state: state.status.currentCycle === undefined ? 'NotConfigured' : (state.status.state ?? 'NotConfigured') };
    state.requeueAfterMs = undefined;
    return 'stop';
  }
  state.spec = parsed.data;
  // A changed schedule or zone: the next occurrence is computed afresh.
  if (state.object.metadata.generation !== state.previous.observedGeneration) {
    const { nextScheduleTime: _next, ...rest } = state.status;
    state.status = rest;
  }
  return 'continue';
}

async function findCluster(state: State): Promise<StepOutcome> {
  const spec = state.spec as ScavengeScheduleSpec;
  state.cluster = state.deps.clusters.get(`${state.namespace}/${spec.cluster.name}`);
  if (state.cluster === undefined) {
    state.ready = { status: 'False', reason: 'ClusterNotFound', message: `EventDBCluster ${spec.cluster.name} not found` };
    if (state.status.currentCycle !== undefined) await finishCycle(state, 'Failed', `cluster ${spec.cluster.name} went away during the cycle`);
    state.status = { ...state.status, state: 'Waiting' };
    state.requeueAfterMs = 15_000;
    return 'stop';
  }
  const check = effectiveSpec(spec.cluster.name, state.cluster['spec'], state.deps.defaults);
  if (!check.ok) {
    state.ready = { status: 'False', reason: 'InvalidClusterSpec', message: `cluster ${spec.cluster.name}: ${check.issues.join('; ')}` };
    state.requeueAfterMs = 30_000;
    return 'stop';
  }
  state.clusterSpec = check.spec;
  return 'continue';
}

async function observeNodes(state: State): Promise<StepOutcome> {
  const cluster = state.cluster as KubeObject;
  const name = cluster.metadata.name ?? '';
  const spec = state.clusterSpec as EffectiveSpec;
  state.pods = state.deps.pods
    .list((pod) => pod.metadata.namespace === state.namespace && pod.metadata.labels?.['eventdb.io/cluster'] === name)
    .map((pod) => podView(name, pod))
    .filter((pod): pod is PodView => pod !== undefined)
    .sort((a, b) => a.name.localeCompare(b.name));
  const identity = { name, namespace: state.namespace, uid: cluster.metadata.uid ?? '' };
  let trustRead: Awaited<ReturnType<typeof nodeTrustCertificates>> | undefined;
  const trust = async (): Promise<Awaited<ReturnType<typeof nodeTrustCertificates>>> => (trustRead ??= await nodeTrustCertificates(state.deps.api, identity, spec));
  state.members = await observeMembers({ cluster: name, namespace: state.namespace, pods: state.pods, client: state.deps.client, access: state.deps.access, trust });
  state.leader = leaderOf(state.members);
  const running = state.pods.filter((pod) => pod.phase === 'Running' && !pod.terminating);
  const clusterTrust = running.some((pod) => pod.servesTls) ? await trust() : undefined;
  for (const pod of running) {
    const endpoint = await nodeEndpoint({ cluster: name, namespace: state.namespace, pod, access: state.deps.access, trust: clusterTrust });
    if (endpoint !== undefined && !('problem' in endpoint)) state.endpoints.set(pod.name, endpoint);
  }
  const credentials = await opsCredentials(state.deps.api, state.namespace, spec);
  if (credentials !== undefined) state.credentials = credentials;
  return 'continue';
}

/**
 * With a licence (spec.licenseSecret) the nodes may run the node's own auto-scavenge: asked of a
 * node (GET /auto-scavenge/enabled). Then they scavenge the cluster themselves and the operator
 * runs no cycle of its own (two schedulers would scavenge nodes at once).
 */
async function checkNodeAutoScavenge(state: State): Promise<StepOutcome> {
  const spec = state.clusterSpec as EffectiveSpec;
  if (spec.licenseSecret === undefined || state.credentials === undefined) return 'continue';
  const askable = [...state.members.values()].filter((member) => member.alive && state.endpoints.has(member.pod));
  let enabled = false;
  for (const member of askable) {
    try {
      enabled = await state.deps.client.autoScavengeEnabled(state.endpoints.get(member.pod) as NodeEndpoint, state.credentials);
      break;
    } catch (err: unknown) {
      state.log.debug({ err, pod: member.pod }, 'auto-scavenge/enabled not answered');
    }
  }
  if (!enabled) return 'continue';
  const message = `the nodes of cluster ${clusterName(state)} run their licensed auto-scavenge (GET /auto-scavenge/enabled is true): configure it there (POST /auto-scavenge/configure); this schedule runs no cycle`;
  if (state.previous.conditions?.find((c) => c.type === 'Ready')?.reason !== 'NodeAutoScavenge') {
    await emit(state, { type: 'Warning', reason: 'NodeAutoScavenge', action: 'Schedule', note: message });
  }
  await releaseHold(state);
  const { nextScheduleTime: _n, timeUntilNextCycle: _t, ...rest } = state.status;
  state.status = { ...rest, state: 'NotConfigured' };
  state.ready = { status: 'False', reason: 'NodeAutoScavenge', message };
  state.progressing = { status: 'False', reason: 'NodeAutoScavenge', message: 'the nodes schedule their own scavenges' };
  state.requeueAfterMs = IDLE_REQUEUE_MAX_MS;
  return 'stop';
}

function clusterName(state: State): string {
  return state.cluster?.metadata.name ?? '';
}

function memberViews(state: State): MemberView[] {
  return [...state.members.values()].map((member) => ({
    pod: member.pod,
    role: member.role,
    alive: member.alive,
    ...(member.writerCheckpoint === undefined ? {} : { writerCheckpoint: member.writerCheckpoint }),
  }));
}

function expectedPods(state: State): Set<string> {
  const spec = state.clusterSpec as EffectiveSpec;
  const names = new Set<string>();
  for (let i = 0; i < spec.replicas; i++) names.add(podName(clusterName(state), i));
  for (let i = 0; i < spec.readOnlyReplicas; i++) names.add(replicaPodName(clusterName(state), i));
  return names;
}

async function schedule(state: State): Promise<StepOutcome> {
  const spec = state.spec as ScavengeScheduleSpec;
  const at = scheduleAt({
    schedule: spec.schedule,
    timeZone: spec.timeZone,
    nextScheduleMs: state.status.nextScheduleTime === undefined ? undefined : Date.parse(state.status.nextScheduleTime),
    nowMs: state.nowMs,
  });
  let nextMs = at.nextMs;
  if (at.due && (state.status.currentCycle !== undefined || spec.suspend)) {
    // Due while a cycle runs or while suspended: that occurrence is skipped, not made up later.
    nextMs = nextOccurrenceMs(spec.schedule, spec.timeZone, state.nowMs);
  } else if (at.due) {
    const started = await startCycle(state);
    if (started) nextMs = nextOccurrenceMs(spec.schedule, spec.timeZone, state.nowMs);
  }
  const { nextScheduleTime: _n, timeUntilNextCycle: _t, ...rest } = state.status;
  state.status = {
    ...rest,
    ...(nextMs === undefined ? {} : { nextScheduleTime: iso(nextMs), timeUntilNextCycle: formatTimeUntil(nextMs - state.nowMs) }),
    state: stateOf(state.status.currentCycle as Cycle | undefined, spec.suspend),
  };
  if (state.status.currentCycle === undefined) {
    if (state.progressing.reason === 'Waiting') {
      state.progressing = spec.suspend
        ? { status: 'False', reason: 'Suspended', message: 'spec.suspend is true: no cycle starts' }
        : { status: 'False', reason: 'Waiting', message: nextMs === undefined ? 'the schedule has no next occurrence' : `next cycle at ${iso(nextMs)}` };
    }
    state.requeueAfterMs = nextMs === undefined ? undefined : Math.max(1000, Math.min(IDLE_REQUEUE_MAX_MS, nextMs - state.nowMs + 200));
    if (at.due && state.progressing.reason !== 'Waiting' && state.progressing.reason !== 'Suspended') state.requeueAfterMs = Math.min(state.requeueAfterMs ?? 15_000, 15_000);
    return 'stop';
  }
  return 'continue';
}

/** A due cycle: started when a maintenance window is open (if the cluster has any) and every node is up. */
async function startCycle(state: State): Promise<boolean> {
  const spec = state.spec as ScavengeScheduleSpec;
  const clusterSpec = state.clusterSpec as EffectiveSpec;
  if (spec.respectMaintenanceWindows) {
    const window = windowState(clusterSpec.maintenanceWindows, state.nowMs);
    if (!window.open) {
      state.progressing = { status: 'False', reason: 'WaitingForMaintenanceWindow', message: `a cycle is due; it starts when a maintenance window opens${window.opensAtMs === undefined ? '' : ` (${iso(window.opensAtMs)})`}` };
      return false;
    }
  }
  const members = memberViews(state);
  const expected = expectedPods(state);
  const up = members.filter((member) => member.alive && expected.has(member.pod));
  if (state.leader === undefined || up.length < expected.size) {
    state.progressing = { status: 'False', reason: 'WaitingForCluster', message: `a cycle is due; it starts when every node is up and one leads (${up.length} of ${expected.size} up)` };
    return false;
  }
  const cycle = newCycle(randomUUID(), state.nowMs, up, state.leader);
  state.status = { ...state.status, currentCycle: cycle as Status['currentCycle'] };
  await emit(state, { type: 'Normal', reason: 'CycleStarted', action: 'Scavenge', note: `scavenge cycle ${cycle.id} of cluster ${clusterName(state)}: ${cycle.nodes.map((node) => node.pod).join(', ')} (followers first, the leader last)` });
  return true;
}

function holdValue(state: State): string {
  return `${state.name}/${(state.status.currentCycle as Cycle).id}`;
}

async function patchHold(state: State, value: string | null): Promise<void> {
  const cluster = state.cluster as KubeObject;
  try {
    await state.deps.api.patch(EVENTDB_CLUSTERS, state.namespace, cluster.metadata.name ?? '', { metadata: { annotations: { [ANNOTATION_SCAVENGE_HOLD]: value } } });
  } catch (err: unknown) {
    if (!isNotFound(err)) throw err;
  }
}

async function releaseHold(state: State): Promise<void> {
  const current = state.cluster?.metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD];
  if (current !== undefined && current.startsWith(`${state.name}/`)) await patchHold(state, null);
}

/** The cluster's status names this cycle as its operation: node work may go on. */
function holdAcknowledged(state: State): boolean {
  const operation = ((state.cluster as KubeObject)['status'] as EventDBClusterStatus | undefined)?.operation;
  return operation?.kind === 'Scavenge' && operation.id === (state.status.currentCycle as Cycle | undefined)?.id;
}

async function hold(state: State): Promise<StepOutcome> {
  const spec = state.spec as ScavengeScheduleSpec;
  const cycle = state.status.currentCycle as Cycle;
  const present = new Set(state.pods.map((pod) => pod.name));
  const expected = expectedPods(state);
  if (!wantsHold(cycle, spec.suspend, (pod) => expected.has(pod) && !present.has(pod))) {
    await releaseHold(state);
    return 'continue';
  }
  const cluster = state.cluster as KubeObject;
  if (cluster.metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD] === holdValue(state)) return 'continue';
  // One disruptive operation at a time: no rolling update, scale or backup runs or holds the cluster.
  const status = cluster['status'] as EventDBClusterStatus | undefined;
  // A certificate rotation does not count (clusterTurn): the hold takes the operation from it.
  const turn = clusterTurn(status, (cluster['spec'] as { replicas?: number } | undefined)?.replicas);
  const backupHold = cluster.metadata.annotations?.[ANNOTATION_BACKUP_HOLD];
  if (!turn.ok || backupHold !== undefined) {
    const why = !turn.ok ? turn.why : `backup ${backupHold?.split('/')[0] ?? ''} holds the cluster`;
    state.progressing = { status: 'True', reason: 'WaitingForTurn', message: `${why}; the cycle goes on after it` };
    return 'continue';
  }
  // Status first: the cluster controller checks the hold against the schedule's currentCycle.
  await writeStatus(state);
  await patchHold(state, holdValue(state));
  return 'continue';
}

async function runCycle(state: State): Promise<StepOutcome> {
  const spec = state.spec as ScavengeScheduleSpec;
  state.requeueAfterMs = CYCLE_REQUEUE_MS;
  const expected = expectedPods(state);
  const wasPaused = state.stateBefore === 'Paused';
  for (let i = 0; i < ACTIONS_PER_RECONCILE; i++) {
    const current = state.status.currentCycle as Cycle | undefined;
    if (current === undefined) return 'stop';
    const cycle = removeLeftNodes(current, expected);
    state.status = { ...state.status, currentCycle: cycle as Status['currentCycle'] };
    const action = planCycle({
      cycle,
      members: new Map(memberViews(state).map((member) => [member.pod, member])),
      leader: state.leader,
      expectedPods: expected,
      votingNodes: (state.clusterSpec as EffectiveSpec).replicas,
      suspend: spec.suspend,
      nowMs: state.nowMs,
      nodeTimeoutMs: parseDurationMs(spec.nodeTimeout),
      resignRetryMs: RESIGN_RETRY_MS,
    });
    if (wasPaused && !spec.suspend && i === 0) {
      await emit(state, { type: 'Normal', reason: 'CycleResumed', action: 'Scavenge', note: `spec.suspend is false: cycle ${cycle.id} resumes on the nodes left` });
    }
    const more = await act(state, cycle, action);
    state.status = { ...state.status, state: stateOf(state.status.currentCycle as Cycle | undefined, spec.suspend) };
    if (!more) break;
  }
  return 'continue';
}

function nodeOf(state: State, pod: string): { endpoint: NodeEndpoint; credentials: Credentials } | undefined {
  const endpoint = state.endpoints.get(pod);
  return endpoint === undefined || state.credentials === undefined ? undefined : { endpoint, credentials: state.credentials };
}

function setCycle(state: State, cycle: Cycle): void {
  state.status = { ...state.status, currentCycle: cycle as Status['currentCycle'] };
}

/** Carries one action out; true when the next one may follow in this reconcile. */
async function act(state: State, cycle: Cycle, action: CycleAction): Promise<boolean> {
  const spec = state.spec as ScavengeScheduleSpec;
  const where = (pod: string) => nodeOf(state, pod);
  switch (action.kind) {
    case 'wait':
      state.progressing = { status: 'True', reason: action.reason, message: action.message };
      return false;
    case 'paused':
      state.progressing = { status: 'False', reason: 'Paused', message: `spec.suspend is true: cycle ${cycle.id} is paused; false resumes it on the nodes left` };
      if (state.stateBefore !== 'Paused') await emit(state, { type: 'Normal', reason: 'CyclePaused', action: 'Scavenge', note: `cycle ${cycle.id} paused (spec.suspend)` });
      state.requeueAfterMs = 15_000;
      return false;
    case 'finish':
      await finishCycle(state, action.result, action.message);
      return false;
    case 'check': {
      const node = where(action.pod);
      if (node === undefined) return false;
      const observed = await state.deps.client.scavengeState(node.endpoint, node.credentials, action.scavengeId).catch(() => undefined);
      state.progressing = { status: 'True', reason: 'NodeScavenging', message: `${action.pod} is being scavenged (${action.scavengeId})` };
      if (observed === undefined || observed === 'InProgress') return false;
      setCycle(state, applyRunState(cycle, action.pod, observed, state.nowMs));
      const result = (state.status.currentCycle as Cycle).nodes.find((n) => n.pod === action.pod)?.result;
      if (result === 'Restarting') {
        await emit(state, { type: 'Warning', reason: 'NodeScavengeLost', action: 'Scavenge', note: `${action.pod} lost its scavenge ${action.scavengeId} (${observed}): it is started again (cycle ${cycle.id})` });
      } else {
        await emit(state, { type: result === 'Success' ? 'Normal' : 'Warning', reason: 'NodeScavengeFinished', action: 'Scavenge', note: `${action.pod}: scavenge ${action.scavengeId} ${result ?? observed} (cycle ${cycle.id})` });
      }
      return true;
    }
    case 'stop': {
      const node = where(action.pod);
      if (node === undefined) return false;
      state.progressing = { status: 'True', reason: action.why === 'suspend' ? 'Pausing' : 'NodeTimeout', message: `stopping the scavenge of ${action.pod}` };
      const outcome = await state.deps.client.stopScavenge(node.endpoint, node.credentials, action.scavengeId);
      if (outcome.kind !== 'done') return false;
      const observed = await state.deps.client.scavengeState(node.endpoint, node.credentials, action.scavengeId).catch(() => 'Stopped' as const);
      if (action.why === 'timeout') {
        setCycle(state, markTimedOut(cycle, action.pod, state.nowMs));
        await emit(state, { type: 'Warning', reason: 'NodeScavengeTimedOut', action: 'Scavenge', note: `${action.pod}: scavenge ${action.scavengeId} ran longer than nodeTimeout ${spec.nodeTimeout} and was stopped` });
        await finishCycle(state, 'Failed', `${action.pod} did not finish within nodeTimeout ${spec.nodeTimeout}`);
        return false;
      }
      setCycle(state, applyRunState(cycle, action.pod, observed === 'InProgress' ? 'Stopped' : observed, state.nowMs));
      await emit(state, { type: 'Normal', reason: 'NodeScavengeStopped', action: 'Scavenge', note: `spec.suspend: the scavenge of ${action.pod} (${action.scavengeId}) was stopped; it resumes when the cycle ${cycle.id} does` });
      return true;
    }
    case 'resign': {
      if (!holdAcknowledged(state)) return waitForTurn(state);
      const node = where(action.pod);
      if (node === undefined) return false;
      setCycle(state, markResigning(cycle, action.pod, state.nowMs));
      await writeStatus(state);
      await emit(state, { type: 'Normal', reason: 'LeaderResignRequested', action: 'Resign', note: `${action.pod} leads: asked to resign so that it is scavenged as a follower (cycle ${cycle.id})` });
      const outcome = await state.deps.client.resign(node.endpoint, node.credentials);
      if (outcome.kind !== 'done') {
        await emit(state, { type: 'Warning', reason: 'ResignRefused', action: 'Resign', note: `${action.pod} did not resign: ${outcome.kind === 'refused' ? `${outcome.statusCode} ${outcome.message}` : 'unsupported'}` });
      }
      state.progressing = { status: 'True', reason: 'WaitingForNewLeader', message: `${action.pod} was asked to resign` };
      return false;
    }
    case 'start': {
      if (!holdAcknowledged(state)) return waitForTurn(state);
      const node = where(action.pod);
      if (node === undefined) return false;
      const before = cycle.nodes.find((n) => n.pod === action.pod);
      const outcome = await state.deps.client.startScavenge(node.endpoint, node.credentials, { threshold: spec.threshold, throttlePercent: spec.throttlePercent, threads: spec.threads });
      if (outcome.kind !== 'started') {
        const message = `${action.pod} refused POST /admin/scavenge: ${outcome.kind === 'refused' ? `${outcome.statusCode} ${outcome.message}` : 'unsupported'}`;
        state.progressing = { status: 'True', reason: 'NodeRefused', message };
        await emit(state, { type: 'Warning', reason: 'NodeScavengeRefused', action: 'Scavenge', note: message });
        return false;
      }
      const role = state.members.get(action.pod)?.role;
      setCycle(state, markStarted(cycle, action.pod, outcome.scavengeId, role, state.nowMs));
      const again = before?.result === 'Restarting' || before?.result === 'Stopped';
      await emit(state, { type: 'Normal', reason: again ? 'NodeScavengeRestarted' : 'NodeScavengeStarted', action: 'Scavenge', note: `${action.pod} (${before?.role ?? role ?? 'node'}): scavenge ${outcome.scavengeId}${again ? ', started again' : ''} (cycle ${cycle.id})` });
      state.progressing = { status: 'True', reason: 'NodeScavenging', message: `${action.pod} is being scavenged (${outcome.scavengeId})` };
      return false;
    }
  }
}

function waitForTurn(state: State): boolean {
  if (state.progressing.reason !== 'WaitingForTurn') {
    state.progressing = { status: 'True', reason: 'WaitingForTurn', message: 'waiting for the cluster to take the scavenge as its operation' };
  }
  return false;
}

async function finishCycle(state: State, result: 'Success' | 'Failed', message: string): Promise<void> {
  const spec = state.spec as ScavengeScheduleSpec;
  const cycle = state.status.currentCycle as Cycle;
  const finishedAt = iso(state.nowMs);
  const { currentCycle: _c, ...rest } = state.status;
  state.status = { ...rest, history: trimHistory(state.status.history ?? [], { id: cycle.id, startedAt: cycle.startedAt, finishedAt, result }, spec?.historyLimit ?? 10), state: 'Waiting' };
  await releaseHold(state);
  state.progressing = { status: 'False', reason: result === 'Success' ? 'CycleCompleted' : 'CycleFailed', message: `cycle ${cycle.id}: ${message}` };
  if (result === 'Failed') state.ready = { status: 'False', reason: 'CycleFailed', message: `cycle ${cycle.id} failed: ${message}` };
  await emit(state, { type: result === 'Success' ? 'Normal' : 'Warning', reason: result === 'Success' ? 'CycleCompleted' : 'CycleFailed', action: 'Scavenge', note: `cycle ${cycle.id}: ${message}` });
  state.requeueAfterMs = 1000;
  state.deps.metrics?.scavengeCycles.inc({ namespace: state.namespace, schedule: state.name, result });
  const seconds = (state.nowMs - Date.parse(cycle.startedAt)) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0) state.deps.metrics?.scavengeCycleSeconds.observe({ result }, seconds);
}

/** Reasons of Ready=False the schedule cannot get past without a change by someone. */
const STALLED_REASONS = new Set(['InvalidSpec', 'InvalidClusterSpec', 'NodeAutoScavenge']);
/** Reasons of Ready=False the operator is still working on or waiting out. */
const RECONCILING_REASONS = new Set(['ClusterNotFound', 'ReconcileError']);

/**
 * kstatus of a schedule: Stalled for what needs a user's change, Reconciling while its cluster is
 * missing or a reconcile failed; a running or failed cycle is neither (Progressing and Ready say it).
 */
export function scheduleKstatus(ready: Condition): KstatusInput {
  const why = { reason: ready.reason, message: ready.message };
  return {
    ready,
    ...(ready.status !== 'True' && STALLED_REASONS.has(ready.reason) ? { stalled: why } : {}),
    ...(ready.status !== 'True' && RECONCILING_REASONS.has(ready.reason) ? { reconciling: why } : {}),
  };
}

async function writeStatus(state: State): Promise<void> {
  const nowIso = iso(state.nowMs);
  const generation = state.object.metadata.generation;
  // The last cycle failed and no other ran since: Ready says so until one succeeds.
  if (state.ready.reason === 'Scheduled' && state.status.currentCycle === undefined && state.status.history?.[0]?.result === 'Failed') {
    state.ready = { status: 'False', reason: 'CycleFailed', message: `the last cycle (${state.status.history[0].id}) failed` };
  }
  let conditions = setKstatusConditions(state.status.conditions, scheduleKstatus(state.ready), generation, nowIso);
  conditions = setCondition(conditions, { type: 'Progressing', ...state.progressing }, generation, nowIso);
  const status: Status = { ...state.status, ...(generation === undefined ? {} : { observedGeneration: generation }), conditions };
  if (status.nextScheduleTime !== undefined) status.timeUntilNextCycle = formatTimeUntil(Date.parse(status.nextScheduleTime) - state.nowMs);
  // Written only when something changed: timeUntilNextCycle (and lastCheckTime) alone do not
  // count, so they are as of the last write (at least every cycle: nextScheduleTime changes then).
  const comparable = (value: Status): string => canonicalJson({ ...value, timeUntilNextCycle: undefined, lastCheckTime: undefined });
  if (comparable(status) === comparable(state.previous)) return;
  status.lastCheckTime = nowIso;
  try {
    await state.deps.api.apply(
      SCAVENGE_SCHEDULES,
      { apiVersion: state.object.apiVersion, kind: state.object.kind, metadata: { name: state.name, namespace: state.namespace }, status },
      { force: true, subresource: 'status' },
    );
  } catch (err: unknown) {
    if (isNotFound(err)) return;
    throw err;
  }
  for (const key of Object.keys(state.previous)) delete (state.previous as Record<string, unknown>)[key];
  Object.assign(state.previous, structuredClone(status));
  state.deps.writtenStatus.set(state.object.metadata.uid ?? '', structuredClone(status));
}

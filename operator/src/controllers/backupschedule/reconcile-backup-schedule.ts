/**
 * Reconciling one BackupSchedule: a straight list of short, named, idempotent steps. Everything
 * it needs is in the schedule's status (lastScheduleTime, lastSkippedTime) and its Backups
 * (found by the label `eventdb.io/backup-schedule`), so a restarted operator goes on where the
 * last one stopped; a Backup created just before a crash is found by its name, never made twice.
 *
 *   load-spec         parse the spec, check the CRON and the zone (invalid: Stalled, nothing done)
 *   find-cluster      the EventDBCluster named by spec.cluster (missing: Reconciling, waiting for it)
 *   observe-backups   this schedule's Backups from the informer cache
 *   create-due-backup the latest due time: create its Backup, wait for the running one, or skip it
 *   prune             keep: the oldest finished Backups beyond `keep` get ttl 0s, and the Backup
 *                     controller deletes them (a file copy's folder first)
 *
 * The status (lastScheduleTime, nextScheduleTime, lastSuccessfulBackup, active, Ready /
 * Reconciling / Stalled) is written at the end, and only when it changed.
 */
import type { Logger } from 'pino';
import { isKnownTimeZone, parseDurationMs } from '../../api/common.js';
import { BackupScheduleSpec, type BackupSchedule } from '../../api/backup-schedule.js';
import { LABEL_BACKUP_SCHEDULE } from '../../api/group.js';
import { buildScheduledBackup } from '../../resources/scheduled-backup.js';
import { canonicalJson } from '../../resources/revision.js';
import type { Clock } from '../../runtime/clock.js';
import { findCondition, setKstatusConditions, type KstatusInput } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileResult } from '../../runtime/controller.js';
import type { EventInput, EventSink } from '../../runtime/events.js';
import type { InformerSet } from '../../runtime/informer-set.js';
import { isAlreadyExists, isNotFound, type KubeApi, type KubeObject } from '../../runtime/kube-api.js';
import { runSteps, type Step, type StepOutcome } from '../../runtime/steps.js';
import { BACKUP_SCHEDULES, BACKUPS } from '../../runtime/resource-types.js';
import { checkSchedule } from '../scavengeschedule/scavenge-plan.js';
import { PRUNE_TTL, planPrune, planSchedule, scheduleStatusSummary, type ScheduledBackupView } from './backup-schedule-plan.js';

export interface BackupScheduleControllerDeps {
  readonly api: KubeApi;
  readonly schedules: InformerSet;
  readonly backups: InformerSet;
  readonly clusters: InformerSet;
  readonly events: EventSink;
  readonly clock: Clock;
  /** The status last written for each schedule (by uid): the informer's copy may lag behind our own write. */
  readonly writtenStatus: Map<string, Record<string, unknown>>;
}

/** Longest sleep between two looks at a schedule (the next time is usually sooner). */
export const IDLE_REQUEUE_MAX_MS = 5 * 60_000;
export const CLUSTER_MISSING_REQUEUE_MS = 30_000;
export const ACTIVE_REQUEUE_MS = 30_000;

type Status = NonNullable<BackupSchedule['status']>;

interface State {
  readonly deps: BackupScheduleControllerDeps;
  readonly log: Logger;
  readonly object: KubeObject;
  readonly name: string;
  readonly namespace: string;
  readonly previous: Status;
  readonly nowMs: number;
  spec?: BackupScheduleSpec;
  backups: ScheduledBackupView[];
  status: Status;
  kstatus: KstatusInput;
  requeueAfterMs: number | undefined;
}

export const BACKUP_SCHEDULE_STEPS: readonly Step<State>[] = [
  { name: 'load-spec', run: loadSpec },
  { name: 'find-cluster', run: findCluster },
  { name: 'observe-backups', run: observeBackups },
  { name: 'create-due-backup', run: createDueBackup },
  { name: 'prune', run: prune },
];

export async function reconcileBackupSchedule(deps: BackupScheduleControllerDeps, context: ReconcileContext): Promise<ReconcileResult> {
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
    nowMs: deps.clock.nowMs(),
    backups: [],
    status: { ...previous },
    kstatus: { ready: { status: 'True', reason: 'Scheduled', message: 'backups run on schedule' } },
    requeueAfterMs: IDLE_REQUEUE_MAX_MS,
  };
  await runSteps(BACKUP_SCHEDULE_STEPS, state, {
    log: context.log,
    onError: async (err) => {
      const message = err instanceof Error ? err.message : String(err);
      state.kstatus = { ready: { status: 'False', reason: 'ReconcileError', message }, reconciling: { reason: 'ReconcileError', message } };
      await writeStatus(state).catch((statusErr: unknown) => context.log.warn({ err: statusErr }, 'backup schedule status not written'));
    },
  });
  await writeStatus(state);
  return state.requeueAfterMs === undefined ? {} : { requeueAfterMs: state.requeueAfterMs };
}

async function emit(state: State, event: EventInput): Promise<void> {
  state.log.info({ reason: event.reason, eventType: event.type }, event.note);
  await state.deps.events.record(state.object, event);
}

const iso = (ms: number): string => new Date(ms).toISOString();

async function loadSpec(state: State): Promise<StepOutcome> {
  const parsed = BackupScheduleSpec.safeParse(state.object['spec']);
  let problem: string | undefined;
  if (!parsed.success) problem = parsed.error.issues.map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`).join('; ');
  else if (!isKnownTimeZone(parsed.data.timeZone)) problem = `spec.timeZone: unknown time zone '${parsed.data.timeZone}'`;
  else problem = checkSchedule(parsed.data.schedule, parsed.data.timeZone);
  if (problem !== undefined) {
    if (findCondition(state.previous.conditions, 'Ready')?.message !== problem) {
      await emit(state, { type: 'Warning', reason: 'InvalidSpec', action: 'Validate', note: problem });
    }
    state.kstatus = { ready: { status: 'False', reason: 'InvalidSpec', message: problem }, stalled: { reason: 'InvalidSpec', message: problem } };
    const { nextScheduleTime: _next, ...rest } = state.status;
    state.status = rest;
    state.requeueAfterMs = undefined; // the spec must change first (that enqueues it)
    return 'stop';
  }
  state.spec = parsed.success ? parsed.data : undefined;
  return 'continue';
}

async function findCluster(state: State): Promise<StepOutcome> {
  const spec = state.spec as BackupScheduleSpec;
  if (state.deps.clusters.get(`${state.namespace}/${spec.cluster.name}`) !== undefined) return 'continue';
  const message = `EventDBCluster ${spec.cluster.name} not found; no backup is created until it exists`;
  state.kstatus = { ready: { status: 'False', reason: 'ClusterNotFound', message }, reconciling: { reason: 'ClusterNotFound', message } };
  state.requeueAfterMs = CLUSTER_MISSING_REQUEUE_MS;
  await observeBackups(state);
  summarize(state, undefined);
  return 'stop';
}

function viewOf(object: KubeObject): ScheduledBackupView {
  const spec = (object['spec'] ?? {}) as { ttl?: string };
  const status = (object['status'] ?? {}) as { phase?: string; completedAt?: string; writerCheckpoint?: number };
  return {
    name: object.metadata.name ?? '',
    ...(status.phase === undefined ? {} : { phase: status.phase }),
    ...(status.completedAt === undefined ? {} : { completedAt: status.completedAt }),
    ...(object.metadata.creationTimestamp === undefined ? {} : { creationTimestamp: object.metadata.creationTimestamp }),
    ...(status.writerCheckpoint === undefined ? {} : { writerCheckpoint: status.writerCheckpoint }),
    ...(spec.ttl === undefined ? {} : { ttl: spec.ttl }),
  };
}

async function observeBackups(state: State): Promise<StepOutcome> {
  state.backups = state.deps.backups
    .list((object) => object.metadata.namespace === state.namespace && object.metadata.labels?.[LABEL_BACKUP_SCHEDULE] === state.name && object.metadata.deletionTimestamp === undefined)
    .map(viewOf);
  return 'continue';
}

const msOf = (text: string | undefined): number | undefined => {
  const ms = Date.parse(text ?? '');
  return Number.isNaN(ms) ? undefined : ms;
};

async function createDueBackup(state: State): Promise<StepOutcome> {
  const spec = state.spec as BackupScheduleSpec;
  const lastScheduleMs = msOf(state.status.lastScheduleTime);
  const lastSkippedMs = msOf(state.status.lastSkippedTime);
  const decision = planSchedule({
    scheduleName: state.name,
    schedule: spec.schedule,
    timeZone: spec.timeZone,
    suspend: spec.suspend,
    ...(spec.startingDeadline === undefined ? {} : { startingDeadlineMs: parseDurationMs(spec.startingDeadline) }),
    nowMs: state.nowMs,
    createdMs: msOf(state.object.metadata.creationTimestamp) ?? state.nowMs,
    ...(lastScheduleMs === undefined ? {} : { lastScheduleMs }),
    ...(lastSkippedMs === undefined ? {} : { lastSkippedMs }),
    backups: state.backups,
  });
  const nextMs = decision.kind === 'suspended' ? undefined : decision.nextMs;
  state.requeueAfterMs = nextMs === undefined ? IDLE_REQUEUE_MAX_MS : Math.min(IDLE_REQUEUE_MAX_MS, Math.max(1000, nextMs - state.nowMs + 50));
  switch (decision.kind) {
    case 'suspended':
      state.kstatus = { ready: { status: 'True', reason: 'Suspended', message: 'spec.suspend: no new backup is created' } };
      break;
    case 'idle':
      break;
    case 'already-created':
      state.status = { ...state.status, lastScheduleTime: iso(decision.scheduledMs) };
      break;
    case 'create': {
      const backup = buildScheduledBackup({
        schedule: { name: state.name, namespace: state.namespace, uid: state.object.metadata.uid ?? '' },
        name: decision.name,
        scheduledMs: decision.scheduledMs,
        cluster: spec.cluster.name,
        template: spec.backupTemplate,
        ...(spec.ttl === undefined ? {} : { ttl: spec.ttl }),
      });
      try {
        await state.deps.api.create(BACKUPS, backup);
        await emit(state, { type: 'Normal', reason: 'BackupCreated', action: 'Backup', note: `backup ${decision.name} for ${iso(decision.scheduledMs)}` });
      } catch (err: unknown) {
        if (!isAlreadyExists(err)) throw err;
      }
      state.status = { ...state.status, lastScheduleTime: iso(decision.scheduledMs) };
      state.backups = [...state.backups, { name: decision.name, creationTimestamp: iso(state.nowMs) }];
      break;
    }
    case 'wait-for-active':
      state.requeueAfterMs = Math.min(state.requeueAfterMs, ACTIVE_REQUEUE_MS, decision.deadlineMs === undefined ? Infinity : Math.max(1000, decision.deadlineMs - state.nowMs + 50));
      state.kstatus = {
        ready: { status: 'True', reason: 'WaitingForActiveBackup', message: `the backup of ${iso(decision.scheduledMs)} waits for ${decision.active} to finish (one at a time)` },
      };
      break;
    case 'skip':
      state.status = { ...state.status, lastSkippedTime: iso(decision.scheduledMs) };
      await emit(state, { type: 'Warning', reason: 'BackupSkipped', action: 'Backup', note: `backup ${decision.name} for ${iso(decision.scheduledMs)} skipped: ${decision.why}` });
      break;
  }
  summarize(state, nextMs);
  return 'continue';
}

async function prune(state: State): Promise<StepOutcome> {
  const spec = state.spec as BackupScheduleSpec;
  for (const decision of planPrune(state.backups, spec.keep)) {
    try {
      await state.deps.api.patch(BACKUPS, state.namespace, decision.name, { spec: { ttl: PRUNE_TTL } });
    } catch (err: unknown) {
      if (isNotFound(err)) continue;
      throw err;
    }
    await emit(state, { type: 'Normal', reason: 'BackupPruned', action: 'Delete', note: `backup ${decision.name} deleted (${decision.why})` });
  }
  return 'continue';
}

/** lastSuccessfulBackup, active and nextScheduleTime; Ready=False while the newest finished Backup failed. */
function summarize(state: State, nextMs: number | undefined): void {
  const summary = scheduleStatusSummary(state.backups);
  const { lastSuccessfulBackup: _good, active: _active, nextScheduleTime: _next, ...rest } = state.status;
  state.status = {
    ...rest,
    ...(summary.lastSuccessfulBackup === undefined ? {} : { lastSuccessfulBackup: { ...summary.lastSuccessfulBackup } }),
    ...(summary.active.length === 0 ? {} : { active: summary.active.map((entry) => ({ ...entry })) }),
    ...(nextMs === undefined ? {} : { nextScheduleTime: iso(nextMs) }),
  };
  if (summary.lastFailed !== undefined && state.kstatus.ready.status === 'True') {
    state.kstatus = { ...state.kstatus, ready: { status: 'False', reason: 'LastBackupFailed', message: `backup ${summary.lastFailed} failed; the next one runs on schedule` } };
  }
}

async function writeStatus(state: State): Promise<void> {
  const generation = state.object.metadata.generation;
  const status: Status = {
    ...state.status,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: setKstatusConditions(state.status.conditions, state.kstatus, generation, iso(state.nowMs)),
  };
  if (canonicalJson(status) === canonicalJson(state.previous)) return;
  try {
    await state.deps.api.apply(
      BACKUP_SCHEDULES,
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

/**
 * Reconciling one Backup: a straight list of short, named, idempotent steps, as for clusters.
 * Everything a restarted operator needs is in the Backup's status and the cluster's hold
 * annotation, so it resumes where the last one stopped.
 *
 *   load-spec        parse the spec (an invalid one fails the Backup)
 *   retention        a finished Backup: ttl deletes it, never the cluster's last Completed one
 *   find-cluster     the EventDBCluster named by spec.cluster
 *   wait-for-turn    one disruptive operation per cluster: no rolling update, scale or other backup
 *   start            choose the node, hold the cluster (annotation eventdb.io/backup-hold), Running
 *   volume-snapshot  the node stopped by the cluster controller: snapshot index, then data;
 *                    release the node once the snapshots are cut; Completed when all readyToUse
 *   file-copy        a Job runs `eventdb backup` over the node's files on its host (full, or
 *                    differential against the previous backup in the claim); Completed when done
 */
import type { OperatorMetrics } from '../../runtime/metrics.js';
import type { Logger } from 'pino';
import { BackupSpec, type Backup } from '../../api/backup.js';
import type { EventDBClusterStatus } from '../../api/eventdb-cluster.js';
import { ANNOTATION_BACKUP_HOLD } from '../../api/group.js';
import type { Clock } from '../../runtime/clock.js';
import { setCondition, setKstatusConditions, type KstatusInput } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileResult } from '../../runtime/controller.js';
import type { EventInput, EventSink } from '../../runtime/events.js';
import type { InformerSet } from '../../runtime/informer-set.js';
import { isAlreadyExists, isNotFound, type KubeApi, type KubeObject } from '../../runtime/kube-api.js';
import { runSteps, type Step, type StepOutcome } from '../../runtime/steps.js';
import { BACKUPS, EVENTDB_CLUSTERS, JOBS, PVCS, SECRETS, VOLUME_SNAPSHOTS } from '../../runtime/resource-types.js';
import { decodeSecretValue } from '../../resources/secrets.js';
import {
  buildCleanupJob,
  buildCredentialsSecret,
  buildFileCopyJob,
  FILE_COPY_DEADLINE_SECONDS,
  jobSchedulingOf,
  buildVolumeSnapshot,
  childName,
  fileCopyPath,
  formatBackupHold,
  jobOutcome,
  parseBackupHold,
  snapshotName,
  snapshotPlan,
  type BackupIdentity,
} from '../../resources/backup-objects.js';
import { effectiveSpec, type OperatorDefaults } from '../../resources/effective-spec.js';
import { indexClaimName } from '../../resources/names.js';
import { trustedCaSecretName } from '../../resources/node-settings.js';
import { containerServesTls, nodeContainerEnv } from '../../resources/pod.js';
import { canonicalJson } from '../../resources/revision.js';
import { backupView, chooseSource, lastBackupTimes, clusterAvailability, previousFileCopy, retention, type BackupView } from './backup-plan.js';

export interface BackupControllerDeps {
  readonly api: KubeApi;
  readonly backups: InformerSet;
  readonly clusters: InformerSet;
  readonly pods: InformerSet;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly defaults: OperatorDefaults;
  /** Asks for another reconcile of a Backup (its cluster's other backups when one completes). */
  readonly enqueue: (key: string) => void;
  /**
   * The status last written for each Backup (by uid). The informer's copy may lag behind our own
   * write; acting on it would, for one, hold the cluster again for a backup that just completed.
   */
  readonly writtenStatus: Map<string, Record<string, unknown>>;
  /** Backup figures (last success and failure per cluster, durations); none without it. */
  readonly metrics?: OperatorMetrics;
}

/** How often a Backup is looked at while it waits or runs. */
export const RUNNING_REQUEUE_MS = 2000;
export const PENDING_REQUEUE_MS = 5000;
const RETENTION_RECHECK_MAX_MS = 5 * 60_000;
/** A node stopped for snapshots that are not cut by then is given back and the Backup fails. */
export const SNAPSHOT_CUT_TIMEOUT_MS = 10 * 60_000;

type BackupStatus = NonNullable<Backup['status']>;

interface BackupState {
  readonly deps: BackupControllerDeps;
  readonly log: Logger;
  readonly object: KubeObject;
  readonly identity: BackupIdentity;
  readonly previous: BackupStatus;
  readonly nowMs: number;
  spec?: BackupSpec;
  status: BackupStatus;
  ready: { status: 'True' | 'False'; reason: string; message: string };
  cluster?: KubeObject;
  requeueAfterMs: number | undefined;
  deleted: boolean;
}

export const BACKUP_STEPS: readonly Step<BackupState>[] = [
  { name: 'load-spec', run: loadSpec },
  { name: 'retention', run: applyRetention },
  { name: 'find-cluster', run: findCluster },
  { name: 'wait-for-turn', run: waitForTurn },
  { name: 'start', run: start },
  { name: 'volume-snapshot', run: volumeSnapshot },
  { name: 'file-copy', run: fileCopy },
];

export async function reconcileBackup(deps: BackupControllerDeps, context: ReconcileContext): Promise<ReconcileResult> {
  const object = deps.backups.get(context.key);
  if (object === undefined || object.metadata.deletionTimestamp !== undefined) return {};
  const written = deps.writtenStatus.get(object.metadata.uid ?? '');
  const previous = structuredClone((written ?? object['status'] ?? {}) as BackupStatus);
  const state: BackupState = {
    deps,
    log: context.log,
    object,
    identity: { name: object.metadata.name ?? '', namespace: object.metadata.namespace ?? '', uid: object.metadata.uid ?? '' },
    previous,
    nowMs: deps.clock.nowMs(),
    status: { ...previous },
    ready: { status: 'False', reason: 'Pending', message: 'waiting to start' },
    requeueAfterMs: PENDING_REQUEUE_MS,
    deleted: false,
  };
  const phaseBefore = previous.phase;
  await runSteps(BACKUP_STEPS, state, {
    log: context.log,
    onError: async (err) => {
      state.ready = { status: 'False', reason: 'ReconcileError', message: err instanceof Error ? err.message : String(err) };
      await writeStatus(state).catch((statusErr: unknown) => context.log.warn({ err: statusErr }, 'backup status not written'));
    },
  });
  if (!state.deleted) await writeStatus(state);
  reportBackupMetrics(state, phaseBefore);
  return state.requeueAfterMs === undefined ? {} : { requeueAfterMs: state.requeueAfterMs };
}

/**
 * The cluster's last completed and failed backups, from every Backup of it (so a new leader
 * reports them at once), and this backup's duration once it finished here.
 */
function reportBackupMetrics(state: BackupState, phaseBefore: string | undefined): void {
  const metrics = state.deps.metrics;
  const cluster = state.spec?.cluster.name;
  if (metrics === undefined || cluster === undefined) return;
  const labels = { namespace: state.identity.namespace, cluster };
  const own = { ...backupView(state.object as never), phase: state.status.phase, ...(state.status.completedAt === undefined ? {} : { completedAt: state.status.completedAt }) };
  const views = [...siblings(state).filter((view) => view.name !== own.name), ...(state.deleted ? [] : [own])];
  const { lastSuccessMs, lastFailureMs } = lastBackupTimes(views, cluster);
  if (lastSuccessMs !== undefined) metrics.backupLastSuccess.set(labels, lastSuccessMs / 1000);
  if (lastFailureMs !== undefined) metrics.backupLastFailure.set(labels, lastFailureMs / 1000);
  const justFinished = (state.status.phase === 'Completed' || state.status.phase === 'Failed') && phaseBefore !== state.status.phase;
  if (justFinished) {
    const result = state.status.phase as string;
    metrics.backups.inc({ ...labels, result });
    const seconds = (Date.parse(state.status.completedAt ?? '') - Date.parse(state.status.startedAt ?? '')) / 1000;
    if (Number.isFinite(seconds) && seconds >= 0) metrics.backupSeconds.observe({ result }, seconds);
  }
}

async function emit(state: BackupState, event: EventInput): Promise<void> {
  state.log.info({ reason: event.reason, eventType: event.type }, event.note);
  await state.deps.events.record(state.object, event);
}

const finished = (state: BackupState): boolean => state.status.phase === 'Completed' || state.status.phase === 'Failed';

async function fail(state: BackupState, reason: string, message: string): Promise<StepOutcome> {
  state.status = { ...state.status, phase: 'Failed', message, completedAt: new Date(state.nowMs).toISOString() };
  state.ready = { status: 'False', reason, message };
  await releaseHold(state);
  await emit(state, { type: 'Warning', reason: 'BackupFailed', action: 'Backup', note: `backup failed: ${message}` });
  state.requeueAfterMs = undefined;
  return 'stop';
}

async function loadSpec(state: BackupState): Promise<StepOutcome> {
  const parsed = BackupSpec.safeParse(state.object['spec']);
  if (!parsed.success) {
    if (finished(state)) return 'stop';
    const message = parsed.error.issues.map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`).join('; ');
    return fail(state, 'InvalidSpec', message);
  }
  state.spec = parsed.data;
  if (state.spec.method === 'FileCopy' && state.spec.fileCopy === undefined) return fail(state, 'InvalidSpec', 'method FileCopy needs spec.fileCopy.claimName');
  if (state.status.phase === undefined) {
    state.status = { ...state.status, phase: 'Pending' };
    await emit(state, { type: 'Normal', reason: 'BackupPending', action: 'Backup', note: `${state.spec.method} backup of cluster ${state.spec.cluster.name} accepted` });
  }
  return 'continue';
}

function siblings(state: BackupState): BackupView[] {
  return state.deps.backups.list((object) => object.metadata.namespace === state.identity.namespace).map((object) => backupView(object as never));
}

async function applyRetention(state: BackupState): Promise<StepOutcome> {
  if (!finished(state)) return 'continue';
  const spec = state.spec as BackupSpec;
  state.ready =
    state.status.phase === 'Completed'
      ? { status: 'True', reason: 'Completed', message: state.status.message ?? 'backup completed' }
      : { status: 'False', reason: 'Failed', message: state.status.message ?? 'backup failed' };
  const view = backupView(state.object as never);
  const decision = retention(view, siblings(state), state.nowMs);
  switch (decision.kind) {
    case 'keep':
      state.requeueAfterMs = undefined;
      return 'stop';
    case 'keep-until':
      state.requeueAfterMs = Math.min(RETENTION_RECHECK_MAX_MS, Math.max(1000, decision.atMs - state.nowMs));
      return 'stop';
    case 'keep-last-good':
      if (state.previous.conditions?.find((c) => c.type === 'Retained') === undefined) {
        await emit(state, { type: 'Normal', reason: 'RetainedAsLastGood', action: 'Retain', note: `ttl ${spec.ttl} expired, kept: the last completed backup of cluster ${spec.cluster.name}` });
      }
      state.status = { ...state.status, conditions: setCondition(state.status.conditions, { type: 'Retained', status: 'True', reason: 'LastGoodBackup', message: 'ttl expired; kept as the last completed backup of the cluster' }, state.object.metadata.generation, new Date(state.nowMs).toISOString()) };
      state.requeueAfterMs = RETENTION_RECHECK_MAX_MS;
      return 'stop';
    case 'delete':
      return expire(state);
  }
}

/** ttl: a file copy's folder is removed first (a Job on the claim), then the Backup object. */
async function expire(state: BackupState): Promise<StepOutcome> {
  const spec = state.spec as BackupSpec;
  if (spec.method === 'FileCopy' && spec.fileCopy !== undefined && state.status.path !== undefined && state.status.phase === 'Completed') {
    const image = clusterImage(state);
    const cleanup = buildCleanupJob({ backup: state.identity, cluster: spec.cluster.name, claimName: spec.fileCopy.claimName, path: state.status.path, ...image });
    const existing = await state.deps.api.get(JOBS, state.identity.namespace, cleanup.metadata.name ?? '');
    const outcome = jobOutcome(existing);
    if (outcome === 'missing') {
      await createIgnoringExists(state.deps.api, JOBS, cleanup);
      await emit(state, { type: 'Normal', reason: 'BackupExpiring', action: 'Delete', note: `ttl ${spec.ttl} expired: removing ${state.status.path} from claim ${spec.fileCopy.claimName}` });
    }
    if (outcome !== 'succeeded') {
      state.requeueAfterMs = RUNNING_REQUEUE_MS;
      if (outcome === 'failed') state.ready = { status: 'True', reason: 'CleanupFailed', message: `ttl expired but job ${cleanup.metadata.name} could not remove the files` };
      return 'stop';
    }
  }
  await emit(state, { type: 'Normal', reason: 'BackupExpired', action: 'Delete', note: `ttl ${spec.ttl} expired: deleting the backup` });
  await state.deps.api.delete(BACKUPS, state.identity.namespace, state.identity.name, { uid: state.identity.uid, propagationPolicy: 'Background' });
  state.deps.writtenStatus.delete(state.identity.uid);
  state.deleted = true;
  state.requeueAfterMs = undefined;
  return 'stop';
}

async function findCluster(state: BackupState): Promise<StepOutcome> {
  const spec = state.spec as BackupSpec;
  state.cluster = state.deps.clusters.get(`${state.identity.namespace}/${spec.cluster.name}`);
  if (state.cluster !== undefined) return 'continue';
  if (state.status.phase === 'Running') return fail(state, 'ClusterNotFound', `cluster ${spec.cluster.name} went away during the backup`);
  state.ready = { status: 'False', reason: 'ClusterNotFound', message: `EventDBCluster ${spec.cluster.name} not found` };
  state.requeueAfterMs = PENDING_REQUEUE_MS * 3;
  return 'stop';
}

function holderOf(cluster: KubeObject): ReturnType<typeof parseBackupHold> {
  return parseBackupHold(cluster.metadata.annotations?.[ANNOTATION_BACKUP_HOLD]);
}

async function waitForTurn(state: BackupState): Promise<StepOutcome> {
  // Running: the turn was taken; the hold (or its release) is the backup's own business now.
  if (state.status.phase === 'Running') return 'continue';
  const cluster = state.cluster as KubeObject;
  const availability = clusterAvailability(cluster['status'] as EventDBClusterStatus | undefined, holderOf(cluster)?.backup, state.identity.name, (cluster['spec'] as { replicas?: number } | undefined)?.replicas);
  if (availability.ok) return 'continue';
  state.ready = { status: 'False', reason: availability.reason, message: availability.message };
  state.status = { ...state.status, message: availability.message };
  state.requeueAfterMs = PENDING_REQUEUE_MS;
  return 'stop';
}

function clusterImage(state: BackupState): { image: string; imagePullPolicy: string } {
  const cluster = state.cluster ?? state.deps.clusters.get(`${state.identity.namespace}/${state.spec?.cluster.name ?? ''}`);
  const check = cluster === undefined ? undefined : effectiveSpec(cluster.metadata.name ?? '', cluster['spec'], state.deps.defaults);
  return check?.ok === true ? { image: check.spec.image, imagePullPolicy: check.spec.imagePullPolicy } : { image: state.deps.defaults.nodeImage, imagePullPolicy: 'IfNotPresent' };
}

async function start(state: BackupState): Promise<StepOutcome> {
  const spec = state.spec as BackupSpec;
  const cluster = state.cluster as KubeObject;
  if (state.status.phase === 'Running' && state.status.sourcePod !== undefined) {
    // Held until the last snapshot is cut (then released for good) or the copy is done.
    const lastSnapshotMade = (state.status.snapshots ?? []).some((snapshot) => snapshot.volume === 'data');
    if (!lastSnapshotMade) await hold(state, state.status.sourcePod);
    return 'continue';
  }
  const status = cluster['status'] as EventDBClusterStatus | undefined;
  const previous = spec.method === 'FileCopy' && spec.fileCopy?.differential === true ? previousFileCopy(siblings(state), spec.cluster.name, spec.fileCopy.claimName) : undefined;
  const choice = chooseSource(status?.members ?? [], spec.node, previous?.sourcePod);
  if (!choice.ok) {
    state.ready = { status: 'False', reason: choice.reason, message: choice.message };
    state.status = { ...state.status, message: choice.message };
    state.requeueAfterMs = PENDING_REQUEUE_MS;
    return 'stop';
  }
  const startedAt = new Date(state.nowMs).toISOString();
  // Another node's backup cannot be the base of a differential one (the spec's rule 2): full.
  const base = previous !== undefined && previous.sourcePod === choice.pod ? previous : undefined;
  state.status = {
    ...state.status,
    phase: 'Running',
    sourcePod: choice.pod,
    sourceRole: choice.role,
    startedAt,
    ...(choice.writerCheckpoint === undefined ? {} : { writerCheckpoint: choice.writerCheckpoint }),
    ...(spec.method === 'FileCopy' ? { path: fileCopyPath(spec.cluster.name, startedAt) } : {}),
    ...(base?.name === undefined ? {} : { differentialFrom: base.name }),
    message: `backing up ${choice.pod} (${choice.role})`,
  };
  const credentials = await saveCredentials(state);
  if (!credentials.ok) {
    state.ready = { status: 'False', reason: 'SecretMissing', message: credentials.message };
    state.requeueAfterMs = PENDING_REQUEUE_MS * 3;
    return 'stop';
  }
  // Status first: a restarted operator must find the source it chose before the cluster is held.
  await writeStatus(state);
  await hold(state, choice.pod);
  const kind = spec.method === 'VolumeSnapshot' ? 'volume snapshots' : base === undefined ? 'full file copy' : `differential file copy against ${base.name}`;
  const differentialNote = spec.method === 'FileCopy' && spec.fileCopy?.differential === true && base === undefined
    ? previous === undefined ? ' (no earlier backup in the claim: full)' : ` (earlier backup ${previous.name} is of ${previous.sourcePod ?? 'another node'}: full)`
    : '';
  await emit(state, { type: 'Normal', reason: 'BackupStarted', action: 'Backup', note: `${kind} of ${choice.pod} (${choice.role})${differentialNote}` });
  return 'continue';
}

/** Keeps the source cluster's passwords with the backup (Secret <backup>-credentials). */
async function saveCredentials(state: BackupState): Promise<{ ok: true } | { ok: false; message: string }> {
  const cluster = state.cluster as KubeObject;
  const check = effectiveSpec(cluster.metadata.name ?? '', cluster['spec'], state.deps.defaults);
  if (!check.ok) return { ok: false, message: `cluster ${cluster.metadata.name ?? ''}: ${check.issues.join('; ')}` };
  const read = async (reference: { name: string; key: string }): Promise<string | undefined> =>
    decodeSecretValue(await state.deps.api.get(SECRETS, state.identity.namespace, reference.name), reference.key);
  const admin = await read(check.spec.users.admin);
  const ops = await read(check.spec.users.ops);
  if (admin === undefined || ops === undefined) return { ok: false, message: `the cluster's Secrets ${check.spec.users.admin.name} and ${check.spec.users.ops.name} must hold its passwords` };
  await createIgnoringExists(state.deps.api, SECRETS, buildCredentialsSecret(state.identity, cluster.metadata.name ?? '', { admin, ops }));
  return { ok: true };
}

/** Holds the cluster for this backup: the annotation the cluster controller acts on. */
async function hold(state: BackupState, pod: string): Promise<void> {
  const spec = state.spec as BackupSpec;
  const value = formatBackupHold({ backup: state.identity.name, pod, mode: spec.method === 'VolumeSnapshot' ? 'Stop' : 'Keep' });
  const cluster = state.cluster as KubeObject;
  if (cluster.metadata.annotations?.[ANNOTATION_BACKUP_HOLD] === value) return;
  await state.deps.api.patch(EVENTDB_CLUSTERS, state.identity.namespace, cluster.metadata.name ?? '', { metadata: { annotations: { [ANNOTATION_BACKUP_HOLD]: value } } });
}

/** Gives the cluster back (the node is started again by the cluster controller). */
async function releaseHold(state: BackupState): Promise<void> {
  const spec = state.spec;
  if (spec === undefined) return;
  const cluster = state.cluster ?? state.deps.clusters.get(`${state.identity.namespace}/${spec.cluster.name}`);
  if (cluster === undefined || holderOf(cluster)?.backup !== state.identity.name) return;
  try {
    await state.deps.api.patch(EVENTDB_CLUSTERS, state.identity.namespace, cluster.metadata.name ?? '', { metadata: { annotations: { [ANNOTATION_BACKUP_HOLD]: null } } });
  } catch (err: unknown) {
    if (!isNotFound(err)) throw err;
  }
}

/** The cluster controller acknowledged the hold: its status.operation is this backup. */
function holdAcknowledged(state: BackupState): boolean {
  const operation = ((state.cluster as KubeObject)['status'] as EventDBClusterStatus | undefined)?.operation;
  return operation?.kind === 'Backup' && operation.id === state.identity.name;
}

function podExists(state: BackupState, pod: string): boolean {
  return state.deps.pods.list((object) => object.metadata.namespace === state.identity.namespace && object.metadata.name === pod).length > 0;
}

async function complete(state: BackupState, message: string): Promise<StepOutcome> {
  const spec = state.spec as BackupSpec;
  state.status = { ...state.status, phase: 'Completed', completedAt: new Date(state.nowMs).toISOString(), message };
  state.ready = { status: 'True', reason: 'Completed', message };
  await releaseHold(state);
  await emit(state, { type: 'Normal', reason: 'BackupCompleted', action: 'Backup', note: message });
  // An older backup kept as the last good one may go now.
  for (const other of siblings(state)) {
    if (other.cluster === spec.cluster.name && other.name !== state.identity.name) state.deps.enqueue(`${state.identity.namespace}/${other.name}`);
  }
  state.requeueAfterMs = spec.ttl === undefined ? undefined : 1000;
  return 'stop';
}

interface SnapshotStatus {
  readyToUse?: boolean;
  creationTime?: string;
  error?: { message?: string };
}

async function volumeSnapshot(state: BackupState): Promise<StepOutcome> {
  const spec = state.spec as BackupSpec;
  if (spec.method !== 'VolumeSnapshot') return 'continue';
  const pod = state.status.sourcePod as string;
  state.requeueAfterMs = RUNNING_REQUEUE_MS;
  const nodeStopped = holdAcknowledged(state) && !podExists(state, pod);
  const separateIndex = (await state.deps.api.get(PVCS, state.identity.namespace, indexClaimName(pod))) !== undefined;
  const snapshots: NonNullable<BackupStatus['snapshots']> = [];
  let allCut = true;
  let allReady = true;
  // The spec's order: the index volume before the data volume; each is cut before the next.
  for (const { volume, claim } of snapshotPlan(pod, separateIndex)) {
    const name = snapshotName(state.identity.name, volume);
    let object = await state.deps.api.get(VOLUME_SNAPSHOTS, state.identity.namespace, name);
    if (object === undefined) {
      // A snapshot is made only of a stopped node, and only once the one before it is cut.
      if (!allCut || !nodeStopped) {
        if (!nodeStopped) state.ready = { status: 'False', reason: 'StoppingNode', message: `waiting for ${pod} to stop, so its volumes are snapshotted consistently` };
        allCut = false;
        allReady = false;
        break;
      }
      try {
        object = await createIgnoringExists(
          state.deps.api,
          VOLUME_SNAPSHOTS,
          buildVolumeSnapshot({ backup: state.identity, cluster: spec.cluster.name, volume, claim, ...(spec.volumeSnapshotClassName === undefined ? {} : { volumeSnapshotClassName: spec.volumeSnapshotClassName }) }),
        );
      } catch (err: unknown) {
        // The node is down for this backup: never leave it so on an error retrying cannot fix.
        return fail(state, 'SnapshotFailed', `creating VolumeSnapshot ${name}: ${err instanceof Error ? err.message : String(err)}`);
      }
      await emit(state, { type: 'Normal', reason: 'SnapshotCreated', action: 'Snapshot', note: `VolumeSnapshot ${name} of ${claim}` });
    }
    const status = (object['status'] ?? {}) as SnapshotStatus;
    if (status.error?.message !== undefined && status.readyToUse !== true) {
      state.status = { ...state.status, snapshots: [...snapshots, { volume, name, readyToUse: false }] };
      return fail(state, 'SnapshotFailed', `VolumeSnapshot ${name}: ${status.error.message}`);
    }
    snapshots.push({ volume, name, readyToUse: status.readyToUse === true });
    if (status.creationTime === undefined && status.readyToUse !== true) allCut = false;
    if (status.readyToUse !== true) allReady = false;
  }
  state.status = { ...state.status, snapshots };
  const expected = separateIndex ? 2 : 1;
  const cut = allCut && snapshots.length === expected;
  if (!cut && state.nowMs - Date.parse(state.status.startedAt ?? '') > SNAPSHOT_CUT_TIMEOUT_MS) {
    return fail(state, 'SnapshotTimeout', `the snapshots of ${pod} were not taken within ${SNAPSHOT_CUT_TIMEOUT_MS / 60_000} minutes; ${pod} is started again`);
  }
  if (cut) await releaseHold(state);
  if (allReady && snapshots.length === expected) {
    return complete(state, `${expected} VolumeSnapshot(s) of ${pod} ready to use: ${snapshots.map((s) => s.name).join(', ')}`);
  }
  if (nodeStopped || snapshots.length > 0) {
    state.ready = { status: 'False', reason: 'Snapshotting', message: `snapshots of ${pod}: ${snapshots.map((s) => `${s.name} ${s.readyToUse ? 'ready' : 'not ready'}`).join(', ') || 'starting'}` };
  }
  return 'stop';
}

async function fileCopy(state: BackupState): Promise<StepOutcome> {
  const spec = state.spec as BackupSpec;
  if (spec.method !== 'FileCopy' || spec.fileCopy === undefined) return 'continue';
  const podName = state.status.sourcePod as string;
  state.requeueAfterMs = RUNNING_REQUEUE_MS;
  if (!holdAcknowledged(state)) {
    state.ready = { status: 'False', reason: 'WaitingForCluster', message: 'waiting for the cluster to take the backup as its operation' };
    return 'stop';
  }
  const jobName = childName(state.identity.name, 'filecopy');
  let existing = await state.deps.api.get(JOBS, state.identity.namespace, jobName);
  if (existing === undefined) {
    const pod = state.deps.pods.list((object) => object.metadata.namespace === state.identity.namespace && object.metadata.name === podName)[0];
    const nodeName = (pod?.['spec'] as { nodeName?: string } | undefined)?.nodeName;
    if (pod === undefined || nodeName === undefined) {
      state.ready = { status: 'False', reason: 'WaitingForNode', message: `waiting for pod ${podName} to run` };
      return 'stop';
    }
    const cluster = state.cluster as KubeObject;
    const check = effectiveSpec(cluster.metadata.name ?? '', cluster['spec'], state.deps.defaults);
    if (!check.ok) return fail(state, 'InvalidClusterSpec', `cluster ${spec.cluster.name}: ${check.issues.join('; ')}`);
    // The node serves https when its pod was started with certificate options (not the spec:
    // a change of tls.mode may not have reached this pod yet).
    const caSecretName = containerServesTls(nodeContainerEnv(pod)) ? trustedCaSecretName(cluster.metadata.name ?? '', check.spec) : undefined;
    const caSecret = caSecretName === undefined ? undefined : { name: caSecretName, everyCrtKey: caSecretName === check.spec.tls.caSecret };
    const base = state.status.differentialFrom === undefined ? undefined : siblings(state).find((b) => b.name === state.status.differentialFrom);
    const job = buildFileCopyJob({
      backup: state.identity,
      cluster: { name: cluster.metadata.name ?? '', namespace: state.identity.namespace, uid: cluster.metadata.uid ?? '' },
      pod: podName,
      nodeName,
      separateIndex: check.spec.storage.index !== undefined,
      claimName: spec.fileCopy.claimName,
      path: state.status.path as string,
      ...(base?.path === undefined ? {} : { previousPath: base.path }),
      image: check.spec.image,
      imagePullPolicy: check.spec.imagePullPolicy,
      opsSecret: { name: check.spec.users.ops.name, key: check.spec.users.ops.key },
      ...(caSecret === undefined ? {} : { caSecret }),
      scheduling: jobSchedulingOf(check.spec.podTemplate, FILE_COPY_DEADLINE_SECONDS),
    });
    existing = await createIgnoringExists(state.deps.api, JOBS, job);
    state.status = { ...state.status, sourceNode: nodeName };
    await emit(state, { type: 'Normal', reason: 'FileCopyStarted', action: 'Backup', note: `job ${jobName} copies ${podName}'s files on ${nodeName} into ${spec.fileCopy.claimName}:${state.status.path ?? ''}` });
  }
  switch (jobOutcome(existing)) {
    case 'succeeded': {
      const kind = state.status.differentialFrom === undefined ? 'full' : `differential (against ${state.status.differentialFrom})`;
      return complete(state, `${kind} file copy of ${podName} in ${spec.fileCopy.claimName}:${state.status.path ?? ''}`);
    }
    case 'failed':
      return fail(state, 'FileCopyFailed', `job ${jobName} failed: kubectl logs -n ${state.identity.namespace} job/${jobName}`);
    default:
      state.ready = { status: 'False', reason: 'Copying', message: `job ${jobName} copies ${podName}'s files` };
      return 'stop';
  }
}

async function createIgnoringExists(api: KubeApi, type: Parameters<KubeApi['create']>[0], object: KubeObject): Promise<KubeObject> {
  try {
    return await api.create(type, object);
  } catch (err: unknown) {
    if (!isAlreadyExists(err)) throw err;
    return (await api.get(type, object.metadata.namespace, object.metadata.name ?? '')) ?? object;
  }
}

/**
 * kstatus: a Pending or Running Backup is Reconciling (the operator works on it, or waits for its
 * turn), a Failed one Stalled (it is never retried: a new Backup is), a Completed one neither.
 */
export function backupKstatus(state: Pick<BackupState, 'ready' | 'status'>): KstatusInput {
  const why = { reason: state.ready.reason, message: state.ready.message };
  switch (state.status.phase) {
    case 'Completed':
      return { ready: state.ready };
    case 'Failed':
      return { ready: { ...state.ready, status: 'False' }, stalled: why };
    default:
      return { ready: { ...state.ready, status: 'False' }, reconciling: why };
  }
}

async function writeStatus(state: BackupState): Promise<void> {
  const nowIso = new Date(state.nowMs).toISOString();
  const generation = state.object.metadata.generation;
  const status: BackupStatus = {
    ...state.status,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: setKstatusConditions(state.status.conditions, backupKstatus(state), generation, nowIso),
  };
  if (canonicalJson(status) === canonicalJson(state.previous)) return;
  try {
    await state.deps.api.apply(
      BACKUPS,
      { apiVersion: state.object.apiVersion, kind: state.object.kind, metadata: { name: state.identity.name, namespace: state.identity.namespace }, status },
      { force: true, subresource: 'status' },
    );
  } catch (err: unknown) {
    if (isNotFound(err)) return;
    throw err;
  }
  Object.assign(state.previous, structuredClone(status));
  state.deps.writtenStatus.set(state.identity.uid, structuredClone(status));
  if (status.phase !== undefined) state.log.debug({ phase: status.phase }, 'backup status written');
}

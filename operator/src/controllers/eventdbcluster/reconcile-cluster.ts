/**
 * Reconciling one EventDBCluster: a straight list of short, named steps (CloudNativePG style).
 * Each step is idempotent and either lets the next one run or stops the reconcile; the status
 * is written at the end whatever happened, and before every disruptive action, so the
 * operation in `status.operation` is always at least as far as the cluster.
 *
 *   load-spec            parse and default the spec; an invalid one is reported, nothing done
 *   check-node-support   refuse what this node version cannot run (several nodes, no clustering)
 *   observe-pods         the cluster's pods from the informer cache
 *   load-source-backup   spec.sourceBackup, until the cluster was first Ready: the Backup to restore
 *   observe-members      each running node's own gossip: role, liveness, checkpoints
 *   stop-when-paused     spec.paused: report and stop
 *   fence                eventdb.io/fenced: stop the named nodes, leave them alone until unfenced
 *   ensure-secrets       generated passwords, self-signed CA and node certificate
 *   ensure-config        ConfigMap <cluster>-config
 *   ensure-services      <cluster>, <cluster>-leader, <cluster>-headless
 *   ensure-pdb           PodDisruptionBudget <cluster>
 *   grow-volumes         a bigger spec.storage size: raise the existing PVCs' requests, report the resize
 *   sync-role-labels     eventdb.io/role of every pod, from gossip
 *   hibernate            spec.hibernation: stop every node (followers first, the leader last after a resign); stop
 *   reload-certificates  the certificate or CA Secret changed: reload every node, verify each;
 *                        next to a backup, scavenge, rolling update or scale, never behind it
 *   hold-for-backup      a Backup holds the cluster: status.operation Backup, its node stopped
 *                        for volume snapshots; no rolling update or scale meanwhile
 *   hold-for-scavenge    a ScavengeSchedule's cycle holds the cluster: status.operation Scavenge
 *   switchover           eventdb.io/switchover: <pod>: priorities, resign, until that node leads
 *   roll-out             the planner's next action: create, restart, resign, remove, or wait
 */
import type { Logger } from 'pino';
import { ANNOTATION_APPROVE, ANNOTATION_BACKUP_HOLD, ANNOTATION_RESTARTED_AT, ANNOTATION_RESTORED_FROM, ANNOTATION_SCAVENGE_HOLD, ANNOTATION_SWITCHOVER, ANNOTATION_SWITCHOVER_NOW, ANNOTATION_FENCED, ANNOTATION_FENCED_FORCE, LABEL_ROLE } from '../../api/group.js';
import { planHibernation } from './hibernation-plan.js';
import { parseFenced, planFencing } from './fencing-plan.js';
import { LOWERED_PRIORITY, planSwitchover, TARGET_PRIORITY } from './switchover-plan.js';
import type { Backup } from '../../api/backup.js';
import type { CertificateRotationStatus, EventDBClusterStatus, OperationStatus } from '../../api/eventdb-cluster.js';
import type { NodeClient, NodeEndpoint } from '../../node-client/node-client.js';
import type { Clock } from '../../runtime/clock.js';
import type { ReconcileContext, ReconcileResult } from '../../runtime/controller.js';
import type { EventInput, EventSink } from '../../runtime/events.js';
import type { InformerSet } from '../../runtime/informer-set.js';
import { isNotFound, isConflict, KubeApiError, type KubeApi, type KubeObject } from '../../runtime/kube-api.js';
import { runSteps, type Step, type StepOutcome } from '../../runtime/steps.js';
import type { OperatorMetrics } from '../../runtime/metrics.js';
import { BACKUPS, CONFIG_MAPS, EVENTDB_CLUSTERS, JOBS, PDBS, PODS, PVCS, SCAVENGE_SCHEDULES, SECRETS, SERVICES } from '../../runtime/resource-types.js';
import { buildRestoreJob, credentialsSecretName, jobOutcome, parseBackupHold, restoreJobName } from '../../resources/backup-objects.js';
import { decodeSecretValue } from '../../resources/secrets.js';
import { dataClaimName, indexClaimName } from '../../resources/names.js';
import { buildConfigMap } from '../../resources/config-map.js';
import { effectiveSpec, type EffectiveSpec, type OperatorDefaults } from '../../resources/effective-spec.js';
import type { ClusterIdentity } from '../../resources/labels.js';
import { nodesServeTls, renderNodeConfigFile } from '../../resources/node-settings.js';
import { buildPdb } from '../../resources/pdb.js';
import { buildPod, podRevision } from '../../resources/pod.js';
import { buildServices } from '../../resources/services.js';
import { buildClaims, planVolumeGrowth, volumesCondition, type ClaimObservation, type ClaimSnapshots, type VolumesConditionState } from '../../resources/storage.js';
import { canonicalJson } from '../../resources/revision.js';
import { nodeTlsSecretName } from '../../resources/names.js';
import { ChildApplier, ensureClaims, ensureTlsSecrets, ensureUserSecrets, nodeTrustCertificates, opsCredentials } from './children.js';
import { windowState } from './maintenance-window.js';
import type { NodeAccess } from '../../node-client/node-access.js';
import { leaderClaimants, leaderOf, nodeEndpoint, observeMembers, podView, roleLabelOf, type ObservedMember, type PodView } from './observe.js';
import { configuredSize, planRollout, type Action, type NodeKind, type PodToCreate } from './rollout-plan.js';
import { CONDITION_CERTIFICATES, CONDITION_FENCED, CONDITION_VOLUMES, certificatesCondition, computeStatus, type ConditionState, type StatusInput } from './status.js';
import type { NodeSignaller } from '../../node-client/node-signal.js';
import { beginRotation, failureOf, FAILURES_BEFORE_REPORT, FILES_WAIT_LIMIT_MS, finishRotation, methodInWords, nodeVerdict, recordFailure, recordSignalFailure, recordVerified, reloadMethod, rotationNeeded, rotationPlacement, remainingNodes, withoutSignal } from './certificate-rotation.js';
import { nudgeKubelet, readRotationTarget, reloadNode, viewNode, type NodeRotationDeps } from './certificate-reload.js';

export interface ClusterControllerDeps {
  readonly api: KubeApi;
  readonly clusters: InformerSet;
  readonly pods: InformerSet;
  readonly client: NodeClient;
  readonly access: NodeAccess;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly metrics: OperatorMetrics;
  readonly defaults: OperatorDefaults;
  readonly applier: ChildApplier;
  /** Whether the node version forms multi-node clusters (nodeSupportsClustering() in main). */
  readonly clustering: boolean;
  /** SIGHUP through pods/exec (tls.reload Signal); without it such reloads are reported failed. */
  readonly signaller?: NodeSignaller;
  /** What the last status write of each cluster (by uid) said, and when. */
  readonly writtenStatus: Map<string, { text: string; atMs: number; phase?: string }>;
}

/** How often a cluster is looked at: while an operation runs, and when all is quiet. */
export const BUSY_REQUEUE_MS = 2000;
export const IDLE_REQUEUE_MS = 15_000;
const WINDOW_POLL_MAX_MS = 60_000;
const VOLUME_RESIZE_POLL_MS = 5000;
/** How long a leader asked to resign before its volume snapshots may still lead before it is stopped anyway. */
const BACKUP_RESIGN_WAIT_MS = 20_000;

interface ReconcileState {
  readonly deps: ClusterControllerDeps;
  readonly log: Logger;
  readonly cluster: KubeObject;
  readonly identity: ClusterIdentity;
  readonly previous: EventDBClusterStatus | undefined;
  readonly nowMs: number;
  spec?: EffectiveSpec;
  blocked?: { reason: string; message: string };
  configFile: string;
  revisions: Record<NodeKind, string>;
  pods: PodView[];
  members: Map<string, ObservedMember>;
  membersObserved: boolean;
  leader: string | undefined;
  operation: OperationStatus | undefined;
  lastOperation: EventDBClusterStatus['lastOperation'];
  waiting?: { reason: string; message: string };
  failure?: { reason: string; message: string };
  certificates?: EventDBClusterStatus['certificates'];
  /** `sha256:<hex>` of the node certificate in its Secret: what every node should serve. */
  expectedFingerprint?: string;
  /** Set by reload-certificates: CertificatesReloaded as the rotation says it (else computed from gossip). */
  certificatesCondition?: ConditionState;
  /** Set by reload-certificates: status.certificates is final (secretHash verified, reloadedAt). */
  rotationHandled?: boolean;
  nextMaintenanceWindow?: string;
  restartedAt: string;
  requeueAfterMs: number | undefined;
  /** spec.sourceBackup while the cluster is being bootstrapped from it. */
  restore?: RestoreSource;
  restoredFrom?: EventDBClusterStatus['restoredFrom'];
  /** Set by fence: the pods the operator leaves alone (not created, restarted or labelled). */
  fenced: ReadonlySet<string>;
  /** Set by fence: the Fenced condition. */
  fencing?: ConditionState;
  /** Set by hibernate: spec.hibernation is true and nodes still stop, or none is left. */
  hibernation?: 'Hibernating' | 'Hibernated';
  /** Set by grow-volumes: the VolumesExpanded condition. */
  volumes?: VolumesConditionState;
}

/** What the new nodes' volumes are made from. */
export interface RestoreSource {
  readonly backup: string;
  readonly method: 'VolumeSnapshot' | 'FileCopy';
  readonly snapshots: ClaimSnapshots;
  readonly claimName?: string;
  readonly path?: string;
  readonly writerCheckpoint?: number;
}

export const STEPS: readonly Step<ReconcileState>[] = [
  { name: 'load-spec', run: loadSpec },
  { name: 'check-node-support', run: checkNodeSupport },
  { name: 'observe-pods', run: observePods },
  { name: 'load-source-backup', run: loadSourceBackup },
  { name: 'observe-members', run: observeMembersStep },
  { name: 'stop-when-paused', run: stopWhenPaused },
  { name: 'fence', run: fence },
  { name: 'ensure-secrets', run: ensureSecrets },
  { name: 'ensure-config', run: ensureConfig },
  { name: 'ensure-services', run: ensureServices },
  { name: 'ensure-pdb', run: ensurePdb },
  { name: 'grow-volumes', run: growVolumes },
  { name: 'sync-role-labels', run: syncRoleLabels },
  { name: 'hibernate', run: hibernate },
  { name: 'reload-certificates', run: reloadCertificates },
  { name: 'hold-for-backup', run: holdForBackup },
  { name: 'hold-for-scavenge', run: holdForScavenge },
  { name: 'switchover', run: switchoverStep },
  { name: 'roll-out', run: rollOut },
];

export async function reconcileCluster(deps: ClusterControllerDeps, context: ReconcileContext): Promise<ReconcileResult> {
  const cluster = deps.clusters.get(context.key);
  if (cluster === undefined) {
    // Deleted: its children go with it (owner references); nothing to clean up by hand.
    deps.applier.forget(context.namespace, context.name);
    deps.metrics.forgetCluster({ namespace: context.namespace, name: context.name });
    return {};
  }
  if (cluster.metadata.deletionTimestamp !== undefined) {
    deps.metrics.forgetCluster({ namespace: context.namespace, name: context.name });
    return {};
  }
  const state = initialState(deps, context.log, cluster);
  await runSteps(STEPS, state, {
    log: context.log,
    // The status says what failed; the controller retries with back-off.
    onError: async (err) => {
      state.failure = { reason: 'ReconcileError', message: err instanceof Error ? err.message : String(err) };
      await writeStatus(state).catch((statusErr: unknown) => context.log.warn({ err: statusErr }, 'status not written'));
    },
  });
  // A resize in progress is looked at again soon, whatever else the cluster does.
  if (state.volumes?.reason === 'Expanding') state.requeueAfterMs = Math.min(state.requeueAfterMs ?? IDLE_REQUEUE_MS, VOLUME_RESIZE_POLL_MS);
  await writeStatus(state);
  reportMetrics(state);
  return state.requeueAfterMs === undefined ? {} : { requeueAfterMs: state.requeueAfterMs };
}

function initialState(deps: ClusterControllerDeps, log: Logger, cluster: KubeObject): ReconcileState {
  const previous = cluster['status'] as EventDBClusterStatus | undefined;
  return {
    deps,
    log,
    cluster,
    identity: { name: cluster.metadata.name ?? '', namespace: cluster.metadata.namespace ?? '', uid: cluster.metadata.uid ?? '' },
    previous,
    nowMs: deps.clock.nowMs(),
    configFile: '',
    revisions: { quorum: '', 'read-only-replica': '' },
    pods: [],
    members: new Map(),
    fenced: new Set(),
    membersObserved: false,
    leader: undefined,
    operation: previous?.operation,
    lastOperation: previous?.lastOperation,
    restartedAt: cluster.metadata.annotations?.[ANNOTATION_RESTARTED_AT] ?? '',
    requeueAfterMs: IDLE_REQUEUE_MS,
    ...(previous?.restoredFrom === undefined ? {} : { restoredFrom: previous.restoredFrom }),
  };
}

/** Records a blocking problem once: when the Ready condition does not already say it. */
async function emitBlocked(state: ReconcileState, blocked: { reason: string; message: string }): Promise<void> {
  const ready = state.previous?.conditions?.find((condition) => condition.type === 'Ready');
  if (ready?.reason === blocked.reason && ready.message === blocked.message) return;
  await emit(state, { type: 'Warning', reason: blocked.reason, action: 'Validate', note: blocked.message });
}

async function emit(state: ReconcileState, event: EventInput): Promise<void> {
  state.log.info({ reason: event.reason, eventType: event.type }, event.note);
  await state.deps.events.record(state.cluster, event);
}

async function loadSpec(state: ReconcileState): Promise<StepOutcome> {
  const check = effectiveSpec(state.identity.name, state.cluster['spec'], state.deps.defaults);
  if (!check.ok) {
    state.blocked = { reason: 'InvalidSpec', message: check.issues.join('; ') };
    state.requeueAfterMs = undefined;
    await emitBlocked(state, state.blocked);
    return 'stop';
  }
  const spec = check.spec;
  state.spec = spec;
  state.configFile = renderNodeConfigFile(spec);
  const revisionOf = (nodeKind: NodeKind): string =>
    podRevision({ cluster: state.identity, spec, nodeKind, configFile: state.configFile, restartedAt: state.restartedAt });
  state.revisions = { quorum: revisionOf('quorum'), 'read-only-replica': revisionOf('read-only-replica') };
  return 'continue';
}

async function checkNodeSupport(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec;
  if (spec === undefined || state.deps.clustering || (spec.replicas === 1 && spec.readOnlyReplicas === 0)) return 'continue';
  state.blocked = {
    reason: 'ClusteringUnsupported',
    message: `replicas ${spec.replicas} and readOnlyReplicas ${spec.readOnlyReplicas}: this node version has no clustering options (ClusterSize, GossipSeed); only replicas 1 can run`,
  };
  state.requeueAfterMs = undefined;
  await emitBlocked(state, state.blocked);
  return 'stop';
}

async function observePods(state: ReconcileState): Promise<StepOutcome> {
  const { name, namespace } = state.identity;
  state.pods = state.deps.pods
    .list((pod) => pod.metadata.namespace === namespace && pod.metadata.labels?.['eventdb.io/cluster'] === name)
    .map((pod) => podView(name, pod))
    .filter((pod): pod is PodView => pod !== undefined)
    .sort((a, b) => a.name.localeCompare(b.name));
  return 'continue';
}

/**
 * spec.sourceBackup: until the cluster was first Ready, its new volumes are made from the Backup
 * (PVCs from its VolumeSnapshots, or filled by `eventdb restore` from its file copy). Nodes are
 * never started empty in its place: a missing or unfinished Backup stops the reconcile.
 */
async function loadSourceBackup(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  if (spec.sourceBackup === undefined || state.restoredFrom !== undefined) return 'continue';
  const object = await state.deps.api.get(BACKUPS, state.identity.namespace, spec.sourceBackup);
  const block = async (reason: string, message: string, requeueAfterMs: number | undefined): Promise<StepOutcome> => {
    state.blocked = { reason, message };
    state.requeueAfterMs = requeueAfterMs;
    await emitBlocked(state, state.blocked);
    return 'stop';
  };
  if (object === undefined) return block('SourceBackupNotFound', `spec.sourceBackup ${spec.sourceBackup}: no such Backup; no node was created`, 15_000);
  const backup = object as unknown as Backup;
  const status = backup.status ?? {};
  if (status.phase !== 'Completed') {
    return block('SourceBackupNotCompleted', `spec.sourceBackup ${spec.sourceBackup} is ${status.phase ?? 'Pending'}${status.phase === 'Failed' ? ` (${status.message ?? ''})` : ''}; no node was created`, 10_000);
  }
  if (backup.spec.method === 'VolumeSnapshot') {
    const named = (volume: string): string | undefined => status.snapshots?.find((snapshot) => snapshot.volume === volume)?.name;
    const snapshots: ClaimSnapshots = { ...(named('data') === undefined ? {} : { data: named('data') }), ...(named('index') === undefined ? {} : { index: named('index') }) };
    if (snapshots.data === undefined) return block('SourceBackupInvalid', `spec.sourceBackup ${spec.sourceBackup} has no data snapshot`, undefined);
    if ((snapshots.index !== undefined) !== (spec.storage.index !== undefined)) {
      const has = snapshots.index !== undefined ? 'a separate index volume' : 'the index on the data volume';
      return block('RestoreLayoutMismatch', `spec.sourceBackup ${spec.sourceBackup} was taken from nodes with ${has}: spec.storage.index must match`, undefined);
    }
    state.restore = { backup: spec.sourceBackup, method: 'VolumeSnapshot', snapshots, ...(status.writerCheckpoint === undefined ? {} : { writerCheckpoint: status.writerCheckpoint }) };
    return 'continue';
  }
  if (backup.spec.fileCopy === undefined || status.path === undefined) return block('SourceBackupInvalid', `spec.sourceBackup ${spec.sourceBackup} names no file-copy folder`, undefined);
  state.restore = {
    backup: spec.sourceBackup,
    method: 'FileCopy',
    snapshots: {},
    claimName: backup.spec.fileCopy.claimName,
    path: status.path,
    ...(status.writerCheckpoint === undefined ? {} : { writerCheckpoint: status.writerCheckpoint }),
  };
  return 'continue';
}

async function observeMembersStep(state: ReconcileState): Promise<StepOutcome> {
  const { client, access, api } = state.deps;
  const spec = state.spec as EffectiveSpec;
  state.members = await observeMembers({
    cluster: state.identity.name,
    namespace: state.identity.namespace,
    pods: state.pods,
    client,
    access,
    trust: () => nodeTrustCertificates(api, state.identity, spec),
  });
  state.membersObserved = true;
  state.leader = leaderOf(state.members);
  return 'continue';
}

async function stopWhenPaused(state: ReconcileState): Promise<StepOutcome> {
  if (state.spec?.paused !== true) return 'continue';
  state.requeueAfterMs = IDLE_REQUEUE_MS;
  return 'stop';
}

/**
 * Fencing (annotation eventdb.io/fenced, fencing-plan.ts decides): each fenced node's pod is
 * deleted (SIGTERM: the node stops cleanly; its PVCs stay) and from then on the operator neither
 * recreates, restarts nor labels it: the later steps do not see it. Refused as a whole (Warning
 * Event, condition Fenced=False, nothing fenced) for a bad list, or one that leaves fewer voting
 * nodes than a quorum without eventdb.io/fenced-force: "true". Removing a node from the list lets
 * roll-out start it again on its PVCs.
 */
async function fence(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  const annotations = state.cluster.metadata.annotations ?? {};
  const decision = planFencing({
    list: parseFenced(annotations[ANNOTATION_FENCED], { name: state.identity.name, replicas: spec.replicas, readOnlyReplicas: spec.readOnlyReplicas }, state.pods),
    force: annotations[ANNOTATION_FENCED_FORCE] === 'true',
    pods: state.pods,
    clusterSize: configuredSize(state.pods, spec.replicas),
  });
  const said = state.previous?.conditions?.find((condition) => condition.type === CONDITION_FENCED);
  if (decision.kind === 'none') {
    if (said?.status === 'True') await emit(state, { type: 'Normal', reason: 'NodesUnfenced', action: 'Unfence', note: `eventdb.io/fenced is empty: ${said.message.replace(/^fenced: /, '')} start again` });
    state.fencing = { status: 'False', reason: 'NotFenced', message: '' };
    return 'continue';
  }
  if (decision.kind === 'refuse') {
    state.fencing = { status: 'False', reason: decision.reason, message: decision.message };
    if (said?.reason !== decision.reason || said.message !== decision.message) await emit(state, { type: 'Warning', reason: decision.reason, action: 'Fence', note: `${decision.message}; no running node was stopped` });
    state.fenced = new Set(decision.keep);
    return 'continue';
  }
  for (const pod of decision.stop) await stopPod(state, pod.name, pod.uid, 'NodeFenced', `fence ${pod.name}: the node is stopped, its PVCs kept; the operator leaves it alone until it leaves eventdb.io/fenced`);
  state.fenced = new Set(decision.fenced);
  state.pods = state.pods.filter((pod) => !state.fenced.has(pod.name));
  for (const name of state.fenced) state.members.delete(name);
  state.leader = leaderOf(state.members);
  state.fencing = { status: 'True', reason: 'NodesFenced', message: `fenced: ${decision.fenced.join(', ')}` };
  return 'continue';
}

async function ensureSecrets(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  let inherited: { admin: string; ops: string } | undefined;
  if (state.restore !== undefined) {
    // The restored database holds the source cluster's users: keep their passwords.
    const saved = await state.deps.api.get(SECRETS, state.identity.namespace, credentialsSecretName(state.restore.backup));
    const admin = decodeSecretValue(saved, 'admin-password');
    const ops = decodeSecretValue(saved, 'ops-password');
    if (admin !== undefined && ops !== undefined) inherited = { admin, ops };
  }
  const users = await ensureUserSecrets(state.deps.api, state.identity, spec, inherited);
  for (const name of users.created) {
    await emit(state, { type: 'Normal', reason: 'CredentialsGenerated', action: 'Create', note: `generated a password in Secret ${name}` });
  }
  const tls = await ensureTlsSecrets(state.deps.api, state.identity, spec, state.nowMs, state.log);
  for (const event of tls.events) await emit(state, { type: 'Normal', action: 'Create', ...event });
  if (tls.certificates !== undefined) {
    // secretHash is the hash the nodes were verified with: reload-certificates sets it, nothing else.
    const { secretHash: _secretHash, ...described } = tls.certificates;
    const verified = state.previous?.certificates?.secretHash;
    const rotation = state.previous?.certificates?.rotation;
    state.certificates = { ...described, ...(verified === undefined ? {} : { secretHash: verified }), ...(rotation === undefined ? {} : { rotation }) };
  }
  if (tls.fingerprint !== undefined) state.expectedFingerprint = tls.fingerprint;
  const missing = [...users.missing, ...tls.missing];
  if (missing.length === 0) return 'continue';
  state.blocked = { reason: 'SecretMissing', message: `missing Secrets: ${missing.join(', ')}` };
  await emitBlocked(state, state.blocked);
  state.requeueAfterMs = 30_000;
  return 'stop';
}

async function ensureConfig(state: ReconcileState): Promise<StepOutcome> {
  await state.deps.applier.apply(CONFIG_MAPS, buildConfigMap(state.identity, state.configFile));
  return 'continue';
}

async function ensureServices(state: ReconcileState): Promise<StepOutcome> {
  for (const service of buildServices(state.identity)) await state.deps.applier.apply(SERVICES, service);
  return 'continue';
}

async function ensurePdb(state: ReconcileState): Promise<StepOutcome> {
  const size = configuredSize(state.pods, state.spec?.replicas ?? 1);
  await state.deps.applier.apply(PDBS, buildPdb(state.identity, Math.min(size, state.spec?.replicas ?? size)));
  return 'continue';
}

/**
 * Volume growth: spec.storage.data.size / index.size bigger than a PVC's request raises that
 * request (merge patch); the CSI driver and the kubelet resize the volume (online where the
 * driver can), and VolumesExpanded says how far each claim is (its own conditions such as
 * FileSystemResizePending). A StorageClass without allowVolumeExpansion makes the apiserver
 * refuse the patch: VolumesExpanded=False ExpansionRefused, Stalled=True, a Warning Event.
 * Needs no restart, so it runs at any time, outside maintenance windows and operations.
 */
async function growVolumes(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  const { api } = state.deps;
  const { namespace } = state.identity;
  const observed: ClaimObservation[] = [];
  for (const pod of state.pods) {
    observed.push({ name: dataClaimName(pod.name), claim: await api.get(PVCS, namespace, dataClaimName(pod.name)), desiredSize: spec.storage.data.size });
    if (spec.storage.index !== undefined) {
      observed.push({ name: indexClaimName(pod.name), claim: await api.get(PVCS, namespace, indexClaimName(pod.name)), desiredSize: spec.storage.index.size });
    }
  }
  const plan = planVolumeGrowth(observed);
  const expanded: string[] = [];
  const refused: { name: string; message: string }[] = [];
  for (const claim of plan.expand) {
    try {
      await api.patch(PVCS, namespace, claim.name, claim.patch);
      expanded.push(claim.name);
      await emit(state, { type: 'Normal', reason: 'VolumeExpansionStarted', action: 'Expand', note: `${claim.name}: request raised from ${claim.fromSize} to ${claim.toSize}` });
    } catch (err: unknown) {
      if (isNotFound(err)) continue;
      if (!(err instanceof KubeApiError) || (err.statusCode !== 403 && err.statusCode !== 422)) throw err;
      refused.push({ name: claim.name, message: err.message });
    }
  }
  const condition = volumesCondition({ plan, expanded, refused, claims: observed.filter((entry) => entry.claim !== undefined).length });
  const said = state.previous?.conditions?.find((entry) => entry.type === CONDITION_VOLUMES);
  if (condition.reason === 'ExpansionRefused' && (said?.reason !== condition.reason || said.message !== condition.message)) {
    await emit(state, { type: 'Warning', reason: 'VolumeExpansionRefused', action: 'Expand', note: condition.message });
  }
  if (condition.reason === 'VolumesAtSize' && said?.reason === 'Expanding') {
    await emit(state, { type: 'Normal', reason: 'VolumesExpanded', action: 'Expand', note: condition.message });
  }
  state.volumes = condition;
  return 'continue';
}

async function syncRoleLabels(state: ReconcileState): Promise<StepOutcome> {
  for (const pod of state.pods) {
    const role = roleLabelOf(state.members.get(pod.name), state.leader);
    if (role === undefined || (pod.roleLabel ?? null) === role || pod.terminating) continue;
    try {
      await state.deps.api.patch(PODS, state.identity.namespace, pod.name, { metadata: { labels: { [LABEL_ROLE]: role } } });
      if (role === 'leader') state.log.info({ pod: pod.name }, 'pod labelled leader');
    } catch (err: unknown) {
      if (!isNotFound(err)) throw err;
    }
  }
  return 'continue';
}

/**
 * Hibernation (spec.hibernation: true; hibernation-plan.ts decides): a Backup or scavenge that
 * holds the cluster finishes first; any other operation (rolling update, scale, switchover) is
 * ended (lastOperation result Superseded: it resumes from the spec after waking). Replicas and
 * followers are stopped first, then the node that led, after it resigned; PVCs and Secrets stay,
 * nothing is created while it is set (the step stops the reconcile). false: roll-out creates
 * every node again on its PVCs, the cluster size they had.
 */
async function hibernate(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  if (!spec.hibernation) {
    if (state.previous?.phase === 'Hibernated' || state.previous?.phase === 'Hibernating') {
      await emit(state, { type: 'Normal', reason: 'ClusterWaking', action: 'Wake', note: 'spec.hibernation is false: starting every node again on its volumes' });
    }
    return 'continue';
  }
  const current = state.operation;
  if (current?.kind === 'Backup' || current?.kind === 'Scavenge' || holdRequested(state) !== undefined) {
    state.waiting = { reason: 'HibernationWaiting', message: `hibernation waits for ${current?.kind ?? holdRequested(state) ?? ''} ${current?.id ?? ''} to release the cluster` };
    return 'continue';
  }
  if (current !== undefined) {
    state.operation = undefined;
    state.lastOperation = { id: current.id, kind: current.kind, result: 'Superseded', finishedAt: new Date(state.nowMs).toISOString() };
  }
  if (state.previous?.phase !== 'Hibernating' && state.previous?.phase !== 'Hibernated' && state.pods.length > 0) {
    await emit(state, { type: 'Normal', reason: 'HibernationStarted', action: 'Hibernate', note: `spec.hibernation is true: stopping ${state.pods.length} node(s), the leader last; PVCs and Secrets are kept` });
  }
  const step = planHibernation(state.pods, state.leader);
  state.hibernation = step.kind === 'hibernated' ? 'Hibernated' : 'Hibernating';
  state.requeueAfterMs = step.kind === 'hibernated' ? IDLE_REQUEUE_MS : BUSY_REQUEUE_MS;
  switch (step.kind) {
    case 'hibernated':
      if (state.previous?.phase !== 'Hibernated') await emit(state, { type: 'Normal', reason: 'Hibernated', action: 'Hibernate', note: 'every node is stopped; PVCs and Secrets are kept' });
      return 'stop';
    case 'wait':
      state.waiting = { reason: 'Hibernating', message: `waiting for ${step.stopping.join(', ')} to stop` };
      return 'stop';
    case 'stop':
      state.waiting = { reason: 'Hibernating', message: `stopping ${step.pods.map((pod) => pod.name).join(', ')}` };
      await writeStatus(state);
      for (const pod of step.pods) await stopPod(state, pod.name, pod.uid, 'NodeStoppingForHibernation', `stop ${pod.name} (hibernation)`);
      return 'stop';
    case 'stop-last':
      state.waiting = { reason: 'Hibernating', message: `stopping ${step.pod.name}, the last node${step.resign ? ', after it resigned' : ''}` };
      await writeStatus(state);
      if (step.resign) await resign(state, step.pod.name);
      await stopPod(state, step.pod.name, step.pod.uid, 'NodeStoppingForHibernation', `stop ${step.pod.name}, the last node (hibernation)`);
      return 'stop';
  }
}

/** Deletes one pod by uid (SIGTERM: the node closes its files); PVCs stay. */
async function stopPod(state: ReconcileState, pod: string, uid: string, reason: string, note: string): Promise<void> {
  await emit(state, { type: 'Normal', reason, action: 'Stop', note });
  try {
    await state.deps.api.delete(PODS, state.identity.namespace, pod, { uid });
  } catch (err: unknown) {
    if (!isConflict(err) && !isNotFound(err)) throw err;
  }
}

/**
 * The CA certificates each cluster's nodes trusted at the last reconcile without a rotation (by
 * uid): when a rotation starts they are written into status.certificates.rotation, so nodes not
 * yet reloaded can still be verified, by this process or by one that takes over.
 */
const trustedCasBefore = new Map<string, string[]>();

/** Which hold a Backup or ScavengeSchedule asks for by its annotation, if any. */
function holdRequested(state: ReconcileState): 'Backup' | 'Scavenge' | undefined {
  const annotations = state.cluster.metadata.annotations ?? {};
  if (annotations[ANNOTATION_BACKUP_HOLD] !== undefined) return 'Backup';
  if (annotations[ANNOTATION_SCAVENGE_HOLD] !== undefined) return 'Scavenge';
  return undefined;
}

/**
 * Certificate rotation: the content hash of the certificate and CA Secrets (certificate, key,
 * trusted CAs) differs from the one the nodes were last verified with, or a node serves another
 * certificate. Then every running node is brought to it: once its certificate file is the new
 * one (the kubelet is nudged by a pod annotation), it is reloaded by tls.reload (SIGHUP through
 * pods/exec, or POST /admin/reloadconfig) and verified by its own report (loaded certificate and
 * trusted roots) and the TLS handshake of that request. A refused reload is tried again with
 * back-off and reported (condition, Warning Event); the node keeps its old certificates.
 *
 * A reload restarts nothing, so the rotation never waits for another operation: with the cluster
 * free it is status.operation (CertificateReload, roll-out waits for it); while a Backup,
 * Scavenge, rolling update or scale holds the cluster it runs next to that operation, which
 * stays status.operation (rotationPlacement). Its state (verified nodes, failures and back-off,
 * when the Secret changed) is status.certificates.rotation, so a restarted operator continues it.
 */
async function reloadCertificates(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  if (!nodesServeTls(spec) || state.certificates === undefined || !state.membersObserved) return 'continue';
  const { api, client, access } = state.deps;
  const read = await readRotationTarget(api, state.identity, spec);
  if (read === undefined) return 'continue';
  const { target } = read;
  const uid = state.identity.uid;
  const previous = state.previous?.certificates;
  const running = state.pods.filter((pod) => pod.phase === 'Running' && !pod.terminating && pod.servesTls);
  const served = running.map((pod) => state.members.get(pod.name)?.certificateFingerprint).filter((entry): entry is string => entry !== undefined);
  const current = state.operation;
  const ongoing = previous?.rotation !== undefined && previous.rotation.finishedAt === undefined ? previous.rotation : undefined;
  const keep = {
    ...state.certificates,
    ...(previous?.secretHash === undefined ? {} : { secretHash: previous.secretHash }),
    ...(previous?.reloadedAt === undefined ? {} : { reloadedAt: previous.reloadedAt }),
    ...(previous?.rotation === undefined ? {} : { rotation: previous.rotation }),
  };
  state.rotationHandled = true;
  if (ongoing === undefined && current?.kind !== 'CertificateReload' && !rotationNeeded({ verifiedHash: previous?.secretHash, target, served })) {
    state.certificates = { ...keep, secretHash: target.hash };
    trustedCasBefore.set(uid, [...read.caPems]);
    const computed = certificatesStatus(state).tls;
    // A new cluster: when its nodes are first seen serving the Secret's certificate.
    if (computed.status === 'True' && previous?.reloadedAt === undefined) state.certificates = { ...state.certificates, reloadedAt: new Date(state.nowMs).toISOString() };
    if (computed.status === 'True' && previous?.reloadedAt !== undefined) {
      state.certificatesCondition = { ...computed, reason: 'CertificatesReloaded', message: `${computed.message}; Secret hash ${target.hash}, last reloaded at ${previous.reloadedAt}` };
    }
    return 'continue';
  }
  state.certificates = keep;
  if (running.length === 0) return 'continue';
  const configured = spec.tls.reload ?? 'Signal';
  const placement = rotationPlacement({ operation: current, holdRequested: holdRequested(state) });
  // Started when the change is seen (the Secrets were just read), not when this reconcile began.
  const begun = beginRotation({ previous: previous?.rotation, target, method: configured, changedAtMs: read.changedAtMs, nowMs: Math.max(state.nowMs, state.deps.clock.nowMs()), previousCas: [...(trustedCasBefore.get(uid) ?? []), ...(ongoing?.previousCaCertificates ?? [])] });
  let rotation = placement.kind === 'alongside' ? { ...begun.rotation, alongside: placement.holder } : begun.rotation;
  // An operator that may not exec in pods (POD_EXEC=false, e.g. the chart's rbac.podExec false) reloads by Endpoint from the start.
  if (configured === 'Signal' && state.deps.signaller === undefined && rotation.fallback === undefined) {
    rotation = withoutSignal(rotation, 'the operator may not exec in pods (POD_EXEC=false; the chart value rbac.podExec=false removes pods/exec from its RBAC)', state.nowMs);
    if (!begun.started) await announceFallback(state, rotation);
  }
  const next = placement.kind === 'alongside' ? ` next to ${placement.holder}, which keeps the cluster` : '';
  if (begun.started) {
    await emit(state, { type: 'Normal', reason: 'CertificateReloadStarted', action: 'Reload', note: `the certificate or CA Secret changed (hash ${target.hash}): reloading ${running.length} node(s) by ${methodInWords(rotation, configured)}${next}` });
    if (rotation.fallback !== undefined) await announceFallback(state, rotation);
  }
  const id = `certificates-${target.hash.replace(/^sha256:/, '')}`;
  let operation: OperationStatus | undefined;
  if (placement.kind === 'own-operation') {
    operation =
      current?.kind === 'CertificateReload' && current.id === id
        ? current
        : { id, kind: 'CertificateReload', step: 'reload certificates', reason: 'SecretChanged', startedAt: rotation.startedAt, completed: [] };
  } else if (placement.releaseOperation) {
    // A Backup or ScavengeSchedule asks for the cluster: hold-for-backup/-scavenge take it now.
    state.operation = undefined;
  }
  const deps: NodeRotationDeps = {
    api,
    client,
    access,
    signaller: state.deps.signaller,
    cluster: state.identity,
    log: state.log,
    trust: [...new Set([...(rotation.previousCaCertificates ?? []), ...read.caPems])],
    credentials: await opsCredentials(api, state.identity.namespace, spec),
  };
  // A further Secret change during this rotation: nodes may then serve certificates of any of these CAs.
  trustedCasBefore.set(uid, [...deps.trust]);
  const ageMs = state.nowMs - Date.parse(rotation.startedAt);
  const waiting: string[] = [];
  const failed: string[] = [];
  const alreadyVerified = new Set((rotation.verified ?? []).filter((pod) => running.some((candidate) => candidate.name === pod)));
  const todo = remainingNodes(running.map((pod) => pod.name), [...alreadyVerified], state.leader);
  await Promise.all(
    todo.map(async (name) => {
      const pod = running.find((candidate) => candidate.name === name) as PodView;
      const view = await viewNode(deps, pod);
      const verdict = nodeVerdict(view, target);
      const verified = async (how: string): Promise<void> => {
        rotation = recordVerified(rotation, name);
        await emit(state, { type: 'Normal', reason: 'NodeCertificateReloaded', action: 'Reload', note: `${name} serves sha256:${target.fingerprint} (${how}); verified by its report and a TLS handshake` });
      };
      const fail = async (message: string): Promise<void> => {
        rotation = recordFailure(rotation, name, message, state.nowMs);
        const count = failureOf(rotation, name)?.count ?? 1;
        if (count >= FAILURES_BEFORE_REPORT) failed.push(`${name}: ${message}`);
        else waiting.push(`${name}: retrying (${message})`);
        await emit(state, { type: 'Warning', reason: 'CertificateReloadFailed', action: 'Reload', note: `${name} did not take the new certificates (attempt ${count}, ${reloadMethod(rotation, configured)}): ${message}; it keeps serving its old certificates` });
      };
      if (verdict.kind === 'verified') return verified('already loaded');
      if (verdict.kind === 'unreachable') return void waiting.push(`${name}: ${verdict.why}`);
      // The kubelet refreshes the pod's Secret volumes (certificate and CA) at once.
      await nudgeKubelet(api, state.identity, pod, target.hash).catch((err: unknown) => state.log.warn({ err, pod: name }, 'pod not annotated'));
      if (verdict.kind === 'waiting-for-files') {
        if (ageMs > FILES_WAIT_LIMIT_MS) failed.push(`${name}: its certificate file is still not the Secret's after ${Math.round(ageMs / 1000)} s (${verdict.why})`);
        else waiting.push(`${name}: waiting for the kubelet to update its files`);
        return;
      }
      const failure = failureOf(rotation, name);
      if (failure !== undefined && state.nowMs < failure.nextAttemptAtMs) {
        (failure.count >= FAILURES_BEFORE_REPORT ? failed : waiting).push(`${name}: ${failure.lastError}`);
        return;
      }
      let result = await reloadNode(deps, pod, view, target, reloadMethod(rotation, configured));
      if (result.kind === 'signal-failed') {
        const before = rotation.fallback;
        rotation = recordSignalFailure(rotation, name, result, state.nowMs);
        if (rotation.fallback === undefined) return fail(result.message);
        // Signal is given up for this rotation: this node is reloaded by Endpoint now.
        if (before === undefined) await announceFallback(state, rotation);
        result = await reloadNode(deps, pod, view, target, 'Endpoint');
        if (result.kind === 'signal-failed') return fail(result.message);
      }
      if (result.kind === 'verified') return verified(`reloaded by ${methodInWords(rotation, configured)}`);
      if (result.kind === 'refused') return fail(result.message);
      const why = result.kind === 'not-yet' ? result.why : 'no reload seen yet';
      if (ageMs > FILES_WAIT_LIMIT_MS) return fail(`keeps the old certificates: ${why}`);
      waiting.push(`${name}: ${why}`);
    }),
  );
  const done = running.filter((pod) => (rotation.verified ?? []).includes(pod.name)).map((pod) => pod.name);
  if (done.length === running.length) {
    // The time the last node was verified: now, not the reconcile's start (reloads took a while).
    const verifiedMs = Math.max(state.nowMs, state.deps.clock.nowMs());
    const nowIso = new Date(verifiedMs).toISOString();
    rotation = finishRotation(rotation, verifiedMs);
    const seconds = rotation.seconds ?? 0;
    state.deps.metrics.certificateRotationSeconds.set({ namespace: state.identity.namespace, name: state.identity.name }, seconds);
    state.deps.metrics.operationSeconds.observe({ kind: 'CertificateReload', result: 'Succeeded' }, (verifiedMs - Date.parse(rotation.startedAt)) / 1000);
    state.deps.metrics.certificateRotations.inc({ namespace: state.identity.namespace, name: state.identity.name });
    if (placement.kind === 'own-operation') {
      state.operation = undefined;
      state.lastOperation = { id, kind: 'CertificateReload', result: 'Succeeded', finishedAt: nowIso };
    }
    state.certificates = { ...keep, secretHash: target.hash, reloadedAt: nowIso, rotation };
    trustedCasBefore.set(uid, [...read.caPems]);
    const message = `${running.length} node(s) serve the certificate of Secret hash ${target.hash} (sha256:${target.fingerprint}), reloaded by ${methodInWords(rotation, configured)} at ${nowIso}, ${seconds.toFixed(1)} s after the Secret changed${rotation.alongside === undefined ? '' : ` (next to ${rotation.alongside})`}`;
    state.certificatesCondition = { status: 'True', reason: 'CertificatesReloaded', message };
    await emit(state, { type: 'Normal', reason: 'CertificatesReloaded', action: 'Reload', note: message });
    return 'continue';
  }
  rotation = { ...rotation, verified: done };
  state.certificates = { ...keep, rotation };
  const progress = `${done.length} of ${running.length} verified`;
  state.certificatesCondition =
    failed.length > 0
      ? { status: 'False', reason: 'ReloadFailed', message: `${failed.join('; ')}; the old certificates are still served${next}`.slice(0, 2000) }
      : { status: 'False', reason: 'Reloading', message: `reloading nodes for Secret hash ${target.hash} by ${methodInWords(rotation, configured)}${next}: ${progress}${waiting.length === 0 ? '' : `; ${waiting.join('; ')}`}`.slice(0, 2000) };
  state.requeueAfterMs = BUSY_REQUEUE_MS;
  if (operation === undefined) return 'continue';
  state.operation = {
    ...operation,
    completed: done,
    step: `reload certificates: ${progress}`,
    ...(failed.length + waiting.length === 0 ? {} : { waitingFor: [...failed, ...waiting].join('; ').slice(0, 1000) }),
  };
  return 'stop';
}

/** The rotation gave Signal up: said once in a Warning Event and the log (the condition says it from then on). */
async function announceFallback(state: ReconcileState, rotation: CertificateRotationStatus): Promise<void> {
  const reason = rotation.fallback?.reason ?? '';
  state.log.warn({ fallback: rotation.fallback, secretHash: rotation.secretHash }, 'certificate reload falls back from Signal to Endpoint');
  await emit(state, { type: 'Warning', reason: 'CertificateReloadFallback', action: 'Reload', note: `tls.reload Signal cannot be used (${reason}): the nodes are reloaded by Endpoint (POST /admin/reloadconfig) for this rotation` });
}

/**
 * A Backup holds the cluster (annotation eventdb.io/backup-hold, written by the Backup
 * controller): the backup becomes the cluster's one operation, so no rolling update or scale
 * starts during it; for volume snapshots the source node is stopped (SIGTERM: its files are
 * closed and consistent) and not started again until the hold is released. A rolling update
 * already running finishes first: the Backup waits for it.
 */
async function holdForBackup(state: ReconcileState): Promise<StepOutcome> {
  let hold = parseBackupHold(state.cluster.metadata.annotations?.[ANNOTATION_BACKUP_HOLD]);
  const holder = hold === undefined ? undefined : await state.deps.api.get(BACKUPS, state.identity.namespace, hold.backup);
  const holderPhase = (holder?.['status'] as { phase?: string } | undefined)?.phase;
  if (hold !== undefined && (holder === undefined || holderPhase === 'Completed' || holderPhase === 'Failed')) {
    // The Backup went away or finished without releasing the cluster.
    await state.deps.api.patch(EVENTDB_CLUSTERS, state.identity.namespace, state.identity.name, { metadata: { annotations: { [ANNOTATION_BACKUP_HOLD]: null } } });
    hold = undefined;
  }
  const current = state.operation;
  if (hold === undefined) {
    if (current?.kind === 'Backup') {
      state.operation = undefined;
      state.lastOperation = { id: current.id, kind: 'Backup', result: 'Succeeded', finishedAt: new Date(state.nowMs).toISOString() };
      await emit(state, { type: 'Normal', reason: 'BackupReleased', action: 'Backup', note: `backup ${current.id} released the cluster${current.podStep === 'Stopped' || current.podStep === 'Stopping' ? `; starting ${current.pod ?? ''} again` : ''}` });
    }
    return 'continue';
  }
  if (current !== undefined && current.kind !== 'Backup') return 'continue';
  const nowIso = new Date(state.nowMs).toISOString();
  let operation: OperationStatus =
    current?.kind === 'Backup' && current.id === hold.backup
      ? current
      : { id: hold.backup, kind: 'Backup', step: `backup ${hold.backup} of ${hold.pod}`, startedAt: nowIso, pod: hold.pod };
  if (operation !== current) {
    await emit(state, { type: 'Normal', reason: 'BackupStarted', action: 'Backup', note: `backup ${hold.backup} holds the cluster (${hold.mode === 'Stop' ? `${hold.pod} stops for volume snapshots` : `file copy of ${hold.pod}`})` });
  }
  state.requeueAfterMs = BUSY_REQUEUE_MS;
  if (hold.mode === 'Keep') {
    state.operation = { ...operation, step: `file copy of ${hold.pod} for backup ${hold.backup}`, podStep: 'Copying' };
    return 'stop';
  }
  const pod = state.pods.find((candidate) => candidate.name === hold.pod);
  // The leader is never stopped without a hand-over: it resigns first; if it still leads after
  // BACKUP_RESIGN_WAIT_MS it is stopped all the same (the election follows its stop).
  const voting = state.pods.filter((candidate) => candidate.kind === 'quorum').length;
  if (pod !== undefined && !pod.terminating && state.leader === pod.name && voting > 1) {
    const askedAtMs = operation.podStep === 'Resigning' ? Date.parse(operation.stepStartedAt ?? '') : Number.NaN;
    if (Number.isNaN(askedAtMs)) {
      state.operation = { ...operation, step: `${hold.pod} resigns before it stops for volume snapshots (backup ${hold.backup})`, podStep: 'Resigning', stepStartedAt: nowIso };
      await writeStatus(state);
      await resign(state, pod.name);
      return 'stop';
    }
    if (state.nowMs - askedAtMs < BACKUP_RESIGN_WAIT_MS) {
      state.operation = operation;
      return 'stop';
    }
    await emit(state, { type: 'Warning', reason: 'LeaderStillLeading', action: 'Stop', note: `${hold.pod} still leads ${BACKUP_RESIGN_WAIT_MS / 1000} s after it was asked to resign: stopping it for backup ${hold.backup} anyway` });
  }
  if (pod !== undefined && !pod.terminating) {
    operation = { ...operation, step: `stop ${hold.pod} for volume snapshots (backup ${hold.backup})`, podStep: 'Stopping', stepStartedAt: nowIso };
    state.operation = operation;
    await writeStatus(state);
    await emit(state, { type: 'Normal', reason: 'NodeStoppingForBackup', action: 'Stop', note: `stop ${hold.pod} while its volumes are snapshotted (backup ${hold.backup})` });
    try {
      await state.deps.api.delete(PODS, state.identity.namespace, pod.name, { uid: pod.uid });
    } catch (err: unknown) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
    return 'stop';
  }
  state.operation = pod === undefined
    ? { ...operation, step: `${hold.pod} stopped for volume snapshots (backup ${hold.backup})`, podStep: 'Stopped' }
    : { ...operation, podStep: 'Stopping' };
  return 'stop';
}

/**
 * A ScavengeSchedule's cycle holds the cluster (annotation eventdb.io/scavenge-hold:
 * `<schedule>/<cycle id>`, written by its controller after its status names the cycle): the
 * cycle is the cluster's one operation (kind Scavenge), so no rolling update, scale or backup
 * starts while a node scavenges. A rolling update already running finishes first. A hold whose
 * schedule is gone or no longer runs that cycle is removed.
 */
async function holdForScavenge(state: ReconcileState): Promise<StepOutcome> {
  const text = state.cluster.metadata.annotations?.[ANNOTATION_SCAVENGE_HOLD];
  let hold = text === undefined ? undefined : /^([a-z0-9][a-z0-9.-]*)\/([0-9a-f-]+)$/.exec(text);
  if (text !== undefined) {
    const schedule = hold === undefined || hold === null ? undefined : await state.deps.api.get(SCAVENGE_SCHEDULES, state.identity.namespace, hold[1] ?? '');
    const status = schedule?.['status'] as { state?: string; currentCycle?: { id?: string } } | undefined;
    if (hold === null || hold === undefined || status?.currentCycle?.id !== hold[2] || (status?.state !== 'InProgress' && status?.state !== 'Pausing')) {
      await state.deps.api.patch(EVENTDB_CLUSTERS, state.identity.namespace, state.identity.name, { metadata: { annotations: { [ANNOTATION_SCAVENGE_HOLD]: null } } });
      hold = undefined;
    }
  }
  const current = state.operation;
  if (hold === undefined || hold === null) {
    if (current?.kind === 'Scavenge') {
      state.operation = undefined;
      state.lastOperation = { id: current.id, kind: 'Scavenge', result: 'Succeeded', finishedAt: new Date(state.nowMs).toISOString() };
      await emit(state, { type: 'Normal', reason: 'ScavengeReleased', action: 'Scavenge', note: `scavenge cycle ${current.id} released the cluster` });
    }
    return 'continue';
  }
  if (current !== undefined && !(current.kind === 'Scavenge' && current.id === hold[2])) return 'continue';
  if (current === undefined) {
    state.operation = { id: hold[2] ?? '', kind: 'Scavenge', step: `scavenge cycle of ScavengeSchedule ${hold[1] ?? ''}`, startedAt: new Date(state.nowMs).toISOString() };
    await emit(state, { type: 'Normal', reason: 'ScavengeStarted', action: 'Scavenge', note: `ScavengeSchedule ${hold[1] ?? ''} holds the cluster for cycle ${hold[2] ?? ''}: its nodes are scavenged one at a time` });
  }
  state.requeueAfterMs = BUSY_REQUEUE_MS;
  return 'stop';
}

/**
 * Switchover (annotation eventdb.io/switchover: <voting pod>): planSwitchover decides; this step
 * sets the election priorities (the target TARGET_PRIORITY, the other voting nodes
 * LOWERED_PRIORITY) on every running voting node, persists status.operation (kind Switchover),
 * then asks the leader to resign, and again a leader that is not the target, until the target
 * leads. The result (SwitchoverCompleted / SwitchoverRefused / SwitchoverFailed) is an Event and
 * the annotations are cleared. Waits for a maintenance window unless eventdb.io/switchover-now is
 * "true", and for another operation to finish.
 */
async function switchoverStep(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  const annotations = state.cluster.metadata.annotations ?? {};
  const window = windowState(spec.maintenanceWindows, state.nowMs);
  const decision = planSwitchover({
    requested: annotations[ANNOTATION_SWITCHOVER]?.trim(),
    now: annotations[ANNOTATION_SWITCHOVER_NOW] === 'true',
    windowOpen: window.open,
    ...(window.open || window.opensAtMs === undefined ? {} : { windowOpensAtMs: window.opensAtMs }),
    operation: state.operation,
    pods: state.pods,
    members: state.members,
    leader: state.leader,
    nowMs: state.nowMs,
  });
  const clearRequest = async (): Promise<void> => {
    await state.deps.api.patch(EVENTDB_CLUSTERS, state.identity.namespace, state.identity.name, { metadata: { annotations: { [ANNOTATION_SWITCHOVER]: null, [ANNOTATION_SWITCHOVER_NOW]: null } } });
  };
  const finish = (operation: OperationStatus | undefined, result: string): void => {
    if (operation === undefined) return;
    state.operation = undefined;
    state.lastOperation = { id: operation.id, kind: 'Switchover', result, finishedAt: new Date(state.nowMs).toISOString() };
    state.deps.metrics.operationSeconds.observe({ kind: 'Switchover', result }, (state.nowMs - Date.parse(operation.startedAt)) / 1000);
  };
  switch (decision.kind) {
    case 'none':
      return 'continue';
    case 'refuse':
      await emit(state, { type: 'Warning', reason: decision.reason, action: 'Switchover', note: `${decision.message}; the annotation ${ANNOTATION_SWITCHOVER} was removed` });
      await clearRequest();
      return 'continue';
    case 'wait':
      state.log.info({ reason: decision.reason }, decision.message);
      if (decision.reason !== 'SwitchoverWaitingForOperation') await emit(state, { type: 'Normal', reason: decision.reason, action: 'Switchover', note: decision.message });
      return 'continue';
    case 'resign': {
      if (decision.started) await emit(state, { type: 'Normal', reason: 'SwitchoverStarted', action: 'Switchover', note: `switchover from ${decision.leader} to ${decision.target}` });
      state.operation = decision.operation;
      await setSwitchoverPriorities(state, decision.target);
      await writeStatus(state);
      await resign(state, decision.leader);
      state.requeueAfterMs = BUSY_REQUEUE_MS;
      return 'stop';
    }
    case 'await-election':
      state.operation = decision.operation;
      state.requeueAfterMs = BUSY_REQUEUE_MS;
      return 'stop';
    case 'complete':
      finish(decision.operation, 'Succeeded');
      await emit(state, { type: 'Normal', reason: 'SwitchoverCompleted', action: 'Switchover', note: decision.message });
      await clearRequest();
      return 'continue';
    case 'fail':
      finish(decision.operation, 'Failed');
      await emit(state, { type: 'Warning', reason: decision.reason, action: 'Switchover', note: `${decision.message}; the annotation ${ANNOTATION_SWITCHOVER} was removed` });
      await clearRequest();
      return 'continue';
    case 'cancel':
      finish(decision.operation, 'Cancelled');
      await emit(state, { type: 'Normal', reason: 'SwitchoverCancelled', action: 'Switchover', note: `the annotation ${ANNOTATION_SWITCHOVER} was removed: switchover to ${decision.operation.pod ?? ''} stopped (leader ${state.leader ?? 'none'})` });
      return 'continue';
  }
}

/** Raises the target's election priority and lowers every other running voting node's. */
async function setSwitchoverPriorities(state: ReconcileState, target: string): Promise<void> {
  const voting = state.pods.filter((pod) => pod.kind === 'quorum' && pod.phase === 'Running' && !pod.terminating);
  for (const pod of voting) {
    const reached = await reachNode(state, pod.name);
    if (reached === undefined) continue;
    const priority = pod.name === target ? TARGET_PRIORITY : LOWERED_PRIORITY;
    const outcome = await state.deps.client.setPriority(reached.endpoint, reached.credentials, priority).catch((err: unknown) => ({ kind: 'error' as const, message: String(err) }));
    if (outcome.kind !== 'done') state.log.warn({ pod: pod.name, priority, outcome }, 'node priority not set');
  }
}

function restartReason(state: ReconcileState): string {
  const spec = state.spec as EffectiveSpec;
  if (state.pods.some((pod) => pod.image !== undefined && pod.image !== spec.image)) return 'ImageChanged';
  if (state.restartedAt !== (state.previous?.restartedAt ?? '')) return 'RestartRequested';
  return 'ConfigurationChanged';
}

async function rollOut(state: ReconcileState): Promise<StepOutcome> {
  const spec = state.spec as EffectiveSpec;
  const window = windowState(spec.maintenanceWindows, state.nowMs);
  if (!window.open && window.opensAtMs !== undefined) state.nextMaintenanceWindow = new Date(window.opensAtMs).toISOString();
  const decision = planRollout({
    cluster: state.identity.name,
    replicas: spec.replicas,
    readOnlyReplicas: spec.readOnlyReplicas,
    revisions: state.revisions,
    pods: state.pods,
    members: state.members,
    leader: state.leader,
    operation: state.operation,
    gates: {
      windowOpen: window.open,
      ...(window.open || window.opensAtMs === undefined ? {} : { windowOpensAtMs: window.opensAtMs }),
      supervised: spec.updateStrategy === 'Supervised',
      ...(state.cluster.metadata.annotations?.[ANNOTATION_APPROVE] === undefined ? {} : { approvedId: state.cluster.metadata.annotations[ANNOTATION_APPROVE] }),
    },
    nowMs: state.nowMs,
    restartReason: restartReason(state),
  });
  state.operation = decision.finished === undefined ? decision.operation : undefined;
  if (decision.started !== undefined) await operationStarted(state, decision.started);
  if (decision.finished !== undefined) await operationFinished(state, decision.finished.operation);
  const action = withoutFenced(decision.action, state.fenced);
  state.requeueAfterMs = requeueFor(state, action, window.open ? undefined : window.opensAtMs);
  await act(state, action);
  return 'continue';
}

/** A fenced node is never created again while it is fenced. */
function withoutFenced(action: Action, fenced: ReadonlySet<string>): Action {
  if (action.kind !== 'create' || fenced.size === 0) return action;
  const pods = action.pods.filter((pod) => !fenced.has(pod.name));
  return pods.length === 0 ? { kind: 'none' } : { ...action, pods };
}

function requeueFor(state: ReconcileState, action: Action, opensAtMs: number | undefined): number {
  if (action.kind === 'wait' && action.reason === 'WaitingForMaintenanceWindow' && opensAtMs !== undefined) {
    return Math.max(BUSY_REQUEUE_MS, Math.min(WINDOW_POLL_MAX_MS, opensAtMs - state.nowMs));
  }
  if (action.kind === 'wait' && action.reason === 'WaitingForApproval') return IDLE_REQUEUE_MS;
  return state.operation !== undefined || action.kind !== 'none' ? BUSY_REQUEUE_MS : IDLE_REQUEUE_MS;
}

async function operationStarted(state: ReconcileState, operation: OperationStatus): Promise<void> {
  const what = operation.kind === 'Scale' ? `scale from ${operation.fromReplicas} to ${operation.toReplicas} nodes` : `rolling update (${operation.reason})`;
  await emit(state, { type: 'Normal', reason: `${operation.kind}Started`, action: operation.kind, note: `${what}; operation ${operation.id}` });
}

async function operationFinished(state: ReconcileState, operation: OperationStatus): Promise<void> {
  const seconds = (state.nowMs - Date.parse(operation.startedAt)) / 1000;
  state.deps.metrics.operationSeconds.observe({ kind: operation.kind, result: 'Succeeded' }, seconds);
  state.lastOperation = { id: operation.id, kind: operation.kind, result: 'Succeeded', finishedAt: new Date(state.nowMs).toISOString() };
  await emit(state, {
    type: 'Normal',
    reason: `${operation.kind}Completed`,
    action: operation.kind,
    note: `operation ${operation.id} completed in ${seconds.toFixed(1)} s (${(operation.completed ?? []).join(', ') || 'no restarts'})`,
  });
}

async function act(state: ReconcileState, action: Action): Promise<void> {
  switch (action.kind) {
    case 'none':
      return;
    case 'wait':
      state.waiting = { reason: action.reason, message: action.message };
      if (action.reason === 'WaitingForMaintenanceWindow' || action.reason === 'WaitingForApproval') {
        await emit(state, { type: 'Normal', reason: action.reason, action: 'Wait', note: action.message });
      } else if (action.reason === 'WaitingForCatchUp' && state.operation?.kind === 'Scale') {
        // The contract: scaling is refused, with a condition and an Event, while a member lags.
        await emit(state, { type: 'Warning', reason: 'ScaleWaitingForCatchUp', action: 'Scale', note: action.message });
      }
      return;
    case 'create':
      return createPods(state, action.pods);
    case 'delete':
      await writeStatus(state);
      return deletePod(state, action.pod, action.uid, action.why);
    case 'resign':
      await writeStatus(state);
      return resign(state, action.pod);
  }
}

async function createPods(state: ReconcileState, pods: readonly PodToCreate[]): Promise<void> {
  const spec = state.spec as EffectiveSpec;
  for (const pod of pods) {
    if (state.fenced.has(pod.name)) continue;
    await ensureClaims(state.deps.api, buildClaims(state.identity, spec, pod.name, pod.kind, state.restore?.snapshots ?? {}));
    if (state.restore?.method === 'FileCopy' && !(await restoredFromFileCopy(state, pod.name))) continue;
    // A pod the status listed before, missing outside any operation, went away: it is remade.
    const recovering = state.operation === undefined && (state.previous?.members ?? []).some((member) => member.pod === pod.name);
    const object = buildPod({
      cluster: state.identity,
      spec,
      pod: pod.name,
      nodeKind: pod.kind,
      clusterSize: pod.clusterSize,
      configFile: state.configFile,
      restartedAt: state.restartedAt,
    });
    await state.deps.api.apply(PODS, object, { force: true });
    const note = `${recovering ? 'recreated the missing pod' : 'created pod'} ${pod.name} (cluster size ${pod.clusterSize})`;
    await emit(state, { type: recovering ? 'Warning' : 'Normal', reason: recovering ? 'NodeRecreated' : 'NodeCreated', action: 'Create', note });
  }
}

/**
 * Bootstrap from a file copy: a Job runs `eventdb restore` into the new node's PVCs before its
 * pod exists; the data PVC is then annotated (so it is never restored twice) and the Job goes.
 * True once the node's volumes hold the backup.
 */
async function restoredFromFileCopy(state: ReconcileState, pod: string): Promise<boolean> {
  const restore = state.restore as RestoreSource;
  const spec = state.spec as EffectiveSpec;
  const { namespace } = state.identity;
  const claim = await state.deps.api.get(PVCS, namespace, dataClaimName(pod));
  if (claim?.metadata.annotations?.[ANNOTATION_RESTORED_FROM] !== undefined) return true;
  const name = restoreJobName(state.identity.name, pod);
  const job = await state.deps.api.get(JOBS, namespace, name);
  const outcome = jobOutcome(job);
  if (outcome === 'missing') {
    await state.deps.api.create(
      JOBS,
      buildRestoreJob({
        cluster: state.identity,
        pod,
        separateIndex: spec.storage.index !== undefined,
        claimName: restore.claimName ?? '',
        path: restore.path ?? '',
        image: spec.image,
        imagePullPolicy: spec.imagePullPolicy,
      }),
    );
    await emit(state, { type: 'Normal', reason: 'RestoreStarted', action: 'Restore', note: `job ${name} restores ${restore.claimName ?? ''}:${restore.path ?? ''} (backup ${restore.backup}) into ${dataClaimName(pod)}` });
  } else if (outcome === 'succeeded') {
    await state.deps.api.patch(PVCS, namespace, dataClaimName(pod), { metadata: { annotations: { [ANNOTATION_RESTORED_FROM]: restore.backup } } });
    await state.deps.api.delete(JOBS, namespace, name, { propagationPolicy: 'Background' });
    await emit(state, { type: 'Normal', reason: 'VolumeRestored', action: 'Restore', note: `${dataClaimName(pod)} restored from backup ${restore.backup}` });
    return true;
  } else if (outcome === 'failed') {
    state.waiting = { reason: 'RestoreFailed', message: `job ${name} could not restore backup ${restore.backup}: kubectl logs -n ${namespace} job/${name}` };
    await emit(state, { type: 'Warning', reason: 'RestoreFailed', action: 'Restore', note: state.waiting.message });
    // A new attempt: the Job goes and is made again at the next reconcile (--overwrite starts clean).
    await state.deps.api.delete(JOBS, namespace, name, { propagationPolicy: 'Background' });
    state.requeueAfterMs = 30_000;
    return false;
  }
  state.waiting = { reason: 'Restoring', message: `restoring backup ${restore.backup} into the new nodes' volumes` };
  return false;
}

async function deletePod(state: ReconcileState, pod: string, uid: string, why: 'restart' | 'remove'): Promise<void> {
  const reason = why === 'restart' ? 'NodeRestarting' : 'NodeRemoving';
  const because = why === 'restart' ? (state.operation?.reason ?? 'Restart') : 'ScaleDown';
  await emit(state, { type: 'Normal', reason, action: why === 'restart' ? 'Restart' : 'Remove', note: `${why} ${pod} (${because})` });
  try {
    await state.deps.api.delete(PODS, state.identity.namespace, pod, { uid });
  } catch (err: unknown) {
    // Another incarnation of the pod is there already: this one is gone.
    if (!isConflict(err)) throw err;
  }
}

/** A running pod's node endpoint and the ops credentials for its admin endpoints; undefined (logged) when either is missing. */
async function reachNode(state: ReconcileState, podName: string): Promise<{ pod: PodView; endpoint: NodeEndpoint; credentials: { username: string; password: string } } | undefined> {
  const spec = state.spec as EffectiveSpec;
  const pod = state.pods.find((candidate) => candidate.name === podName);
  const trust = pod?.servesTls === true ? await nodeTrustCertificates(state.deps.api, state.identity, spec) : undefined;
  const endpoint =
    pod === undefined ? undefined : await nodeEndpoint({ cluster: state.identity.name, namespace: state.identity.namespace, pod, access: state.deps.access, trust });
  const credentials = await opsCredentials(state.deps.api, state.identity.namespace, spec);
  if (pod === undefined || endpoint === undefined || 'problem' in endpoint || credentials === undefined) {
    const problem = endpoint !== undefined && 'problem' in endpoint ? endpoint.problem : undefined;
    state.log.warn({ pod: podName, problem }, 'cannot reach the node or read the ops credentials');
    return undefined;
  }
  return { pod, endpoint, credentials };
}

async function resign(state: ReconcileState, podName: string): Promise<void> {
  const reached = await reachNode(state, podName);
  if (reached === undefined) return;
  const { pod, endpoint, credentials } = reached;
  const outcome = await state.deps.client.resign(endpoint, credentials);
  if (outcome.kind === 'done') {
    await emit(state, { type: 'Normal', reason: 'LeaderResignRequested', action: 'Resign', note: `asked leader ${podName} to resign` });
    return;
  }
  if (outcome.kind === 'refused') {
    await emit(state, { type: 'Warning', reason: 'ResignRefused', action: 'Resign', note: `leader ${podName} refused to resign: ${outcome.statusCode} ${outcome.message}` });
    return;
  }
  // This node version has no resign: losing the leader forces the election instead.
  await emit(state, { type: 'Warning', reason: 'ResignUnsupported', action: 'Resign', note: `node ${podName} has no POST /admin/node/resign; restarting it forces an election` });
  if (state.operation !== undefined) state.operation = { ...state.operation, podStep: 'Restarting', step: `restart ${podName}` };
  await writeStatus(state);
  await deletePod(state, podName, pod.uid, 'restart');
}

/** CertificatesReloaded and status.certificates from what the nodes served when observed. */
function certificatesStatus(state: ReconcileState): Pick<StatusInput, 'tls' | 'certificates'> {
  const spec = state.spec;
  if (spec === undefined) return { tls: { status: 'Unknown', reason: 'NotObserved', message: '' } };
  const said = state.previous?.conditions?.find((condition) => condition.type === CONDITION_CERTIFICATES);
  // The Secret was not read in this reconcile (paused, or stopped before ensure-secrets): what was said stands.
  if (state.expectedFingerprint === undefined && spec.tls.mode !== 'Disabled' && said !== undefined) {
    const kept = { tls: { status: said.status as 'True' | 'False' | 'Unknown', reason: said.reason, message: said.message } };
    return state.previous?.certificates === undefined ? kept : { ...kept, certificates: state.previous.certificates };
  }
  const tls = state.membersObserved
    ? certificatesCondition({
        mode: spec.tls.mode,
        secretName: spec.tls.mode === 'Secret' ? (spec.tls.certificateSecret ?? '') : nodeTlsSecretName(state.identity.name),
        expectedFingerprint: state.expectedFingerprint,
        pods: state.pods,
        members: state.members,
      })
    : { status: 'Unknown' as const, reason: 'NotObserved', message: 'nodes not observed in this reconcile' };
  if (state.certificates === undefined) return { tls };
  const running = state.pods.filter((pod) => pod.phase === 'Running' && !pod.terminating);
  const servedByNodes = nodesServeTls(spec) && running.every((pod) => pod.servesTls);
  if (state.rotationHandled === true) {
    return { tls: state.certificatesCondition ?? tls, certificates: { ...state.certificates, servedByNodes } };
  }
  // When the nodes were first seen serving the Secret's current certificate.
  const previous = state.previous?.certificates;
  const wasServed = said?.status === 'True';
  const reloadedAt =
    tls.status === 'True' && (!wasServed || previous?.reloadedAt === undefined || previous.secretHash !== state.certificates.secretHash)
      ? new Date(state.nowMs).toISOString()
      : previous?.reloadedAt;
  return {
    tls,
    certificates: {
      ...state.certificates,
      servedByNodes,
      ...(reloadedAt === undefined ? {} : { reloadedAt }),
    },
  };
}

function statusInput(state: ReconcileState): StatusInput {
  const spec = state.spec;
  const { tls, certificates } = certificatesStatus(state);
  return {
    name: state.identity.name,
    generation: state.cluster.metadata.generation,
    previous: state.previous,
    nowIso: new Date(state.nowMs).toISOString(),
    ...(state.blocked === undefined ? {} : { blocked: state.blocked }),
    paused: spec?.paused === true,
    replicas: spec?.replicas ?? 0,
    readOnlyReplicas: spec?.readOnlyReplicas ?? 0,
    clusterSize: configuredSize(state.pods, spec?.replicas ?? 1),
    pods: state.pods,
    members: state.members,
    membersObserved: state.membersObserved,
    leader: state.leader,
    leaderClaimants: leaderClaimants(state.members),
    operation: state.operation,
    ...(state.lastOperation === undefined ? {} : { lastOperation: state.lastOperation }),
    ...(state.failure !== undefined ? { waiting: state.failure } : state.waiting === undefined ? {} : { waiting: state.waiting }),
    ...(state.revisions.quorum === '' ? {} : { updateRevision: state.revisions.quorum }),
    tls,
    ...(certificates === undefined ? {} : { certificates }),
    ...(spec === undefined ? {} : { credentials: { adminSecret: spec.users.admin.name, opsSecret: spec.users.ops.name } }),
    ...(state.nextMaintenanceWindow === undefined ? {} : { nextMaintenanceWindow: state.nextMaintenanceWindow }),
    ...(state.restoredFrom === undefined ? {} : { restoredFrom: state.restoredFrom }),
    ...(state.volumes === undefined ? {} : { volumes: state.volumes }),
    ...(state.hibernation === undefined ? {} : { hibernation: state.hibernation }),
    ...(state.fencing === undefined ? {} : { fencing: state.fencing }),
    ...(state.operation === undefined && state.blocked === undefined ? { restartedAt: state.restartedAt } : state.previous?.restartedAt === undefined ? {} : { restartedAt: state.previous.restartedAt }),
  };
}

/** Writes the status through the status subresource, unless it says what the last write said. */
async function writeStatus(state: ReconcileState): Promise<void> {
  let status = computeStatus(statusInput(state));
  if (state.restore !== undefined && state.restoredFrom === undefined && status.phase === 'Ready') {
    // Bootstrapped: from now on new volumes (a scale-up, a lost PVC) start empty and catch up.
    state.restoredFrom = {
      backup: state.restore.backup,
      method: state.restore.method,
      ...(state.restore.writerCheckpoint === undefined ? {} : { writerCheckpoint: state.restore.writerCheckpoint }),
      completedAt: new Date(state.nowMs).toISOString(),
    };
    status = computeStatus(statusInput(state));
    await emit(state, { type: 'Normal', reason: 'RestoreCompleted', action: 'Restore', note: `nodes restored from backup ${state.restore.backup} are Ready` });
  }
  // Written only when it changed (membersObservedAt alone does not count: it says when the members
  // written were observed); after an operator restart, compared with the status the cluster has.
  const text = comparableStatus(status) ?? '';
  const previous = state.deps.writtenStatus.get(state.identity.uid)?.text ?? comparableStatus(state.cluster['status']);
  if (previous === text) return;
  try {
    await state.deps.api.apply(
      EVENTDB_CLUSTERS,
      { apiVersion: state.cluster.apiVersion, kind: state.cluster.kind, metadata: { name: state.identity.name, namespace: state.identity.namespace }, status },
      { force: true, subresource: 'status' },
    );
  } catch (err: unknown) {
    if (isNotFound(err)) return;
    throw err;
  }
  state.deps.writtenStatus.set(state.identity.uid, { text, atMs: state.nowMs });
  if (status.phase !== state.previous?.phase) state.log.info({ phase: status.phase, previousPhase: state.previous?.phase }, 'cluster phase changed');
}

function comparableStatus(status: unknown): string | undefined {
  if (typeof status !== 'object' || status === null) return undefined;
  const { membersObservedAt: _at, ...comparable } = status as Record<string, unknown>;
  return canonicalJson(comparable);
}

function reportMetrics(state: ReconcileState): void {
  const { metrics } = state.deps;
  const labels = { namespace: state.identity.namespace, name: state.identity.name };
  const phase = computeStatus(statusInput(state)).phase ?? 'Creating';
  metrics.setClusterPhase(labels, phase);
  metrics.clusterReadyNodes.set(labels, state.pods.filter((pod) => pod.ready).length);
  // from status.operation: a new leader reports what its first reconcile reads
  const operation = state.operation;
  metrics.setOperation(labels, operation === undefined ? undefined : { kind: operation.kind, startedAtMs: Date.parse(operation.startedAt) });
  const replicas = (state.cluster['spec'] as { replicas?: unknown } | undefined)?.replicas;
  if (typeof replicas === 'number') metrics.clusterDesiredNodes.set(labels, replicas);
  const notAfterMs = state.certificates?.notAfter === undefined ? NaN : Date.parse(state.certificates.notAfter);
  if (!Number.isNaN(notAfterMs)) metrics.certificateNotAfter.set(labels, notAfterMs / 1000);
}

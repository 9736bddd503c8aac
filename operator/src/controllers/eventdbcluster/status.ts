/**
 * The cluster's status from what the reconcile saw and did: phase, counts, leader, members,
 * the operation, and the conditions (kstatus: `Ready` with the generation it describes).
 * Pure; what each condition means is written in ../../../ARCHITECTURE.md.
 */
import type { Condition } from '../../api/common.js';
import type { ClusterPhase, EventDBClusterStatus, OperationStatus } from '../../api/eventdb-cluster.js';
import { setCondition, type ConditionInput } from '../../runtime/conditions.js';
import { quorumOf } from '../../resources/pdb.js';
import { memberStatus, type ObservedMember, type PodView } from './observe.js';

export const CONDITION_READY = 'Ready';
export const CONDITION_PROGRESSING = 'Progressing';
export const CONDITION_DEGRADED = 'Degraded';
export const CONDITION_QUORUM = 'QuorumHealthy';
export const CONDITION_CERTIFICATES = 'CertificatesReloaded';
/** kstatus' abnormal-true conditions, for Flux, kpt and `kubectl wait`. */
export const CONDITION_RECONCILING = 'Reconciling';
export const CONDITION_STALLED = 'Stalled';
/** Which nodes eventdb.io/fenced takes out of service, or why it was refused (fence). */
export const CONDITION_FENCED = 'Fenced';
/** Where the PVCs stand against spec.storage (grow-volumes). */
export const CONDITION_VOLUMES = 'VolumesExpanded';

export interface StatusInput {
  readonly name: string;
  readonly generation: number | undefined;
  readonly previous: EventDBClusterStatus | undefined;
  readonly nowIso: string;
  /** Set when the spec cannot be acted on (reason, message). */
  readonly blocked?: { readonly reason: string; readonly message: string };
  readonly paused: boolean;
  readonly replicas: number;
  readonly readOnlyReplicas: number;
  readonly clusterSize: number;
  readonly pods: readonly PodView[];
  readonly members: ReadonlyMap<string, ObservedMember>;
  readonly membersObserved: boolean;
  readonly leader: string | undefined;
  /** Every pod whose node says it leads; more than one is a split (or nodes that do not cluster). */
  readonly leaderClaimants?: readonly string[];
  readonly operation: OperationStatus | undefined;
  readonly lastOperation?: EventDBClusterStatus['lastOperation'];
  /** What the rollout waits for, when it waits. */
  readonly waiting?: { readonly reason: string; readonly message: string };
  readonly updateRevision?: string;
  readonly tls: { readonly reason: string; readonly message: string; readonly status: 'True' | 'False' | 'Unknown' };
  readonly certificates?: EventDBClusterStatus['certificates'];
  readonly credentials?: EventDBClusterStatus['credentials'];
  readonly nextMaintenanceWindow?: string;
  readonly restartedAt?: string;
  readonly restoredFrom?: EventDBClusterStatus['restoredFrom'];
  /** The Fenced condition, when the fence step ran. */
  readonly fencing?: ConditionState;
  /** spec.hibernation: nodes still stopping, or none left. */
  readonly hibernation?: 'Hibernating' | 'Hibernated';
  /** VolumesExpanded, when grow-volumes looked at the PVCs in this reconcile (else what was said stands). */
  readonly volumes?: ConditionState;
}

export type ConditionState = StatusInput['tls'];

/**
 * CertificatesReloaded from what the nodes served when observed: True when every running node
 * answered over https with the certificate now in the Secret; False when one serves another
 * certificate, was refused, or runs without TLS although TLS is asked for; Unknown while no
 * node has answered (or with tls.mode Disabled, where there is nothing to reload).
 */
export function certificatesCondition(input: {
  readonly mode: 'SelfSigned' | 'Secret' | 'Disabled';
  readonly secretName: string;
  /** `sha256:<hex>` of the certificate in the Secret, once it could be read. */
  readonly expectedFingerprint: string | undefined;
  readonly pods: readonly PodView[];
  readonly members: ReadonlyMap<string, ObservedMember>;
}): ConditionState {
  if (input.mode === 'Disabled') return { status: 'Unknown', reason: 'TlsDisabled', message: 'tls.mode is Disabled: nodes serve plain HTTP' };
  const running = input.pods.filter((pod) => pod.phase === 'Running' && !pod.terminating);
  const plain = running.filter((pod) => !pod.servesTls).map((pod) => pod.name);
  if (plain.length > 0) {
    return { status: 'False', reason: 'NodesServePlainHttp', message: `${plain.join(', ')} run without TLS (started before tls.mode ${input.mode}); a restart with the current revision serves TLS` };
  }
  const refused = running.flatMap((pod) => {
    const problem = input.members.get(pod.name)?.tlsProblem;
    return problem === undefined ? [] : [`${pod.name}: ${problem}`];
  });
  if (refused.length > 0) return { status: 'False', reason: 'CertificateNotTrusted', message: refused.join('; ') };
  const served = running.flatMap((pod) => {
    const fingerprint = input.members.get(pod.name)?.certificateFingerprint;
    return fingerprint === undefined ? [] : [{ pod: pod.name, fingerprint }];
  });
  if (served.length === 0 || input.expectedFingerprint === undefined) {
    return { status: 'Unknown', reason: 'NotObserved', message: 'no node has answered over https yet' };
  }
  const stale = served.filter((entry) => entry.fingerprint !== input.expectedFingerprint).map((entry) => entry.pod);
  if (stale.length > 0) {
    return {
      status: 'False',
      reason: 'OldCertificateServed',
      message: `${stale.join(', ')} serve a certificate other than the one in Secret ${input.secretName} (${input.expectedFingerprint}); nodes load new certificates on SIGHUP or a restart`,
    };
  }
  const unobserved = running.length - served.length;
  return {
    status: 'True',
    reason: 'CurrentCertificateServed',
    message: `${served.length} node(s) serve the certificate in Secret ${input.secretName} (${input.expectedFingerprint})${unobserved > 0 ? `; ${unobserved} did not answer` : ''}`,
  };
}

function uniformImage(pods: readonly PodView[]): string | undefined {
  const images = new Set(pods.map((pod) => pod.image).filter((image): image is string => image !== undefined));
  return images.size === 1 ? [...images][0] : undefined;
}

interface Health {
  readonly votingPods: readonly PodView[];
  readonly readyVoting: number;
  readonly aliveVoting: number;
  readonly allReady: boolean;
}

function healthOf(input: StatusInput): Health {
  const votingPods = input.pods.filter((pod) => pod.kind === 'quorum');
  const replicaPods = input.pods.filter((pod) => pod.kind === 'read-only-replica');
  const readyVoting = votingPods.filter((pod) => pod.ready).length;
  const aliveVoting = votingPods.filter((pod) => input.members.get(pod.name)?.alive === true).length;
  const allReady =
    (input.leaderClaimants ?? []).length <= 1 &&
    votingPods.length === input.replicas &&
    readyVoting === input.replicas &&
    replicaPods.length === input.readOnlyReplicas &&
    replicaPods.every((pod) => pod.ready) &&
    input.leader !== undefined;
  return { votingPods, readyVoting, aliveVoting, allReady };
}

function phaseOf(input: StatusInput, health: Health): ClusterPhase {
  if (input.blocked !== undefined) return 'Failed';
  if (input.paused) return 'Paused';
  if (input.hibernation !== undefined) return input.hibernation;
  if (input.operation?.kind === 'Scale') return 'Scaling';
  if (input.operation !== undefined) return 'Updating';
  if (health.allReady) return 'Ready';
  if ((input.leaderClaimants ?? []).length > 1) return 'Degraded';
  const everReady = input.previous?.conditions?.some((condition) => condition.type === CONDITION_READY && condition.status === 'True') ?? false;
  const wasPastCreating = input.previous?.phase !== undefined && input.previous.phase !== 'Creating';
  return everReady || wasPastCreating ? 'Degraded' : 'Creating';
}

function readyCondition(input: StatusInput, phase: ClusterPhase, health: Health): ConditionInput {
  const base = { type: CONDITION_READY };
  if (input.blocked !== undefined) return { ...base, status: 'False', ...input.blocked };
  if (input.paused) return { ...base, status: 'False', reason: 'Paused', message: 'spec.paused is true: the operator observes and changes nothing' };
  if (input.hibernation === 'Hibernated') return { ...base, status: 'False', reason: 'Hibernated', message: 'spec.hibernation is true: every node is stopped; PVCs and Secrets are kept' };
  if (input.hibernation === 'Hibernating') return { ...base, status: 'False', reason: 'Hibernating', message: input.waiting?.message ?? 'stopping the nodes' };
  if (phase === 'Ready') return { ...base, status: 'True', reason: 'ClusterReady', message: `${health.readyVoting} of ${input.replicas} nodes ready; leader ${input.leader ?? ''}` };
  if (input.waiting !== undefined) return { ...base, status: 'False', reason: input.waiting.reason, message: input.waiting.message };
  if (input.operation !== undefined) return { ...base, status: 'False', reason: input.operation.kind, message: input.operation.step };
  const reason = phase === 'Creating' ? 'Creating' : input.leader === undefined ? 'NoLeader' : 'NodesNotReady';
  return { ...base, status: 'False', reason, message: `${health.readyVoting} of ${input.replicas} nodes ready${input.leader === undefined ? ', no leader' : ''}` };
}

function progressingCondition(input: StatusInput, phase: ClusterPhase): ConditionInput {
  const base = { type: CONDITION_PROGRESSING };
  if (input.operation !== undefined) {
    return { ...base, status: 'True', reason: input.operation.kind, message: input.operation.waitingFor ?? input.operation.step };
  }
  if (phase === 'Creating') return { ...base, status: 'True', reason: 'Creating', message: 'creating the nodes' };
  return { ...base, status: 'False', reason: 'Idle', message: 'no operation in progress' };
}

function degradedCondition(input: StatusInput, phase: ClusterPhase, health: Health): ConditionInput {
  const base = { type: CONDITION_DEGRADED };
  const restarting = input.operation?.pod;
  const down = health.votingPods.filter((pod) => !pod.ready && pod.name !== restarting).map((pod) => pod.name);
  if ((input.leaderClaimants ?? []).length > 1) {
    return { ...base, status: 'True', reason: 'MultipleLeaders', message: `several nodes claim to lead: ${(input.leaderClaimants ?? []).join(', ')}; only ${input.leader ?? ''} is labelled leader` };
  }
  if (phase === 'Creating' || input.blocked !== undefined || input.hibernation !== undefined) return { ...base, status: 'False', reason: 'NotApplicable', message: '' };
  if (input.membersObserved && input.leader === undefined && health.votingPods.length > 0) {
    return { ...base, status: 'True', reason: 'NoLeader', message: 'no node reports itself leader' };
  }
  if (down.length > 0) return { ...base, status: 'True', reason: 'NodesNotReady', message: `not ready: ${down.join(', ')}` };
  return { ...base, status: 'False', reason: 'AllNodesHealthy', message: '' };
}

function quorumCondition(input: StatusInput, health: Health): ConditionInput {
  const base = { type: CONDITION_QUORUM };
  if (input.hibernation !== undefined) return { ...base, status: 'Unknown', reason: input.hibernation, message: 'spec.hibernation is true' };
  if (!input.membersObserved) return { ...base, status: 'Unknown', reason: 'NotObserved', message: 'gossip not read yet' };
  const quorum = quorumOf(input.clusterSize);
  if (input.leader !== undefined && health.aliveVoting >= quorum) {
    return { ...base, status: 'True', reason: 'QuorumAvailable', message: `${health.aliveVoting} of ${input.clusterSize} voting nodes alive (quorum ${quorum})` };
  }
  return {
    ...base,
    status: 'False',
    reason: input.leader === undefined ? 'NoLeader' : 'QuorumLost',
    message: `${health.aliveVoting} of ${input.clusterSize} voting nodes alive (quorum ${quorum})`,
  };
}

export function computeStatus(input: StatusInput): EventDBClusterStatus {
  const health = healthOf(input);
  const phase = phaseOf(input, health);
  let conditions: Condition[] = [...(input.previous?.conditions ?? [])];
  const set = (condition: ConditionInput): void => {
    conditions = setCondition(conditions, condition, input.generation, input.nowIso);
  };
  set(readyCondition(input, phase, health));
  set(progressingCondition(input, phase));
  set(degradedCondition(input, phase, health));
  set(quorumCondition(input, health));
  set({ type: CONDITION_CERTIFICATES, ...input.tls });
  if (input.volumes !== undefined) set({ type: CONDITION_VOLUMES, ...input.volumes });
  if (input.fencing !== undefined) set({ type: CONDITION_FENCED, ...input.fencing });
  const ready = conditions.find((condition) => condition.type === CONDITION_READY);
  const volumesRefused = input.volumes?.reason === 'ExpansionRefused' ? input.volumes : undefined;
  const volumesExpanding = input.volumes?.reason === 'Expanding' ? input.volumes : undefined;
  set(
    input.blocked !== undefined
      ? { type: CONDITION_STALLED, status: 'True', ...input.blocked }
      : volumesRefused !== undefined
        ? { type: CONDITION_STALLED, status: 'True', reason: 'VolumeExpansionRefused', message: volumesRefused.message }
        : { type: CONDITION_STALLED, status: 'False', reason: 'NotStalled', message: '' },
  );
  set(
    input.blocked !== undefined || input.paused || input.hibernation === 'Hibernated' || (ready?.status === 'True' && volumesExpanding === undefined)
      ? { type: CONDITION_RECONCILING, status: 'False', reason: input.paused ? 'Paused' : input.hibernation === 'Hibernated' ? 'Hibernated' : 'Reconciled', message: '' }
      : ready?.status === 'True' && volumesExpanding !== undefined
        ? { type: CONDITION_RECONCILING, status: 'True', reason: 'ExpandingVolumes', message: volumesExpanding.message }
        : { type: CONDITION_RECONCILING, status: 'True', reason: ready?.reason ?? 'Reconciling', message: ready?.message ?? '' },
  );
  const replicaPods = input.pods.filter((pod) => pod.kind === 'read-only-replica');
  const members = input.membersObserved
    ? [...input.pods].sort((a, b) => a.name.localeCompare(b.name)).map((pod) => memberStatus(pod, input.members.get(pod.name)))
    : input.previous?.members;
  const image = uniformImage(input.pods) ?? input.previous?.image;
  return {
    observedGeneration: input.generation,
    phase,
    replicas: health.votingPods.length,
    readyReplicas: health.readyVoting,
    readOnlyReplicas: { replicas: replicaPods.length, ready: replicaPods.filter((pod) => pod.ready).length },
    clusterSize: input.clusterSize,
    selector: `eventdb.io/cluster=${input.name}`,
    ...(input.leader === undefined ? {} : { leader: input.leader }),
    ...(image === undefined ? {} : { image }),
    ...(input.updateRevision === undefined ? {} : { updateRevision: input.updateRevision }),
    ...(members === undefined ? {} : { members }),
    ...(input.membersObserved ? { membersObservedAt: input.nowIso } : input.previous?.membersObservedAt === undefined ? {} : { membersObservedAt: input.previous.membersObservedAt }),
    ...(input.operation === undefined ? {} : { operation: input.operation }),
    ...(input.lastOperation === undefined ? {} : { lastOperation: input.lastOperation }),
    ...(input.restartedAt === undefined ? {} : { restartedAt: input.restartedAt }),
    ...(input.restoredFrom === undefined ? {} : { restoredFrom: input.restoredFrom }),
    ...(input.nextMaintenanceWindow === undefined ? {} : { nextMaintenanceWindow: input.nextMaintenanceWindow }),
    ...(input.certificates === undefined ? {} : { certificates: input.certificates }),
    ...(input.credentials === undefined ? {} : { credentials: input.credentials }),
    conditions,
  };
}

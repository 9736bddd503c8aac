/**
 * PURE builders of what a Backup makes and what a restore runs: the VolumeSnapshots of a node's
 * PVCs, the file-copy Job (`eventdb backup` over the node's files), the restore Job (`eventdb
 * restore` into a new cluster's PVC before its pod exists), the clean-up Job of an expired
 * file-copy backup, and the cluster's backup-hold annotation.
 */
import { API_VERSION, KIND_BACKUP, LABEL_BACKUP, LABEL_CLUSTER, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY_VALUE, NAME_VALUE } from '../api/group.js';
import type { KubeObject, OwnerReference } from '../runtime/kube-api.js';
import type { ClusterIdentity } from './labels.js';
import { commonLabels, ownerReference } from './labels.js';
import { dataClaimName, indexClaimName, podDnsName } from './names.js';
import { DATA_MOUNT_PATH, INDEX_MOUNT_PATH } from './node-settings.js';
import { NODE_POD_SECURITY } from './pod.js';

/** The node program inside the node image (node/Dockerfile). */
export const NODE_PROGRAM = '/app/node/bin/eventdb';
const BACKUP_MOUNT_PATH = '/backup';
const SOURCE_DATA_PATH = '/source/data';
const SOURCE_INDEX_PATH = '/source/index';
const OPS_PASSWORD_PATH = '/run/eventdb/ops';
const CA_MOUNT_PATH = '/run/eventdb/ca';
/** An emptyDir: the job joins every trusted CA file into one, for NODE_EXTRA_CA_CERTS. */
const TRUST_BUNDLE_DIR = '/run/eventdb/trust';

export type HoldMode = 'Stop' | 'Keep';

export interface BackupHold {
  readonly backup: string;
  readonly pod: string;
  /** Stop: the pod is stopped while its volumes are snapshotted; Keep: it runs (file copy). */
  readonly mode: HoldMode;
}

export function formatBackupHold(hold: BackupHold): string {
  return `${hold.backup}/${hold.pod}/${hold.mode}`;
}

export function parseBackupHold(text: string | undefined): BackupHold | undefined {
  if (text === undefined) return undefined;
  const match = /^([a-z0-9][a-z0-9.-]*)\/([a-z0-9][a-z0-9.-]*)\/(Stop|Keep)$/.exec(text);
  if (match === null) return undefined;
  return { backup: match[1] ?? '', pod: match[2] ?? '', mode: match[3] as HoldMode };
}

export interface BackupIdentity {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

/** The Backup owns its snapshots and Jobs: deleting it (by hand or by ttl) deletes them. */
export function backupOwnerReference(backup: BackupIdentity): OwnerReference {
  return { apiVersion: API_VERSION, kind: KIND_BACKUP, name: backup.name, uid: backup.uid, controller: true, blockOwnerDeletion: true };
}

function backupLabels(backup: BackupIdentity, cluster: string): Record<string, string> {
  return {
    [LABEL_NAME]: NAME_VALUE,
    [LABEL_INSTANCE]: cluster,
    [LABEL_MANAGED_BY]: MANAGED_BY_VALUE,
    [LABEL_CLUSTER]: cluster,
    [LABEL_BACKUP]: backup.name,
  };
}

/** Kubernetes names are at most 63 characters where they become labels (Job -> pod label). */
export function childName(base: string, suffix: string): string {
  const full = `${base}-${suffix}`;
  if (full.length <= 63) return full;
  let hash = 0;
  for (const char of full) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return `${base.slice(0, 63 - suffix.length - 8)}-${hash.toString(36).slice(0, 6)}-${suffix}`.slice(0, 63);
}

/**
 * The source cluster's admin and ops passwords at backup time. The users live in the database,
 * so a cluster restored from the backup must use these passwords; the Secret is owned by the
 * Backup, so the source cluster may be deleted meanwhile.
 */
export function credentialsSecretName(backup: string): string {
  return childName(backup, 'credentials');
}

export function buildCredentialsSecret(backup: BackupIdentity, cluster: string, passwords: { admin: string; ops: string }): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: credentialsSecretName(backup.name), namespace: backup.namespace, labels: backupLabels(backup, cluster), ownerReferences: [backupOwnerReference(backup)] },
    type: 'Opaque',
    data: { 'admin-password': Buffer.from(passwords.admin).toString('base64'), 'ops-password': Buffer.from(passwords.ops).toString('base64') },
  };
}

export type SnapshotVolume = 'index' | 'data';

export function snapshotName(backup: string, volume: SnapshotVolume): string {
  return childName(backup, volume);
}

/**
 * The volumes to snapshot, in the spec's order: the index volume before the data volume (one
 * snapshot when the index lives on the data volume).
 */
export function snapshotPlan(pod: string, separateIndex: boolean): { volume: SnapshotVolume; claim: string }[] {
  return [
    ...(separateIndex ? [{ volume: 'index' as const, claim: indexClaimName(pod) }] : []),
    { volume: 'data' as const, claim: dataClaimName(pod) },
  ];
}

export function buildVolumeSnapshot(input: {
  backup: BackupIdentity;
  cluster: string;
  volume: SnapshotVolume;
  claim: string;
  volumeSnapshotClassName?: string;
}): KubeObject {
  return {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshot',
    metadata: {
      name: snapshotName(input.backup.name, input.volume),
      namespace: input.backup.namespace,
      labels: { ...backupLabels(input.backup, input.cluster), 'eventdb.io/volume': input.volume },
      ownerReferences: [backupOwnerReference(input.backup)],
    },
    spec: {
      ...(input.volumeSnapshotClassName === undefined ? {} : { volumeSnapshotClassName: input.volumeSnapshotClassName }),
      source: { persistentVolumeClaimName: input.claim },
    },
  };
}

/** The folder of a file-copy backup inside its claim: `<cluster>/<start time>`. */
export function fileCopyPath(cluster: string, startedAtIso: string): string {
  return `${cluster}/${startedAtIso.replace(/\.\d+Z$/, 'Z')}`;
}

const JOB_SECURITY = NODE_POD_SECURITY;
const CONTAINER_SECURITY = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

/** How long a file-copy Job may run (pending included) before Kubernetes fails it: a Job that cannot be scheduled ends instead of holding the cluster. */
export const FILE_COPY_DEADLINE_SECONDS = 3600;

/** Where a backup Job's pod may run, taken from the cluster's pod template (so it reaches the pools the nodes run on). */
export interface JobScheduling {
  readonly tolerations?: readonly unknown[];
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly affinity?: unknown;
  readonly priorityClassName?: string;
  readonly activeDeadlineSeconds?: number;
}

/** PURE: the scheduling of the cluster's pods (spec.podTemplate), for its backup Jobs. */
export function jobSchedulingOf(podTemplate: { readonly tolerations?: readonly unknown[]; readonly nodeSelector?: Readonly<Record<string, string>>; readonly affinity?: unknown; readonly priorityClassName?: string }, activeDeadlineSeconds?: number): JobScheduling {
  return {
    ...(podTemplate.tolerations === undefined ? {} : { tolerations: podTemplate.tolerations }),
    ...(podTemplate.nodeSelector === undefined ? {} : { nodeSelector: podTemplate.nodeSelector }),
    ...(podTemplate.affinity === undefined ? {} : { affinity: podTemplate.affinity }),
    ...(podTemplate.priorityClassName === undefined ? {} : { priorityClassName: podTemplate.priorityClassName }),
    ...(activeDeadlineSeconds === undefined ? {} : { activeDeadlineSeconds }),
  };
}

function job(input: {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  owner: OwnerReference;
  image: string;
  imagePullPolicy: string;
  script: string;
  env: Record<string, string>;
  volumes: unknown[];
  mounts: unknown[];
  nodeName?: string;
  scheduling?: JobScheduling;
}): KubeObject {
  const scheduling = input.scheduling ?? {};
  // The Job's pods must not look like nodes: the cluster's Services select eventdb.io/cluster.
  const { [LABEL_CLUSTER]: _cluster, 'eventdb.io/pod': _pod, ...podLabels } = input.labels;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: input.name, namespace: input.namespace, labels: input.labels, ownerReferences: [input.owner] },
    spec: {
      backoffLimit: 2,
      ...(scheduling.activeDeadlineSeconds === undefined ? {} : { activeDeadlineSeconds: scheduling.activeDeadlineSeconds }),
      template: {
        metadata: { labels: { ...podLabels, 'eventdb.io/job': input.name } },
        spec: {
          restartPolicy: 'Never',
          enableServiceLinks: false,
          automountServiceAccountToken: false,
          securityContext: JOB_SECURITY,
          // The pools the cluster's pods may run on (tainted nodes included).
          ...(scheduling.tolerations === undefined ? {} : { tolerations: scheduling.tolerations }),
          ...(scheduling.priorityClassName === undefined ? {} : { priorityClassName: scheduling.priorityClassName }),
          // A ReadWriteOnce volume in use by the node can be mounted beside it only on its host:
          // that pin replaces the template's node selector and affinity.
          ...(input.nodeName === undefined
            ? {
                ...(scheduling.nodeSelector === undefined ? {} : { nodeSelector: scheduling.nodeSelector }),
                ...(scheduling.affinity === undefined ? {} : { affinity: scheduling.affinity }),
              }
            : {
                affinity: {
                  nodeAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: {
                      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [input.nodeName] }] }],
                    },
                  },
                },
              }),
          containers: [
            {
              name: 'eventdb',
              image: input.image,
              imagePullPolicy: input.imagePullPolicy,
              command: ['sh', '-c', input.script],
              env: Object.entries(input.env).map(([name, value]) => ({ name, value })),
              volumeMounts: input.mounts,
              securityContext: CONTAINER_SECURITY,
            },
          ],
          volumes: input.volumes,
        },
      },
    },
  };
}

/**
 * The file copy: `eventdb backup` over the running node's files (its PVCs mounted beside it on
 * its host), into `<claim>/<path>`. Differential: the previous backup's folder is first cloned
 * with hard links (unchanged chunks are shared, never rewritten: the tool replaces files by
 * rename), then the spec's differential procedure runs against the clone, so every folder stays
 * a complete backup of its own. With the ops credentials the tool stops a running scavenge
 * first and resumes it after (the contract's promise).
 */
export const FILE_COPY_SCRIPT = [
  'set -eu',
  // Node.js reads one file of extra CAs at start: every *.crt of the CA Secret, joined.
  'if [ -n "${TRUSTED_CA_DIR:-}" ]; then',
  `  cat "$TRUSTED_CA_DIR"/*.crt > ${TRUST_BUNDLE_DIR}/ca-bundle.pem`,
  `  export NODE_EXTRA_CA_CERTS=${TRUST_BUNDLE_DIR}/ca-bundle.pem`,
  'fi',
  'dest="/backup/$BACKUP_PATH"',
  'mkdir -p "$(dirname "$dest")"',
  'rm -rf "$dest"',
  'mode=""',
  'if [ -n "${PREVIOUS_PATH:-}" ] && [ -f "/backup/$PREVIOUS_PATH/backup-manifest.json" ]; then',
  '  cp -al "/backup/$PREVIOUS_PATH" "$dest"',
  '  mode="--differential"',
  '  echo "differential against $PREVIOUS_PATH"',
  'fi',
  `exec ${NODE_PROGRAM} backup --db "$SOURCE_DB" --index "$SOURCE_INDEX" --to "$dest" $mode --node-url "$NODE_URL" --username ops --password-file ${OPS_PASSWORD_PATH}/password`,
].join('\n');

export function buildFileCopyJob(input: {
  backup: BackupIdentity;
  cluster: ClusterIdentity;
  pod: string;
  nodeName?: string;
  separateIndex: boolean;
  claimName: string;
  path: string;
  previousPath?: string;
  image: string;
  imagePullPolicy: string;
  opsSecret: { name: string; key: string };
  /**
   * The Secret of the CA that signs the node's certificate, when the node serves https: the tool
   * then reaches it by https and trusts that CA, and nothing else new. `everyCrtKey`: a CA Secret
   * the user names (tls.caSecret), mounted whole as the nodes mount it, every `.crt` key a trusted
   * root (old and new CA side by side during a migration); else its `ca.crt` only.
   */
  caSecret?: { name: string; everyCrtKey: boolean };
  scheduling?: JobScheduling;
}): KubeObject {
  const volumes: unknown[] = [
    { name: 'data', persistentVolumeClaim: { claimName: dataClaimName(input.pod) } },
    { name: 'backup', persistentVolumeClaim: { claimName: input.claimName } },
    { name: 'ops', secret: { secretName: input.opsSecret.name, items: [{ key: input.opsSecret.key, path: 'password' }] } },
  ];
  const mounts: unknown[] = [
    { name: 'data', mountPath: SOURCE_DATA_PATH },
    { name: 'backup', mountPath: BACKUP_MOUNT_PATH },
    { name: 'ops', mountPath: OPS_PASSWORD_PATH, readOnly: true },
  ];
  if (input.separateIndex) {
    volumes.push({ name: 'index', persistentVolumeClaim: { claimName: indexClaimName(input.pod) } });
    mounts.push({ name: 'index', mountPath: SOURCE_INDEX_PATH });
  }
  const ca = input.caSecret;
  if (ca !== undefined) {
    volumes.push({ name: 'ca', secret: { secretName: ca.name, ...(ca.everyCrtKey ? {} : { items: [{ key: 'ca.crt', path: 'ca.crt' }] }) } });
    mounts.push({ name: 'ca', mountPath: CA_MOUNT_PATH, readOnly: true });
    volumes.push({ name: 'trust', emptyDir: { sizeLimit: '1Mi' } });
    mounts.push({ name: 'trust', mountPath: TRUST_BUNDLE_DIR });
  }
  const scheme = ca === undefined ? 'http' : 'https';
  return job({
    name: childName(input.backup.name, 'filecopy'),
    namespace: input.backup.namespace,
    labels: backupLabels(input.backup, input.cluster.name),
    owner: backupOwnerReference(input.backup),
    image: input.image,
    imagePullPolicy: input.imagePullPolicy,
    script: FILE_COPY_SCRIPT,
    env: {
      BACKUP_PATH: input.path,
      ...(input.previousPath === undefined ? {} : { PREVIOUS_PATH: input.previousPath }),
      SOURCE_DB: `${SOURCE_DATA_PATH}/db`,
      SOURCE_INDEX: input.separateIndex ? SOURCE_INDEX_PATH : `${SOURCE_DATA_PATH}/index`,
      NODE_URL: `${scheme}://${podDnsName(input.cluster.name, input.cluster.namespace, input.pod)}:2113`,
      ...(ca === undefined ? {} : { TRUSTED_CA_DIR: CA_MOUNT_PATH }),
    },
    volumes,
    mounts,
    ...(input.nodeName === undefined ? {} : { nodeName: input.nodeName }),
    ...(input.scheduling === undefined ? {} : { scheduling: input.scheduling }),
  });
}

/** Deletes an expired file-copy backup's folder (ttl), before the Backup object goes. */
export function buildCleanupJob(input: { backup: BackupIdentity; cluster: string; claimName: string; path: string; image: string; imagePullPolicy: string }): KubeObject {
  return job({
    name: childName(input.backup.name, 'cleanup'),
    namespace: input.backup.namespace,
    labels: backupLabels(input.backup, input.cluster),
    owner: backupOwnerReference(input.backup),
    image: input.image,
    imagePullPolicy: input.imagePullPolicy,
    script: 'set -eu\nrm -rf "/backup/$BACKUP_PATH"\necho "removed $BACKUP_PATH"',
    env: { BACKUP_PATH: input.path },
    volumes: [{ name: 'backup', persistentVolumeClaim: { claimName: input.claimName } }],
    mounts: [{ name: 'backup', mountPath: BACKUP_MOUNT_PATH }],
  });
}

export function restoreJobName(cluster: string, pod: string): string {
  return childName(`${cluster}-restore`, pod.slice(cluster.length + 1) || pod);
}

/**
 * Bootstrap from a file-copy backup: `eventdb restore` into a new node's PVC(s) before its pod
 * exists (restore only onto a stopped node). `--overwrite` makes a retried Job start clean.
 * Owned by the cluster; the PVC is annotated once the Job succeeded, then the Job is deleted.
 */
export function buildRestoreJob(input: {
  cluster: ClusterIdentity;
  pod: string;
  separateIndex: boolean;
  claimName: string;
  path: string;
  image: string;
  imagePullPolicy: string;
}): KubeObject {
  const volumes: unknown[] = [
    { name: 'backup', persistentVolumeClaim: { claimName: input.claimName, readOnly: true } },
    { name: 'data', persistentVolumeClaim: { claimName: dataClaimName(input.pod) } },
  ];
  const mounts: unknown[] = [
    { name: 'backup', mountPath: BACKUP_MOUNT_PATH, readOnly: true },
    { name: 'data', mountPath: DATA_MOUNT_PATH },
  ];
  if (input.separateIndex) {
    volumes.push({ name: 'index', persistentVolumeClaim: { claimName: indexClaimName(input.pod) } });
    mounts.push({ name: 'index', mountPath: INDEX_MOUNT_PATH });
  }
  return job({
    name: restoreJobName(input.cluster.name, input.pod),
    namespace: input.cluster.namespace,
    labels: { ...commonLabels(input.cluster), 'eventdb.io/pod': input.pod },
    owner: ownerReference(input.cluster),
    image: input.image,
    imagePullPolicy: input.imagePullPolicy,
    script: `set -eu\nexec ${NODE_PROGRAM} restore --from "/backup/$BACKUP_PATH" --db "$TARGET_DB" --index "$TARGET_INDEX" --overwrite`,
    env: {
      BACKUP_PATH: input.path,
      TARGET_DB: `${DATA_MOUNT_PATH}/db`,
      TARGET_INDEX: input.separateIndex ? INDEX_MOUNT_PATH : `${DATA_MOUNT_PATH}/index`,
    },
    volumes,
    mounts,
  });
}

/** A Job's outcome from its status. */
export function jobOutcome(object: KubeObject | undefined): 'missing' | 'running' | 'succeeded' | 'failed' {
  if (object === undefined) return 'missing';
  const status = object['status'] as { succeeded?: number; conditions?: { type: string; status: string }[] } | undefined;
  const condition = (type: string): boolean => status?.conditions?.some((c) => c.type === type && c.status === 'True') === true;
  if (condition('Complete') || (status?.succeeded ?? 0) > 0) return 'succeeded';
  if (condition('Failed')) return 'failed';
  return 'running';
}

/**
 * EventDBCluster: a 1-, 3- or 5-node EventDB cluster (plus read-only replicas), its storage,
 * configuration, TLS, users and how the operator may disrupt it. The zod schemas here ARE the
 * API: the CRD (crds/eventdb.io_eventdbclusters.yaml) is generated from them and the operator
 * parses every object it reads with them.
 *
 * Defaults: only top-level scalars carry CRD defaults (replicas, readOnlyReplicas,
 * imagePullPolicy, updateStrategy, paused). Nested optional structs are defaulted by the
 * operator (see effective-spec.ts) and never written back, so GitOps tools see no drift.
 */
import { z } from 'zod';
import {
  ClusterReference,
  Conditions,
  CronSchedule,
  Duration,
  LocalObjectReference,
  ObjectMeta,
  Quantity,
  SecretKeyReference,
  TimeZone,
  Timestamp,
  celRules,
} from './common.js';
import { Affinity, ResourceRequirements, Toleration, TopologySpreadConstraint } from './core-v1.js';
import { NodeConfiguration } from './node-configuration.js';
import { API_VERSION, KIND_CLUSTER } from './group.js';

export const VolumeSpec = z
  .object({
    size: Quantity.describe(
      'Requested size of the PVCs, e.g. 10Gi. May grow (the operator expands the PVCs where their StorageClass allows it), never shrink.',
    ).meta(
      celRules({
        rule: "quantity(string(self)).isGreaterThan(quantity('0'))",
        message: 'storage size must be a positive quantity such as 10Gi',
      }),
    ),
    storageClassName: z
      .string()
      .max(253)
      .optional()
      .describe('StorageClass of the PVCs; absent: the cluster\'s default StorageClass. Immutable.'),
  })
  .meta(
    celRules(
      {
        rule: 'quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0',
        message: 'storage size cannot shrink: a PVC only grows (restore a Backup into a new, smaller cluster instead)',
        fieldPath: '.size',
      },
      {
        rule: 'has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)',
        message: 'storageClassName cannot change: existing PVCs keep their class (restore a Backup into a new cluster with the wanted class instead)',
        fieldPath: '.storageClassName',
      },
    ),
  );

export const StorageSpec = z
  .object({
    data: VolumeSpec.optional().describe('PVC data-<pod> at the data directory. Default size 10Gi.'),
    index: VolumeSpec.optional().describe(
      'Optional second PVC index-<pod> for the index directory; absent: the index lives on the data volume.',
    ),
  })
  .meta(
    celRules(
      {
        rule: '!has(oldSelf.index) || has(self.index)',
        message: 'storage.index cannot be removed once set (the index lives on that volume)',
      },
      {
        rule: 'has(oldSelf.index) || !has(self.index)',
        message: 'storage.index cannot be added to an existing cluster (the index lives on the data volume)',
      },
    ),
  );

export const TlsMode = z.enum(['SelfSigned', 'Secret', 'Disabled']);
export type TlsMode = z.infer<typeof TlsMode>;

export const TlsSpec = z
  .object({
    mode: TlsMode.default('SelfSigned').describe(
      'SelfSigned: the operator makes a CA and node certificates. Secret: certificateSecret and caSecret. Disabled: plain HTTP.',
    ),
    certificateSecret: LocalObjectReference.optional().describe(
      'mode Secret: a kubernetes.io/tls Secret (tls.crt, tls.key) with the node certificate.',
    ),
    caSecret: LocalObjectReference.optional().describe(
      'Trusted CAs: every key ending in .crt is trusted (old and new CA during a migration). Absent: with SelfSigned the operator\'s CA, with Secret the ca.crt key of certificateSecret.',
    ),
    reservedNodeCommonName: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('Common name of node certificates (default eventdb-node).'),
    reload: z
      .enum(['Signal', 'Endpoint'])
      .optional()
      .describe('How nodes reload certificates: Signal (SIGHUP) or Endpoint (POST /admin/reloadconfig). Default Signal.'),
    certificateValidity: Duration.optional().describe('mode SelfSigned: validity of the node certificates the operator issues (default 8760h, a year).'),
    renewBefore: Duration.optional().describe(
      'mode SelfSigned: the operator renews the node certificate this long before it expires (default 720h, 30 days); must be shorter than certificateValidity.',
    ),
  })
  .meta(
    celRules({
      rule: "self.mode != 'Secret' || has(self.certificateSecret)",
      message: 'tls.mode Secret needs tls.certificateSecret',
      fieldPath: '.certificateSecret',
      reason: 'FieldValueRequired',
    }),
  );

export const UsersSpec = z.object({
  adminPasswordSecret: SecretKeyReference.optional().describe(
    'Password of the admin user; absent: the operator generates Secret <cluster>-admin (key password).',
  ),
  opsPasswordSecret: SecretKeyReference.optional().describe(
    'Password of the ops user; absent: the operator generates Secret <cluster>-ops (key password).',
  ),
});

export const MaintenanceWindow = z.object({
  schedule: CronSchedule.describe('When a window opens: five-field CRON.'),
  timeZone: TimeZone.optional().describe('Time zone of the schedule (default UTC).'),
  duration: Duration.describe('How long the window stays open, e.g. 4h.'),
});
export type MaintenanceWindow = z.infer<typeof MaintenanceWindow>;

export const PodTemplateSpec = z.object({
  metadata: z
    .object({
      labels: z.record(z.string(), z.string()).optional().describe('Labels added to every node pod (the operator\'s own win).'),
      annotations: z.record(z.string(), z.string()).optional().describe('Annotations added to every node pod.'),
    })
    .optional()
    .describe('Extra labels and annotations of the node pods.'),
  nodeSelector: z.record(z.string(), z.string()).optional().describe('Node labels a node pod\'s Kubernetes node must carry.'),
  affinity: Affinity.optional(),
  tolerations: z.array(Toleration).max(64).optional().describe('Taints the node pods tolerate.'),
  topologySpreadConstraints: z.array(TopologySpreadConstraint).max(16).optional().describe('How the node pods spread over domains (hosts, zones).'),
  priorityClassName: z.string().max(253).optional().describe('PriorityClass of the node pods.'),
}).describe('Scheduling and metadata of the node pods.');

export const UpdateStrategy = z.enum(['RollingUpdate', 'Supervised']);

export const EventDBClusterSpec = z
  .object({
    replicas: z
      .number()
      .int()
      .default(3)
      .describe('Voting nodes: 1, 3 or 5.')
      .meta(celRules({ rule: 'self == 1 || self == 3 || self == 5', message: 'replicas must be 1, 3 or 5' })),
    readOnlyReplicas: z
      .number()
      .int()
      .min(0)
      .max(16)
      .default(0)
      .describe('Read-only replica nodes (not voting); not with replicas 1.'),
    image: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe("The node image; absent: the node image of the operator's own version."),
    imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent').describe('Image pull policy of the node pods: Always, IfNotPresent or Never.'),
    resources: ResourceRequirements.optional(),
    storage: StorageSpec.optional().describe('The nodes\' volumes: data, and optionally a separate index volume.'),
    configuration: NodeConfiguration.optional(),
    tls: TlsSpec.optional().describe('TLS of the nodes; absent: mode SelfSigned.'),
    users: UsersSpec.optional().describe('Passwords of the admin and ops users; absent: generated.'),
    licenseSecret: SecretKeyReference.optional().describe(
      'License key that enables the node\'s auto-scavenge.',
    ),
    updateStrategy: UpdateStrategy.default('RollingUpdate').describe(
      'RollingUpdate, or Supervised: every disruptive operation waits for the annotation eventdb.io/approve: <operation id>.',
    ),
    maintenanceWindows: z
      .array(MaintenanceWindow)
      .max(16)
      .optional()
      .describe('Disruptive operations start only inside one of these windows (none: always).'),
    paused: z.boolean().default(false).describe('true: observe and report, change nothing.'),
    hibernation: z
      .boolean()
      .default(false)
      .describe('true: stop every node cleanly (followers first, the leader last after it resigned); pods deleted, PVCs and Secrets kept, phase Hibernated. false: the nodes start again on the same volumes.'),
    sourceBackup: LocalObjectReference.optional().describe('Bootstrap from this Backup; immutable.'),
    podTemplate: PodTemplateSpec.optional(),
  })
  .meta(
    celRules(
      {
        rule: 'self.replicas != 1 || self.readOnlyReplicas == 0',
        message: 'readOnlyReplicas need replicas 3 or 5',
        fieldPath: '.readOnlyReplicas',
      },
      {
        rule:
          'has(self.sourceBackup) == has(oldSelf.sourceBackup) && ' +
          '(!has(self.sourceBackup) || self.sourceBackup == oldSelf.sourceBackup)',
        message: 'sourceBackup is immutable',
        fieldPath: '.sourceBackup',
      },
      {
        // Nodes with and without TLS cannot gossip or replicate with each other: a rolling
        // restart across the switch would leave the cluster without a quorum.
        rule:
          "(has(self.tls) && self.tls.mode == 'Disabled') == (has(oldSelf.tls) && oldSelf.tls.mode == 'Disabled') || " +
          '(self.replicas == 1 && oldSelf.replicas == 1)',
        message:
          'tls.mode cannot switch between Disabled and SelfSigned or Secret while replicas is 3 or 5: nodes with and ' +
          'without TLS cannot talk to each other, so a rolling restart would lose the quorum. Scale to 1 first, or ' +
          'restore a Backup into a new cluster with the wanted mode',
        fieldPath: '.tls',
      },
    ),
  )
  .describe('The cluster the user asks for.');
export type EventDBClusterSpec = z.infer<typeof EventDBClusterSpec>;

export const ClusterPhase = z.enum([
  'Creating',
  'Ready',
  'Updating',
  'Scaling',
  'Degraded',
  'Paused',
  'Failed',
  'Hibernating',
  'Hibernated',
]);
export type ClusterPhase = z.infer<typeof ClusterPhase>;

export const MemberStatus = z.object({
  pod: z.string().describe('Pod of the node.'),
  role: z.string().describe('Node state from gossip: Leader, Follower, ReadOnlyReplica, ...'),
  alive: z.boolean().describe('Alive in the node\'s own gossip.'),
  writerCheckpoint: z.number().int().optional().describe('Log position the node has written up to.'),
  chaserCheckpoint: z.number().int().optional().describe('Log position the node has flushed and indexed up to.'),
  epochNumber: z.number().int().optional().describe('Epoch the node is in.'),
  image: z.string().optional().describe('Image the pod runs.'),
  revision: z.string().optional().describe('Revision of the pod (hash of what needs a restart).'),
  ready: z.boolean().optional().describe('The pod is ready.'),
  certificateFingerprint: z.string().optional().describe('SHA-256 fingerprint of the certificate the node served at the last observation.'),
});
export type MemberStatus = z.infer<typeof MemberStatus>;

export const OperationKind = z.enum([
  'RollingUpdate',
  'Scale',
  'CertificateReload',
  'Scavenge',
  'Backup',
  'Restore',
  'Switchover',
]);
export type OperationKind = z.infer<typeof OperationKind>;

/**
 * The one disruptive operation in progress. Everything a restarted operator needs to resume it
 * is here; the plan itself is recomputed from the cluster each time.
 */
export const OperationStatus = z.object({
  id: z.string().describe('Operation id, for eventdb.io/approve with updateStrategy Supervised.'),
  kind: OperationKind.describe('RollingUpdate, Scale, CertificateReload, Scavenge, Backup, Restore or Switchover.'),
  step: z.string().describe('What is happening now, e.g. "restart orders-2".'),
  startedAt: Timestamp,
  reason: z.string().optional().describe('Why: ImageChanged, ConfigurationChanged, RestartRequested, ...'),
  targetRevision: z.string().optional().describe('RollingUpdate: the revision every pod moves to.'),
  targetImage: z.string().optional().describe('RollingUpdate: the image every pod moves to.'),
  fromReplicas: z.number().int().optional().describe('Scale: the voting nodes before.'),
  toReplicas: z.number().int().optional().describe('Scale: the voting nodes after.'),
  pod: z.string().optional().describe('The pod being handled.'),
  podStep: z.string().optional().describe('Where that pod is: Deleting, WaitingReady, Resigning, ...'),
  previousLeader: z.string().optional().describe('Leader pod before a resign, to see a new one.'),
  stepStartedAt: Timestamp.optional(),
  catchUpTarget: z
    .number()
    .int()
    .optional()
    .describe('Leader writer checkpoint the restarted pod must reach before the next step.'),
  completed: z.array(z.string()).max(64).optional().describe('Pods done, in order.'),
  waitingFor: z.string().optional().describe('What blocks the operation, when something does.'),
});
export type OperationStatus = z.infer<typeof OperationStatus>;

/**
 * A certificate rotation (issue 22): the running one, else the last one. Persisted so that an
 * operator restarted in the middle of it continues where it was: which nodes are verified, how
 * often each one's reload failed and when it is tried next, and when the Secret changed (the
 * rotation's seconds are counted from there).
 */
export const CertificateRotationStatus = z.object({
  secretHash: z.string().describe('Content hash of the certificate and CA Secrets the nodes are brought to.'),
  method: z.enum(['Signal', 'Endpoint']).optional().describe('tls.reload when the rotation started.'),
  signalFailures: z.number().int().optional().describe('SIGHUPs through pods/exec that failed in this rotation (the exec itself, not a node refusing its files).'),
  fallback: z
    .object({
      method: z.literal('Endpoint').describe('The method used instead: Endpoint.'),
      reason: z.string().describe('Why Signal was given up, e.g. the apiserver refusing pods/exec.'),
      at: Timestamp,
    })
    .optional()
    .describe('Set when tls.reload Signal could not be used (no pods/exec, or 3 failed SIGHUPs, or one denied): the rest of the rotation reloads by Endpoint (POST /admin/reloadconfig).'),
  secretChangedAt: Timestamp.describe('When the certificate or CA Secret changed: its latest write (to the second), else when the operator first saw the change.'),
  startedAt: Timestamp.describe('When the operator first saw the change and started the rotation.'),
  finishedAt: Timestamp.optional().describe('When the last node was verified; absent while the rotation runs.'),
  seconds: z.number().optional().describe('From secretChangedAt to the last verified node.'),
  alongside: z
    .string()
    .optional()
    .describe('The operation (status.operation) that held the cluster while the rotation ran next to it, e.g. "Scavenge 5f0c...": a reload restarts nothing, so it never waits for a backup, scavenge, rolling update or scale.'),
  verified: z.array(z.string()).max(64).optional().describe('Pods verified to serve the new certificate and trust the new CAs.'),
  nodes: z
    .array(
      z.object({
        pod: z.string().describe('Pod of the node.'),
        failures: z.number().int().describe('Failed reload attempts of this node in this rotation.'),
        lastError: z.string().optional().describe('Why its last reload failed.'),
        nextAttemptAt: Timestamp.optional().describe('A failed node is not tried again before this time (back-off 5, 10, 20, then every 30 s).'),
      }),
    )
    .max(64)
    .optional()
    .describe('Nodes whose reload failed in this rotation.'),
  previousCaCertificates: z
    .array(z.string())
    .max(16)
    .optional()
    .describe('The CA certificates (PEM, public) trusted before the change, while the rotation runs: nodes not yet reloaded still serve certificates they sign.'),
});
export type CertificateRotationStatus = z.infer<typeof CertificateRotationStatus>;

export const EventDBClusterStatus = z.object({
  observedGeneration: z.number().int().optional().describe('The generation of the spec this status describes.'),
  phase: ClusterPhase.optional().describe('Creating, Ready, Updating, Scaling, Degraded, Paused, Failed, Hibernating or Hibernated.'),
  replicas: z.number().int().optional().describe('Voting node pods that exist (the scale subresource reads it).'),
  readyReplicas: z.number().int().optional().describe('Voting node pods that are ready.'),
  readOnlyReplicas: z
    .object({ replicas: z.number().int().describe('Read-only replica pods that exist.'), ready: z.number().int().describe('Read-only replica pods that are ready.') })
    .optional()
    .describe('Read-only replica pods that exist and are ready.'),
  clusterSize: z.number().int().optional().describe('Cluster size the voting nodes run with now.'),
  selector: z.string().optional().describe('Label selector of the pods, for the scale subresource.'),
  leader: z.string().optional().describe('Pod name of the current leader, from gossip.'),
  image: z.string().optional().describe('Image every node runs now.'),
  currentRevision: z.string().optional().describe('Revision every node pod ran when the last rolling update finished.'),
  updateRevision: z.string().optional().describe('Revision the spec asks for (hash of what needs a restart).'),
  members: z.array(MemberStatus).max(32).optional().describe('Every node pod, as its own gossip describes it.'),
  membersObservedAt: Timestamp.optional(),
  operation: OperationStatus.optional().describe('The one disruptive operation in progress; its progress, so a restarted operator resumes it.'),
  lastOperation: z
    .object({
      id: z.string().describe('Operation id.'),
      kind: OperationKind.describe('Kind of the operation.'),
      result: z.string().describe('How it ended: Succeeded, Failed, ...'),
      finishedAt: Timestamp,
    })
    .optional()
    .describe('The last operation that finished.'),
  restartedAt: z.string().optional().describe('The eventdb.io/restartedAt value last acted on.'),
  restoredFrom: z
    .object({
      backup: z.string().describe('Name of the Backup.'),
      method: z.string().optional().describe('Its method: VolumeSnapshot or FileCopy.'),
      writerCheckpoint: z.number().int().optional().describe('Log position the backup holds every event up to.'),
      completedAt: Timestamp,
    })
    .optional()
    .describe('spec.sourceBackup: the Backup the nodes were bootstrapped from, once the cluster was first Ready.'),
  nextMaintenanceWindow: Timestamp.optional(),
  certificates: z
    .object({
      secretHash: z.string().optional().describe('Content hash of the certificate and CA Secrets the nodes were last verified with.'),
      notAfter: Timestamp.optional(),
      reloadedAt: Timestamp.optional(),
      servedByNodes: z.boolean().optional().describe('True when every running node was started with TLS (false with tls.mode Disabled, or while older pods run without it).'),
      rotation: CertificateRotationStatus.optional().describe('The running certificate rotation, else the last one.'),
    })
    .optional()
    .describe('The certificates the nodes serve: hash, expiry, rotations.'),
  credentials: z
    .object({
      adminSecret: z.string().optional().describe('Secret with the admin password.'),
      opsSecret: z.string().optional().describe('Secret with the ops password.'),
    })
    .optional()
    .describe('Secrets that hold the admin and ops passwords.'),
  conditions: Conditions.optional(),
}).describe('What the operator observed and does.');
export type EventDBClusterStatus = z.infer<typeof EventDBClusterStatus>;

export const EventDBCluster = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND_CLUSTER),
  metadata: ObjectMeta,
  spec: EventDBClusterSpec,
  status: EventDBClusterStatus.optional(),
});
export type EventDBCluster = z.infer<typeof EventDBCluster>;

// Referenced by other kinds' schemas.
export { ClusterReference };

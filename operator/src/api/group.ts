/**
 * The API's fixed names: group, version, kinds, the labels and annotations every child carries,
 * and the operator's field manager. These are the contract of ../../shared/spec/operator-api.md;
 * users, GitOps repositories and the tests rely on them, so they are written once, here.
 */
export const GROUP = 'eventdb.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const KIND_CLUSTER = 'EventDBCluster';
export const KIND_SCAVENGE_SCHEDULE = 'ScavengeSchedule';
export const KIND_BACKUP = 'Backup';
export const KIND_BACKUP_SCHEDULE = 'BackupSchedule';

export const PLURAL_CLUSTER = 'eventdbclusters';
export const PLURAL_SCAVENGE_SCHEDULE = 'scavengeschedules';
export const PLURAL_BACKUP = 'backups';
export const PLURAL_BACKUP_SCHEDULE = 'backupschedules';

/** The one field manager of every server-side apply and status write of the operator. */
export const FIELD_MANAGER = 'eventdb-operator';

/** Labels on every child object. */
export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_INSTANCE = 'app.kubernetes.io/instance';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const LABEL_CLUSTER = 'eventdb.io/cluster';
/** Pods only: `leader | follower | read-only-replica`, kept current from gossip. */
export const LABEL_ROLE = 'eventdb.io/role';
/** Pods and PVCs: `quorum` (voting node) or `read-only-replica`. */
export const LABEL_NODE_KIND = 'eventdb.io/node-kind';
/** Pods and PVCs: the pod's name, so a PVC can be found from its pod and back. */
export const LABEL_POD = 'eventdb.io/pod';

export const NAME_VALUE = 'eventdb';
export const MANAGED_BY_VALUE = 'eventdb-operator';

export const ROLE_LEADER = 'leader';
export const ROLE_FOLLOWER = 'follower';
export const ROLE_READ_ONLY_REPLICA = 'read-only-replica';
/** Role label of a pod gossip does not (yet) describe: not selected by `<cluster>-leader`. */
export const ROLE_UNKNOWN = 'unknown';

/** Annotation on the cluster: any new value asks for a rolling restart. */
export const ANNOTATION_RESTARTED_AT = 'eventdb.io/restartedAt';
/** Annotation on the cluster: `<operation id>` lets a Supervised update go on. */
export const ANNOTATION_APPROVE = 'eventdb.io/approve';
/**
 * Annotation on the cluster, written by the Backup controller: `<backup>/<pod>/<Stop|Keep>` asks
 * the cluster controller to hold the cluster for that backup (status.operation kind Backup: no
 * rolling update or scale starts) and, with Stop, to stop that pod until the annotation goes.
 */
export const ANNOTATION_BACKUP_HOLD = 'eventdb.io/backup-hold';
/**
 * Annotation on the cluster, written by the ScavengeSchedule controller: `<schedule>/<cycle id>`
 * asks the cluster controller to hold the cluster for that scavenge cycle (status.operation kind
 * Scavenge: no rolling update, scale or backup starts while a node scavenges).
 */
export const ANNOTATION_SCAVENGE_HOLD = 'eventdb.io/scavenge-hold';
/** Label on the Backups a BackupSchedule creates: the schedule's name. */
export const LABEL_BACKUP_SCHEDULE = 'eventdb.io/backup-schedule';
/** Label on the objects a Backup makes (VolumeSnapshots, Jobs): the Backup's name. */
export const LABEL_BACKUP = 'eventdb.io/backup';
/** Annotation on a restored PVC: the Backup its files were restored from (FileCopy bootstrap). */
export const ANNOTATION_RESTORED_FROM = 'eventdb.io/restored-from';
/** Annotation on pods: the revision (hash of everything that needs a restart) the pod runs. */
export const ANNOTATION_REVISION = 'eventdb.io/revision';
/** Annotation on pods: the cluster size the pod's node was started with. */
export const ANNOTATION_CLUSTER_SIZE = 'eventdb.io/cluster-size';

/** The node's HTTP port inside the pod, named `http` on every Service. */
export const NODE_HTTP_PORT = 2113;
/**
 * Annotation on pods: the content hash of the certificate Secrets the operator wants the node to
 * reload. Setting it also makes the kubelet sync the pod, which refreshes its Secret volumes now.
 */
export const ANNOTATION_CERTIFICATE_HASH = 'eventdb.io/certificate-hash';

/**
 * Annotation on the cluster: `<pod name>` of a voting node asks for a switchover to it (its
 * priority raised, the others' lowered, the leader resigns until it leads); the operator clears
 * it with the result in an Event. Waits for a maintenance window unless
 * `eventdb.io/switchover-now: "true"`.
 */
export const ANNOTATION_SWITCHOVER = 'eventdb.io/switchover';
export const ANNOTATION_SWITCHOVER_NOW = 'eventdb.io/switchover-now';

/**
 * Annotation on the cluster: a JSON array of pod names (`'["orders-1"]'`) or `'["*"]'`: those
 * nodes are stopped and not started, restarted or labelled by the operator until they leave the
 * list; their PVCs stay. Leaving fewer voting nodes than a quorum needs
 * `eventdb.io/fenced-force: "true"`.
 */
export const ANNOTATION_FENCED = 'eventdb.io/fenced';
export const ANNOTATION_FENCED_FORCE = 'eventdb.io/fenced-force';

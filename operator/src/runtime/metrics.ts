/**
 * The operator's Prometheus metrics, through prom-client, in one registry per process (rendered
 * by the probe server's `/metrics`).
 *
 * Per-object series (clusters, backups) are set from what a reconcile read, so a new leader
 * rebuilds them from the objects' status on its first pass (every object is reconciled when the
 * controllers start), and `forgetCluster` / `forgetBackup` remove them with their object. Only
 * the leader reconciles: a standby replica reports its controller-independent series only.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds buckets for reconcile and operation durations: 5 ms to 30 minutes. */
export const DURATION_BUCKETS_SECONDS = [0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800];

/** Seconds buckets for backups: 1 s to 2 hours. */
export const BACKUP_BUCKETS_SECONDS = [1, 10, 60, 300, 900, 1800, 3600, 7200];

export const CLUSTER_PHASES = ['Creating', 'Ready', 'Updating', 'Scaling', 'Degraded', 'Paused', 'Failed', 'Hibernating', 'Hibernated'] as const;

type ClusterKey = { readonly namespace: string; readonly name: string };

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly #registers = [this.registry];
  /** The operation kind reported per cluster (`namespace/name`), so that a change removes the old series. */
  readonly #operations = new Map<string, string>();
  readonly #clusterPhases = new Map<string, string>();

  readonly reconciles = new Counter({ name: 'eventdb_operator_reconcile_total', help: 'Reconciles, by controller and result (success, requeue, error).', labelNames: ['controller', 'result'] as const, registers: this.#registers });
  readonly reconcileErrors = new Counter({ name: 'eventdb_operator_reconcile_errors_total', help: 'Reconciles that failed, by controller.', labelNames: ['controller'] as const, registers: this.#registers });
  readonly reconcileSeconds = new Histogram({ name: 'eventdb_operator_reconcile_duration_seconds', help: 'Time one reconcile took, by controller.', labelNames: ['controller'] as const, buckets: DURATION_BUCKETS_SECONDS, registers: this.#registers });
  readonly lastReconcileTimestamp = new Gauge({ name: 'eventdb_operator_last_reconcile_timestamp_seconds', help: 'When a reconcile of each controller last ended (Unix seconds), by controller and result (success, error).', labelNames: ['controller', 'result'] as const, registers: this.#registers });
  readonly queueDepth = new Gauge({ name: 'eventdb_operator_workqueue_depth', help: 'Keys waiting in a controller\'s work queue.', labelNames: ['controller'] as const, registers: this.#registers });
  readonly queueRetries = new Counter({ name: 'eventdb_operator_workqueue_retries_total', help: 'Keys re-queued after a failure, by controller.', labelNames: ['controller'] as const, registers: this.#registers });
  readonly operationSeconds = new Histogram({ name: 'eventdb_operator_operation_duration_seconds', help: 'Duration of finished disruptive operations (RollingUpdate, Scale, CertificateReload, ...), by kind and result.', labelNames: ['kind', 'result'] as const, buckets: DURATION_BUCKETS_SECONDS, registers: this.#registers });
  readonly operationsInProgress = new Gauge({ name: 'eventdb_operator_operations_in_progress', help: '1 while a cluster has an operation in progress (status.operation), by namespace, name and kind.', labelNames: ['namespace', 'name', 'kind'] as const, registers: this.#registers });
  readonly operationStarted = new Gauge({ name: 'eventdb_operator_operation_started_timestamp_seconds', help: 'When the operation in progress of each cluster started (Unix seconds), by namespace, name and kind.', labelNames: ['namespace', 'name', 'kind'] as const, registers: this.#registers });
  readonly informerEvents = new Counter({ name: 'eventdb_operator_informer_activity_total', help: 'Lists, watches and their failures, by kind and activity.', labelNames: ['kind', 'activity'] as const, registers: this.#registers });
  readonly isLeader = new Gauge({ name: 'eventdb_operator_leader', help: '1 while this replica holds the leader Lease.', registers: this.#registers });
  readonly clusterPhase = new Gauge({ name: 'eventdb_operator_cluster_phase', help: '1 for the phase each EventDBCluster is in, by namespace, name and phase.', labelNames: ['namespace', 'name', 'phase'] as const, registers: this.#registers });
  readonly clusterReadyNodes = new Gauge({ name: 'eventdb_operator_cluster_ready_nodes', help: 'Ready nodes of each EventDBCluster.', labelNames: ['namespace', 'name'] as const, registers: this.#registers });
  readonly clusterDesiredNodes = new Gauge({ name: 'eventdb_operator_cluster_desired_nodes', help: 'Nodes each EventDBCluster asks for (spec.replicas).', labelNames: ['namespace', 'name'] as const, registers: this.#registers });
  readonly certificateRotationSeconds = new Gauge({ name: 'eventdb_operator_certificate_rotation_seconds', help: 'Seconds from the last change of a cluster\'s certificate or CA Secret to the last node verified serving it, by namespace and name.', labelNames: ['namespace', 'name'] as const, registers: this.#registers });
  readonly certificateRotations = new Counter({ name: 'eventdb_operator_certificate_rotations_total', help: 'Certificate rotations (reloads of the nodes\' certificates) finished, by namespace and name.', labelNames: ['namespace', 'name'] as const, registers: this.#registers });
  readonly certificateNotAfter = new Gauge({ name: 'eventdb_operator_certificate_not_after_timestamp_seconds', help: 'Expiry (Unix seconds) of the node certificate in each cluster\'s Secret, by namespace and name.', labelNames: ['namespace', 'name'] as const, registers: this.#registers });
  readonly backupLastSuccess = new Gauge({ name: 'eventdb_operator_backup_last_success_timestamp_seconds', help: 'When the last completed Backup of each cluster finished (Unix seconds), by namespace and cluster.', labelNames: ['namespace', 'cluster'] as const, registers: this.#registers });
  readonly backupLastFailure = new Gauge({ name: 'eventdb_operator_backup_last_failure_timestamp_seconds', help: 'When the last failed Backup of each cluster failed (Unix seconds), by namespace and cluster.', labelNames: ['namespace', 'cluster'] as const, registers: this.#registers });
  readonly backupSeconds = new Histogram({ name: 'eventdb_operator_backup_duration_seconds', help: 'Duration of finished Backups, by result (Completed, Failed).', labelNames: ['result'] as const, buckets: BACKUP_BUCKETS_SECONDS, registers: this.#registers });
  readonly backups = new Counter({ name: 'eventdb_operator_backups_total', help: 'Backups finished since this process leads, by namespace, cluster and result (Completed, Failed).', labelNames: ['namespace', 'cluster', 'result'] as const, registers: this.#registers });

  readonly scavengeCycles = new Counter({ name: 'eventdb_operator_scavenge_cycles_total', help: 'ScavengeSchedule cycles this process finished, by namespace, schedule and result (Success, Failed).', labelNames: ['namespace', 'schedule', 'result'] as const, registers: this.#registers });
  readonly scavengeCycleSeconds = new Histogram({ name: 'eventdb_operator_scavenge_cycle_duration_seconds', help: 'Duration of finished ScavengeSchedule cycles, by result.', labelNames: ['result'] as const, buckets: BACKUP_BUCKETS_SECONDS, registers: this.#registers });
  readonly scavengeLastCycle = new Gauge({ name: 'eventdb_operator_scavenge_last_cycle_timestamp_seconds', help: 'When the last cycle of each result of each ScavengeSchedule finished (Unix seconds, from status.history), by namespace, schedule and result.', labelNames: ['namespace', 'schedule', 'result'] as const, registers: this.#registers });

  /** The cluster's phase: 1 for it, 0 for the others. */
  setClusterPhase(cluster: ClusterKey, phase: string): void {
    for (const candidate of CLUSTER_PHASES) this.clusterPhase.set({ ...cluster, phase: candidate }, candidate === phase ? 1 : 0);
    const key = keyOf(cluster);
    const previous = this.#clusterPhases.get(key);
    if (previous !== undefined && !(CLUSTER_PHASES as readonly string[]).includes(previous)) this.clusterPhase.remove({ ...cluster, phase: previous });
    if (!(CLUSTER_PHASES as readonly string[]).includes(phase)) this.clusterPhase.set({ ...cluster, phase }, 1);
    this.#clusterPhases.set(key, phase);
  }

  /** The operation in progress of a cluster as its status says (undefined: none); replaces the previous one's series. */
  setOperation(cluster: ClusterKey, operation: { readonly kind: string; readonly startedAtMs: number } | undefined): void {
    const key = keyOf(cluster);
    const previous = this.#operations.get(key);
    if (previous !== undefined && previous !== operation?.kind) {
      this.operationsInProgress.remove({ ...cluster, kind: previous });
      this.operationStarted.remove({ ...cluster, kind: previous });
    }
    if (operation === undefined) {
      this.#operations.delete(key);
      return;
    }
    this.#operations.set(key, operation.kind);
    this.operationsInProgress.set({ ...cluster, kind: operation.kind }, 1);
    if (Number.isFinite(operation.startedAtMs)) this.operationStarted.set({ ...cluster, kind: operation.kind }, operation.startedAtMs / 1000);
  }

  /** A deleted EventDBCluster: every series of it goes. */
  forgetCluster(cluster: ClusterKey): void {
    const key = keyOf(cluster);
    this.setOperation(cluster, undefined);
    for (const phase of CLUSTER_PHASES) this.clusterPhase.remove({ ...cluster, phase });
    const extra = this.#clusterPhases.get(key);
    if (extra !== undefined && !(CLUSTER_PHASES as readonly string[]).includes(extra)) this.clusterPhase.remove({ ...cluster, phase: extra });
    this.#clusterPhases.delete(key);
    for (const gauge of [this.clusterReadyNodes, this.clusterDesiredNodes, this.certificateRotationSeconds, this.certificateNotAfter]) gauge.remove(cluster);
    this.certificateRotations.remove(cluster);
    const byCluster = { namespace: cluster.namespace, cluster: cluster.name };
    for (const gauge of [this.backupLastSuccess, this.backupLastFailure]) gauge.remove(byCluster);
    for (const result of ['Completed', 'Failed']) this.backups.remove({ ...byCluster, result });
  }

  /** The Prometheus text format (or OpenMetrics). */
  async render(openMetrics = false): Promise<{ readonly contentType: string; readonly body: string }> {
    const merged = Registry.merge([this.registry]);
    const contentType = openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE;
    merged.setContentType(contentType as typeof Registry.PROMETHEUS_CONTENT_TYPE);
    return { contentType, body: await merged.metrics() };
  }
}

function keyOf(cluster: ClusterKey): string {
  return `${cluster.namespace}/${cluster.name}`;
}

/** The value of one series (tests, and the leader's own checks). */
export async function valueOf(metric: Counter<string> | Gauge<string> | Histogram<string>, labels: Record<string, string> = {}): Promise<number | undefined> {
  const { values } = await metric.get();
  const wanted = Object.entries(labels);
  const found = values.find((v) => {
    const own = Object.entries(v.labels).filter(([k]) => k !== 'le');
    return own.length === wanted.length && wanted.every(([k, value]) => String(v.labels[k]) === value)
      && !('metricName' in v && typeof v.metricName === 'string' && /_(bucket|sum)$/.test(v.metricName));
  });
  return found?.value;
}

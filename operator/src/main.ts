/**
 * The operator's composition root: the only reader of the environment. It loads the settings,
 * connects to the apiserver (kubeconfig or the pod's service account), starts the informers,
 * the probe and metrics server and the leader election; the replica holding the Lease runs the
 * controllers. Losing the Lease exits the process (the Deployment restarts it as a candidate);
 * SIGTERM stops the controllers, gives the Lease up and exits 0.
 */
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { OperatorConfigError, loadOperatorConfig, type OperatorConfig } from './config/operator-config.js';
import { ChildApplier } from './controllers/eventdbcluster/children.js';
import { reconcileCluster, type ClusterControllerDeps } from './controllers/eventdbcluster/reconcile-cluster.js';
import { reconcileBackup, type BackupControllerDeps } from './controllers/backup/reconcile-backup.js';
import { reconcileBackupSchedule, type BackupScheduleControllerDeps } from './controllers/backupschedule/reconcile-backup-schedule.js';
import { reconcileScavengeSchedule, type ScavengeScheduleControllerDeps } from './controllers/scavengeschedule/reconcile-scavenge-schedule.js';
import { podIpAccess, type NodeAccess } from './node-client/node-access.js';
import { nodeSupportsClustering } from './resources/node-settings.js';
import { NodeClient } from './node-client/node-client.js';
import { ExecNodeSignaller } from './node-client/node-signal.js';
import { ClientNodeKubeApi } from './runtime/client-node-kube-api.js';
import { systemClock } from './runtime/clock.js';
import { Controller } from './runtime/controller.js';
import { EventRecorder } from './runtime/events.js';
import { Informer } from './runtime/informer.js';
import { InformerSet } from './runtime/informer-set.js';
import { LeaderElection } from './runtime/leader-election.js';
import { OperatorMetrics } from './runtime/metrics.js';
import { PortForwardAccess } from './runtime/port-forward-access.js';
import { ProbeServer } from './runtime/probe-server.js';
import type { KubeApi, KubeObject, ResourceType } from './runtime/kube-api.js';
import { BACKUP_SCHEDULES, BACKUPS, EVENTDB_CLUSTERS, PODS, SCAVENGE_SCHEDULES, SECRETS } from './runtime/resource-types.js';
import { LABEL_BACKUP_SCHEDULE } from './api/group.js';
import { clustersUsingSecret, secretMetadataOnly } from './controllers/eventdbcluster/secret-watch.js';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_CONFIG = 2;
const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
/** An informer silent this long means its loop is stuck: liveness fails and the pod restarts. */
const INFORMER_STALE_MS = 20 * 60_000;

function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function operatorNamespace(config: OperatorConfig, api: ClientNodeKubeApi): string {
  if (config.OPERATOR_NAMESPACE !== undefined) return config.OPERATOR_NAMESPACE;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  } catch {
    return api.currentNamespace() ?? 'default';
  }
}

function informersFor(
  type: ResourceType,
  config: OperatorConfig,
  shared: { api: KubeApi; log: Logger; metrics: OperatorMetrics; labelSelector?: string; transform?: (object: KubeObject) => KubeObject },
): InformerSet {
  const namespaces: (string | undefined)[] = config.WATCH_NAMESPACES.length === 0 ? [undefined] : config.WATCH_NAMESPACES;
  return new InformerSet(
    namespaces.map(
      (namespace) =>
        new Informer({
          api: shared.api,
          type,
          clock: systemClock,
          log: shared.log.child({ component: 'informer', kind: type.kind, ...(namespace ? { watchNamespace: namespace } : {}) }),
          ...(namespace === undefined ? {} : { namespace }),
          ...(shared.labelSelector === undefined ? {} : { labelSelector: shared.labelSelector }),
          ...(shared.transform === undefined ? {} : { transform: shared.transform }),
          resyncPeriodMs: config.RESYNC_PERIOD_MS,
          onActivity: (activity) => shared.metrics.informerEvents.inc({ kind: type.kind, activity }),
        }),
    ),
  );
}

async function main(): Promise<void> {
  const version = packageVersion();
  let config: OperatorConfig;
  try {
    config = loadOperatorConfig(process.env, version);
  } catch (err: unknown) {
    if (!(err instanceof OperatorConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(EXIT_CONFIG);
  }
  const log = pino({
    level: config.LOG_LEVEL,
    base: { component: 'operator', pod: config.identity },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['*.password', 'authorization', '*.authorization'], censor: '[redacted]' },
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const api = new ClientNodeKubeApi(kubeConfig);
  const metrics = new OperatorMetrics();
  const access: NodeAccess = config.nodeAccess === 'pod-ip' ? podIpAccess : new PortForwardAccess(kubeConfig, log.child({ component: 'port-forward' }));
  const clusters = informersFor(EVENTDB_CLUSTERS, config, { api, log, metrics });
  const pods = informersFor(PODS, config, { api, log, metrics, labelSelector: 'app.kubernetes.io/managed-by=eventdb-operator' });
  const backups = informersFor(BACKUPS, config, { api, log, metrics });
  const schedules = informersFor(SCAVENGE_SCHEDULES, config, { api, log, metrics });
  const backupSchedules = informersFor(BACKUP_SCHEDULES, config, { api, log, metrics });
  // Certificate and CA Secrets: a change reconciles the clusters using them at once (rotation).
  const secrets = config.WATCH_SECRETS ? informersFor(SECRETS, config, { api, log, metrics, transform: secretMetadataOnly }) : undefined;
  const informers = [clusters, pods, backups, schedules, backupSchedules, ...(secrets === undefined ? [] : [secrets])];
  const deps: ClusterControllerDeps = {
    api,
    clusters,
    pods,
    client: new NodeClient({ timeoutMs: 5000 }),
    access,
    ...(config.POD_EXEC ? { signaller: new ExecNodeSignaller(kubeConfig) } : {}),
    events: new EventRecorder({ api, clock: systemClock, log, controller: 'eventdb.io/eventdb-operator', instance: config.identity }),
    clock: systemClock,
    metrics,
    defaults: { nodeImage: config.DEFAULT_NODE_IMAGE ?? `eventdb:${version}`, dataSize: config.DEFAULT_DATA_SIZE },
    applier: new ChildApplier(api, systemClock),
    clustering: nodeSupportsClustering(),
    writtenStatus: new Map(),
  };
  const controller = new Controller({
    name: 'eventdbcluster',
    reconcile: (context) => reconcileCluster(deps, context),
    clock: systemClock,
    log: log.child({ component: 'controller' }),
    metrics,
    workers: config.WORKERS,
  });
  const backupController = new Controller({
    name: 'backup',
    reconcile: (context) => reconcileBackup(backupDeps, context),
    clock: systemClock,
    log: log.child({ component: 'controller' }),
    metrics,
    workers: config.WORKERS,
  });
  const backupDeps: BackupControllerDeps = {
    api,
    backups,
    clusters,
    pods,
    events: deps.events,
    clock: systemClock,
    defaults: deps.defaults,
    enqueue: (key) => backupController.enqueue(key),
    writtenStatus: new Map(),
    metrics,
  };
  const scheduleController = new Controller({
    name: 'scavengeschedule',
    reconcile: (context) => reconcileScavengeSchedule(scheduleDeps, context),
    clock: systemClock,
    log: log.child({ component: 'controller' }),
    metrics,
    workers: config.WORKERS,
  });
  const scheduleDeps: ScavengeScheduleControllerDeps = {
    api,
    schedules,
    clusters,
    pods,
    // A DELETE of a running scavenge answers once it stopped: the client's own timeout is per call.
    client: deps.client,
    access,
    events: deps.events,
    clock: systemClock,
    defaults: deps.defaults,
    writtenStatus: new Map(),
    metrics,
  };
  const backupScheduleController = new Controller({
    name: 'backupschedule',
    reconcile: (context) => reconcileBackupSchedule(backupScheduleDeps, context),
    clock: systemClock,
    log: log.child({ component: 'controller' }),
    metrics,
    workers: config.WORKERS,
  });
  const backupScheduleDeps: BackupScheduleControllerDeps = {
    api,
    schedules: backupSchedules,
    backups,
    clusters,
    events: deps.events,
    clock: systemClock,
    writtenStatus: new Map(),
  };
  backupSchedules.on((_event, object) => backupScheduleController.enqueue(`${object.metadata.namespace}/${object.metadata.name}`));
  const enqueueBackupSchedulesOf = (namespace: string | undefined, cluster: string): void => {
    for (const schedule of backupSchedules.list((object) => object.metadata.namespace === namespace && (object['spec'] as { cluster?: { name?: string } } | undefined)?.cluster?.name === cluster)) {
      backupScheduleController.enqueue(`${namespace}/${schedule.metadata.name}`);
    }
  };
  const enqueueSchedulesOf = (namespace: string | undefined, cluster: string): void => {
    for (const schedule of schedules.list((object) => object.metadata.namespace === namespace && (object['spec'] as { cluster?: { name?: string } } | undefined)?.cluster?.name === cluster)) {
      scheduleController.enqueue(`${namespace}/${schedule.metadata.name}`);
    }
  };
  schedules.on((_event, object) => scheduleController.enqueue(`${object.metadata.namespace}/${object.metadata.name}`));
  const enqueueBackupsOf = (namespace: string | undefined, cluster: string): void => {
    for (const backup of backups.list((object) => object.metadata.namespace === namespace && (object['spec'] as { cluster?: { name?: string } } | undefined)?.cluster?.name === cluster)) {
      const phase = (backup['status'] as { phase?: string } | undefined)?.phase;
      if (phase !== 'Completed' && phase !== 'Failed') backupController.enqueue(`${namespace}/${backup.metadata.name}`);
    }
  };
  backups.on((_event, object) => {
    backupController.enqueue(`${object.metadata.namespace}/${object.metadata.name}`);
    // A schedule's Backup changed phase (or went): its status, the next due one, pruning.
    const schedule = object.metadata.labels?.[LABEL_BACKUP_SCHEDULE];
    if (schedule !== undefined) backupScheduleController.enqueue(`${object.metadata.namespace}/${schedule}`);
    // A cluster bootstrapping from this Backup waits for it to complete.
    for (const cluster of clusters.list((c) => c.metadata.namespace === object.metadata.namespace && (c['spec'] as { sourceBackup?: { name?: string } } | undefined)?.sourceBackup?.name === object.metadata.name)) {
      controller.enqueue(`${cluster.metadata.namespace}/${cluster.metadata.name}`);
    }
  });
  clusters.on((event, object) => {
    controller.enqueue(`${object.metadata.namespace}/${object.metadata.name}`);
    enqueueBackupsOf(object.metadata.namespace, object.metadata.name ?? '');
    enqueueSchedulesOf(object.metadata.namespace, object.metadata.name ?? '');
    // a schedule waiting for its cluster to exist (the schedules' own resync covers the rest)
    if (event !== 'resync') enqueueBackupSchedulesOf(object.metadata.namespace, object.metadata.name ?? '');
  });
  secrets?.on((event, object) => {
    // Clusters are resynced on their own: only real changes of a Secret matter here.
    if (event === 'resync') return;
    for (const key of clustersUsingSecret(clusters.list(), { namespace: object.metadata.namespace, name: object.metadata.name })) controller.enqueue(key);
  });
  pods.on((_event, object) => {
    const cluster = object.metadata.labels?.['eventdb.io/cluster'];
    if (cluster !== undefined) {
      controller.enqueue(`${object.metadata.namespace}/${cluster}`);
      enqueueBackupsOf(object.metadata.namespace, cluster);
    }
  });

  const probes = new ProbeServer({
    host: config.probeHost,
    port: config.probePort,
    metrics,
    live: () => {
      const silentMs = Date.now() - Math.min(...informers.map((informer) => informer.lastContactAtMs()));
      const synced = informers.every((informer) => informer.hasSynced());
      return { ok: !synced || silentMs < INFORMER_STALE_MS, detail: synced ? `watches heard from ${Math.round(silentMs / 1000)} s ago` : 'starting' };
    },
    ready: () => {
      const synced = informers.every((informer) => informer.hasSynced());
      return { ok: synced, detail: synced ? (election?.isLeader() === false ? 'standby' : 'leading') : 'caches not synced' };
    },
  });
  const address = await probes.listen();
  for (const informer of informers) informer.start();
  log.info({ version, probes: `${address.address}:${address.port}`, watchNamespaces: config.WATCH_NAMESPACES, watchSecrets: config.WATCH_SECRETS, nodeAccess: config.nodeAccess, podExec: config.POD_EXEC, defaultNodeImage: deps.defaults.nodeImage }, 'operator started');

  let election: LeaderElection | undefined;
  let stopping = false;
  const startControllers = async (): Promise<void> => {
    await Promise.all(informers.map((informer) => informer.waitForSync()));
    if (stopping) return;
    metrics.isLeader.set({}, 1);
    controller.start();
    backupController.start();
    scheduleController.start();
    backupScheduleController.start();
    for (const cluster of clusters.list()) controller.enqueue(`${cluster.metadata.namespace}/${cluster.metadata.name}`);
    for (const backup of backups.list()) backupController.enqueue(`${backup.metadata.namespace}/${backup.metadata.name}`);
    for (const schedule of schedules.list()) scheduleController.enqueue(`${schedule.metadata.namespace}/${schedule.metadata.name}`);
    for (const schedule of backupSchedules.list()) backupScheduleController.enqueue(`${schedule.metadata.namespace}/${schedule.metadata.name}`);
    log.info('controllers running');
  };
  const shutdown = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ exitCode: code }, 'operator stopping');
    await Promise.all([controller.stop(), backupController.stop(), scheduleController.stop(), backupScheduleController.stop()]);
    await election?.stop();
    await Promise.all(informers.map((informer) => informer.stop()));
    await access.close();
    await probes.close();
    log.flush();
    process.exit(code);
  };
  process.once('SIGTERM', () => void shutdown(EXIT_OK));
  process.once('SIGINT', () => void shutdown(EXIT_OK));

  if (!config.LEADER_ELECTION) {
    await startControllers();
    return;
  }
  election = new LeaderElection({
    api,
    clock: systemClock,
    log: log.child({ component: 'leader-election' }),
    namespace: operatorNamespace(config, api),
    name: config.LEASE_NAME,
    identity: config.identity,
    leaseDurationMs: config.LEASE_DURATION_MS,
    renewDeadlineMs: config.RENEW_DEADLINE_MS,
    retryPeriodMs: config.RETRY_PERIOD_MS,
  });
  void election.run({
    onStartedLeading: () => void startControllers(),
    onStoppedLeading: () => {
      metrics.isLeader.set({}, 0);
      log.error('lost the leader lease: exiting so a fresh process campaigns again');
      void shutdown(EXIT_FAILED);
    },
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`operator failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(EXIT_FAILED);
});

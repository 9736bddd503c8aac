/**
 * The node's composition root: the only reader of argv and the environment. It loads the
 * configuration, creates the root logger, opens the engine, starts the security service and the
 * HTTP API, and owns the process lifecycle:
 *
 * - an invalid or unknown option prints the problems and exits 2;
 * - SIGTERM, SIGINT and POST /admin/shutdown shut down gracefully: a cluster leader hands over
 *   to another node first, HTTP stops accepting connections and answers the requests in flight
 *   (asking clients to close their connections), then replication stops and the engine closes so
 *   everything is flushed; exit 0;
 * - a fatal condition reported by the engine is logged synchronously and exits 1;
 * - SIGHUP and POST /admin/reloadconfig re-read the configuration and apply what can change live
 *   (reload/reload.ts), the certificates included (tls/reload-step.ts);
 * - TLS is the default: without --insecure the node needs its certificate, key and trusted roots,
 *   and refuses to start (exit 2) when they are missing or not valid (tls/material.ts).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { EventDbError, FatalError, isErrno } from './errors.js';
import { HTTP_KEEP_ALIVE_TIMEOUT_MS, buildServer } from './api/build-server.js';
import { createNodeMetrics } from './metrics/sources.js';
import { createGrpcApi } from './grpc/grpc-api.js';
import { StatsSampler, type StatsTree } from './api/routes/stats-sampler.js';
import { drainHttp } from './api/http-drain.js';
import { createScavengeService, nodeEndpointOf } from './scavenge/scavenge-service.js';
import { createSecurity } from './api/security/security.js';
import { createPersistentSubscriptions } from './subscriptions/service.js';
import {
  ConfigError,
  describeModifiedOptions,
  loadConfig,
  type LoadedConfig,
} from './config/load.js';
import { commandLineRequest, renderHelp } from './config/help.js';
import { createRootLogger, type RootLogger } from './logging.js';
import { advertisedEndpoints, createClusterMember, isClusterMember, type ClusterMember } from './cluster/cluster-setup.js';
import type { AdvertisedEndpoints } from './cluster/cluster-node.js';
import type { NodeState } from './cluster/member-info.js';
import { createReloader, reloadOnSignal, type Reloader } from './reload/reload.js';
import { distinguishedName } from './tls/certificate.js';
import { loadTlsMaterial, missingTlsOptions, missingTlsOptionsMessage, TlsMaterialError, type TlsMaterial } from './tls/material.js';
import { advertisedHostOf, createTlsReloadStep, TLS_LIVE_OPTIONS, tlsSourcesOf } from './tls/reload-step.js';
import { createTlsState, type TlsState } from './tls/tls-state.js';
import { openEventDb } from './storage/event-db.js';
import { createProjectionsSubsystem, type ProjectionsSubsystem } from './projections/projections-subsystem.js';
import type { EventDbOptions } from './storage/event-db-types.js';
import type { NodeConfig } from './config/schema.js';
import { resolveAutoScavengeSettings, type AutoScavengeSettings } from './auto-scavenge/settings.js';
import { AutoScavengeService } from './auto-scavenge/service.js';
import { NodeScavengeClient } from './auto-scavenge/node-client.js';
import type { ClusterView } from './auto-scavenge/state.js';
import { httpEndpointOf } from './cluster/member-info.js';

const EXIT_OK = 0;
const EXIT_FATAL = 1;
const EXIT_CONFIG = 2;
/** How long a stopping leader waits for another node to lead before it stops anyway. */
const SHUTDOWN_HAND_OVER_MS = 10_000;
/**
 * Connection draining before HTTP closes (api/http-drain.ts). A cluster member waits until its
 * clients closed their idle keep-alive connections (they go to another node); a single node has
 * nowhere to send them, and only lets the requests in flight finish.
 */
const SHUTDOWN_DRAIN_CLUSTER = { idleMs: HTTP_KEEP_ALIVE_TIMEOUT_MS, maxMs: HTTP_KEEP_ALIVE_TIMEOUT_MS + 2000 } as const;
const SHUTDOWN_DRAIN_SINGLE = { idleMs: 100, maxMs: 2000 } as const;

function loadConfigFromProcess(): LoadedConfig {
  return loadConfig({
    argv: process.argv.slice(2),
    env: process.env,
    readFile: (path) => readFileSync(path, 'utf8'),
  });
}

function loadConfigOrExit(): LoadedConfig {
  try {
    return loadConfigFromProcess();
  } catch (err: unknown) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(EXIT_CONFIG);
  }
}

/**
 * The node's certificates, read and checked before anything starts; undefined with --insecure.
 * Missing options or refused material are configuration errors: the message, exit 2.
 */
function loadTlsOrExit(config: NodeConfig): TlsMaterial | undefined {
  if (config.insecure || config.dev) return undefined;  // --dev implies --insecure
  const sources = tlsSourcesOf(config);
  const missing = missingTlsOptions(sources);
  if (missing.length > 0) {
    process.stderr.write(`${missingTlsOptionsMessage(missing)}\n`);
    process.exit(EXIT_CONFIG);
  }
  try {
    return loadTlsMaterial(sources, { advertisedHost: advertisedHostOf(config) });
  } catch (err: unknown) {
    if (!(err instanceof TlsMaterialError)) throw err;
    process.stderr.write(`certificates refused: ${err.message}\n`);
    process.exit(EXIT_CONFIG);
  }
}

/** The version in package.json (dist/node/src/main.js sits three levels below it). */
function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function engineOptions(config: NodeConfig): EventDbOptions {
  return {
    dbPath: config.db,
    indexPath: config.index,
    memDb: config.memDb,
    chunkSizeBytes: config.chunkSize,
    maxMemTableSize: config.maxMemTableSize,
    maxEventSizeBytes: config.maxEventSize,
    streamExistenceFilterSizeBytes: config.streamExistenceFilterSize,
    hashCollisionReadLimit: config.hashCollisionReadLimit,
    disableScavengeMerging: config.disableScavengeMerging,
    scavengeBackendPageSizeBytes: config.scavengeBackendPageSize * 1024,
    scavengeBackendCacheSizeBytes: config.scavengeBackendCacheSize,
    scavengeHashUsersCacheCapacity: config.scavengeHashUsersCacheCapacity,
  };
}

function logStartup(root: RootLogger, loaded: LoadedConfig, tls: TlsMaterial | undefined): void {
  const { log } = root;
  log.info({ modifiedOptions: describeModifiedOptions(loaded) }, 'configuration loaded');
  for (const warning of loaded.warnings) log.warn({ warning }, 'configuration warning');
  if (tls === undefined) {
    log.warn(
      'running insecure (--insecure): plain HTTP without TLS; traffic is not encrypted and nodes do not authenticate each other by certificate; as in the original, gRPC calls are neither authenticated nor authorised',
    );
    return;
  }
  log.info(
    {
      fingerprintSha256: tls.leaf.fingerprint256,
      subject: distinguishedName(tls.leaf.subject),
      notAfter: new Date(Date.parse(tls.leaf.validTo)).toISOString(),
      reservedNodeCommonName: tls.reservedNodeCommonName,
      trustedRoots: tls.roots.map((root) => root.certificate.fingerprint256),
    },
    'TLS: serving the node certificate',
  );
  for (const warning of tls.warnings) log.warn({ warning }, 'certificate warning');
}

/** `--help` and `--version` print and exit 0 before any option is loaded or any file touched. */
function answerHelpOrVersion(): void {
  const request = commandLineRequest(process.argv.slice(2));
  if (request === 'run') return;
  process.stdout.write(request === 'help' ? renderHelp(packageVersion()) : `${packageVersion()}\n`);
  process.exit(EXIT_OK);
}

async function main(): Promise<void> {
  // `eventdb backup ...` / `eventdb restore ...`: the file-copy tool (backup/cli.ts), not a node.
  if (process.argv[2] === 'backup' || process.argv[2] === 'restore') {
    const { runTool } = await import('./backup/cli.js');
    process.exit(await runTool(process.argv.slice(2)));
  }
  answerHelpOrVersion();
  const loaded = loadConfigOrExit();
  const { config } = loaded;
  const material = loadTlsOrExit(config);
  const autoScavenge = resolveAutoScavengeSettings({ ...config, nowMs: Date.now() });
  if (autoScavenge.kind === 'refused') {
    process.stderr.write(`${autoScavenge.message}\n`);
    process.exit(EXIT_CONFIG);
  }
  const root = createRootLogger({ level: config.logLevel, format: config.logFormat });
  const { log } = root;
  const exitFatal = (err: unknown, message: string): never => {
    log.fatal({ err }, message);
    root.flushSync();
    process.exit(EXIT_FATAL);
  };
  process.on('uncaughtException', (err) => exitFatal(err, 'uncaught exception'));
  process.on('unhandledRejection', (err) => exitFatal(err, 'unhandled promise rejection'));
  logStartup(root, loaded, material);
  logAutoScavenge(root, autoScavenge);
  const tls =
    material === undefined
      ? undefined
      : createTlsState({ material, connectionResetIntervalMs: config.connectionResetIntervalSec * 1000, log: log.child({ component: 'tls' }) });
  const reloader = createReloader({ load: loadConfigFromProcess, initial: config, log });
  if (tls !== undefined) reloader.addStep('certificates', createTlsReloadStep(tls), { liveOptions: TLS_LIVE_OPTIONS });
  reloadOnSignal(reloader, log);
  try {
    await startNode(root, loaded, exitFatal, { reloader, autoScavengeEnabled: autoScavenge.kind === 'enabled', ...(tls === undefined ? {} : { tls }) });
  } catch (err: unknown) {
    // A refusal with a stable code (a locked directory, a port in use...) is the user's to act
    // on: its message, without a stack. Anything else is a bug or a fault: the whole error.
    if (err instanceof EventDbError && !(err instanceof FatalError)) {
      log.fatal({ code: err.code, ...err.details }, `startup refused: ${err.message}`);
      root.flushSync();
      process.exit(EXIT_FATAL);
    }
    exitFatal(err, 'startup failed');
  }
}

type ExitFatal = (err: unknown, message: string) => never;

/** EADDRINUSE / EADDRNOTAVAIL as a refusal with a message; any other error as it is. */
function addressUnavailable(err: unknown, host: string, port: number): unknown {
  if (!isErrno(err, 'EADDRINUSE') && !isErrno(err, 'EADDRNOTAVAIL')) return err;
  const where = `${host}:${port}`;
  return new EventDbError(
    'EDB_ADDRESS_UNAVAILABLE',
    isErrno(err, 'EADDRINUSE')
      ? `address ${where} is already in use (pick another with --http-port)`
      : `address ${where} is not an address of this machine (pick another with --http-ip)`,
    { cause: err },
  );
}

/** Binds and at once releases host:port (port 0: nothing to check); throws what listen would. */
async function probeListenAddress(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(addressUnavailable(err, host, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

async function startNode(
  root: RootLogger,
  loaded: LoadedConfig,
  exitFatal: ExitFatal,
  live: { readonly reloader: Reloader; readonly autoScavengeEnabled: boolean; readonly tls?: TlsState },
): Promise<void> {
  const { config } = loaded;
  const { log } = root;
  const version = packageVersion();
  const engineDeps = { log, onFatal: (err: Error) => exitFatal(err, 'storage engine failed; stopping the node') };
  // A cluster member's writes are routed through its cluster node (the leader writes, others
  // forward), and leader-only services follow its state.
  const instanceId = randomUUID();
  const member = isClusterMember(config)
    ? await createClusterMember({
      config, engineOptions: engineOptions(config), engineDeps, instanceId, version, log,
      onStateChange: (state, previous) => onStateChange(state, previous),
      // A new leader creates the default users before it reports Leader (it is not ready before).
      // `security` exists by then: the node starts after the HTTP server listens.
      prepareLeadership: (local) => security.ensureDefaultUsers(config.defaultAdminPassword, config.defaultOpsPassword, local),
      // With TLS, gossip, elections and replication authenticate both ends by certificate.
      ...(live.tls === undefined ? {} : { peerHttpsAgent: live.tls.createPeerAgent({ maxSockets: 4 }), transport: live.tls.peerTransport() }),
    })
    : undefined;
  // A node that cannot take its HTTP address must not create a database first (issue 29): the
  // address is probed before anything touches --db. The real listen below still reports a port
  // taken between the two.
  if (member === undefined) await probeListenAddress(config.nodeIp, config.nodePort);
  const db = member?.db ?? (await openEventDb(engineOptions(config), engineDeps));
  const security = await createSecurity({
    db,
    log: log.child({ component: 'security' }),
    defaultAdminPassword: config.defaultAdminPassword,
    defaultOpsPassword: config.defaultOpsPassword,
    allowAnonymousStreamAccess: config.allowAnonymousStreamAccess,
    // In a cluster the leader creates them once elected.
    createDefaultUsers: member === undefined,
  });
  let advertised: AdvertisedEndpoints | undefined;
  const scavenges = createScavengeService({
    db,
    log: log.child({ component: 'scavenge' }),
    historyMaxAgeDays: config.scavengeHistoryMaxAge,
    nodeEndpoint: () => advertised === undefined
      ? nodeEndpointOf(app.server.address(), config.nodeIp)
      : `${advertised.httpHost}:${advertised.httpPort}`,
  });

  // Auto-scavenge runs on the leader only (a node alone leads itself): lead()/follow().
  const autoScavenge = live.autoScavengeEnabled
    ? new AutoScavengeService({
      db,
      log: log.child({ component: 'auto-scavenge' }),
      client: new NodeScavengeClient({
        scheme: live.tls === undefined ? 'http' : 'https',
        ...(live.tls === undefined ? {} : { httpsAgent: live.tls.createPeerAgent({ maxSockets: 2 }) }),
        adminLogin: 'admin', adminPassword: config.defaultAdminPassword, timeoutMs: 10_000,
      }),
      view: (): ClusterView | undefined => member === undefined ? singleNodeView() : clusterView(member, instanceId, config.clusterSize),
      resign: () => {
        const outcome = member?.node.resign();
        if (outcome !== undefined && !outcome.accepted) log.warn({ reason: outcome.message }, 'auto-scavenge: resignation refused');
      },
    })
    : undefined;
  const singleNodeView = (): ClusterView | undefined => {
    const address = app.server.address();
    if (address === null || typeof address === 'string') return undefined;
    const nodeId = `${config.nodeIp}:${address.port}`;
    return { selfId: nodeId, clusterSize: 1, members: [{ nodeId, address: config.nodeIp, port: address.port, alive: true, writerCheckpoint: 0 }] };
  };

  // On a cluster this runs on the leader only: start()/stop() follow leadership.
  const subscriptions = createPersistentSubscriptions({
    db,
    log: log.child({ component: 'subscriptions' }),
  });
  // Like the subscriptions: on a cluster the projections run on the leader only.
  const projections = createProjections(config, db, log, (user, stream) => security.canAccessStream(user, stream, 'r'));
  function onStateChange(state: NodeState, previous: NodeState): void {
    // The scavenge history's start-up work writes: once a leader can take it.
    if (state === 'Leader' || state === 'Follower' || state === 'ReadOnlyReplica') void scavenges.initialise();
    if (state === 'Leader') {
      void subscriptions.start().catch((err: unknown) => log.error({ err }, 'could not start the persistent subscriptions'));
      void projections?.start().catch((err: unknown) => log.error({ err }, 'could not start the projections'));
      autoScavenge?.lead();
    } else if (previous === 'Leader') {
      autoScavenge?.follow();
      void subscriptions.stop();
      void projections?.stop().catch((err: unknown) => log.error({ err }, 'could not stop the projections'));
    }
  }

  let stopping: Promise<void> | undefined;
  const shutdown = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      log.info({ reason }, 'shutting down');
      try {
        // The order keeps writers whole: a leader hands over first (its held writes go to the
        // next leader); then HTTP stops taking connections and answers what is in flight (a
        // follower still forwards it); only then do replication and the storage stop.
        await member?.node.handOverLeadership(SHUTDOWN_HAND_OVER_MS);
        await drainHttp(app, member === undefined ? SHUTDOWN_DRAIN_SINGLE : SHUTDOWN_DRAIN_CLUSTER);
        await app.close();
        metrics.close();
        grpcStats?.close();
        await member?.node.stop();
        await projections?.stop();
        await subscriptions.stop();
        await autoScavenge?.close();
        await scavenges.close();
        security.close();
        await db.close();
      } catch (err: unknown) {
        exitFatal(err, 'shutdown failed');
      }
      log.info('stopped');
      root.flushSync();
      process.exit(EXIT_OK);
    })();
    return stopping;
  };
  const requestShutdown = (): void => void shutdown('admin request');
  const metrics = createNodeMetrics({
    version, db, instanceId, clusterSize: config.clusterSize, scavenges, subscriptions,
    ...(member === undefined ? {} : { member }),
    ...(autoScavenge === undefined ? {} : { autoScavenge }),
    ...(projections === undefined ? {} : { projections }),
    ...(live.tls === undefined ? {} : { tls: live.tls }),
    ...(config.memDb ? {} : { volumes: { data: config.db, index: config.index } }),
  });
  const grpcInsecure = config.insecure || config.dev;
  let grpcStats: StatsSampler | undefined;
  const grpc = createGrpcApi({
    db,
    subscriptions,
    ...(projections === undefined ? {} : { projections }),
    users: security,
    operations: {
      scavenges,
      mergeIndexes: () => db.mergeIndexes(),
      requestShutdown,
      ...(member === undefined ? {} : { node: member.node }),
    },
    // A sampler of its own, as GET /stats has (built on first use: the HTTP server exists then).
    stats: () => {
      grpcStats ??= new StatsSampler({
        db, server: app.server, ...(config.memDb ? {} : { dataPath: config.db }),
        ...(member === undefined ? {} : { replication: () => member.node.replicationTree() as StatsTree }),
      });
      return grpcStats.sample();
    },
    authorizer: security,
    log,
    maxAppendSizeBytes: config.maxAppendSize,
    insecure: grpcInsecure,
    ...(member === undefined ? {} : {
      leadership: {
        isLeader: () => member.node.isLeader,
        readOnlyReplica: config.readOnlyReplica,
        leaderEndpoint: () => {
          const leader = member.node.leaderElsewhere();
          return leader === undefined ? undefined : { host: leader.httpEndPointIp, port: leader.httpEndPointPort };
        },
      },
    }),
    gossip: () => {
      if (member !== undefined) {
        return member.node.gossip().members.map((m) => ({
          instanceId: m.instanceId, state: m.state, isAlive: m.isAlive, timeStampMs: Date.parse(m.timeStamp) || Date.now(),
          httpEndPointIp: m.httpEndPointIp, httpEndPointPort: m.httpEndPointPort,
        }));
      }
      const address = app.server.address();
      const port = address !== null && typeof address !== 'string' ? address.port : config.nodePort;
      return [{
        instanceId, state: 'Leader', isAlive: true, timeStampMs: Date.now(),
        httpEndPointIp: advertised?.httpHost ?? config.nodeIp, httpEndPointPort: advertised?.httpPort ?? port,
      }];
    },
  });
  const app = buildServer({
    metrics,
    grpc,
    db,
    security,
    log,
    loaded,
    version,
    requestShutdown,
    scavenges,
    subscriptions,
    ...(autoScavenge === undefined ? {} : { autoScavenge }),
    ...(member === undefined ? {} : { cluster: clusterApi(member, config.readOnlyReplica, live.tls === undefined ? 'http' : 'https') }),
    reload: () => live.reloader.reload(),
    lastReload: () => live.reloader.last(),
    ...(live.tls === undefined ? {} : { tls: live.tls }),
    ...(projections === undefined ? {} : { projections }),
  });
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  if (member === undefined) await subscriptions.start();
  const address = await app.listen({ host: config.nodeIp, port: config.nodePort }).catch((err: unknown) => {
    throw addressUnavailable(err, config.nodeIp, config.nodePort);
  });
  if (member !== undefined) {
    const replication = await member.node.listenReplication(config.replicationIp || config.nodeIp, config.replicationPort);
    advertised = advertisedEndpoints(config, app.server.address() as AddressInfo, replication);
    member.node.start(advertised);
  }
  if (member === undefined) await scavenges.initialise();
  // A node alone runs the projections; in a cluster only the leader does (onStateChange).
  if (member === undefined) await projections?.start();
  if (member === undefined) autoScavenge?.lead();
  log.info({
    address, memDb: config.memDb, db: config.db, index: config.index,
    ...(advertised === undefined ? {} : { clusterSize: config.clusterSize, advertised }),
  }, 'ready');
}

function logAutoScavenge(root: RootLogger, settings: AutoScavengeSettings): void {
  const { log } = root;
  if (settings.kind === 'enabled') {
    const { licensee, expiresAt } = settings.license;
    log.info({ licensee, expiresAt }, 'auto-scavenge plugin enabled (licensed): configure a schedule with POST /auto-scavenge/configure');
  } else if (settings.kind === 'disabled') {
    log[settings.level]({ ...(settings.license === undefined ? {} : { licensee: settings.license.licensee, expiresAt: settings.license.expiresAt }) }, settings.reason);
  }
}

/** The voting members as gossip sees them, for auto-scavenge; nodes are known by `address:port`. */
function clusterView(member: ClusterMember, instanceId: string, clusterSize: number): ClusterView | undefined {
  const members = member.node.gossip().members.filter((m) => !m.isReadOnlyReplica);
  const self = members.find((m) => m.instanceId === instanceId);
  if (self === undefined) return undefined;
  return {
    selfId: httpEndpointOf(self),
    clusterSize,
    members: members.map((m) => ({
      nodeId: httpEndpointOf(m), address: m.internalHttpEndPointIp, port: m.internalHttpEndPointPort,
      alive: m.isAlive && (m.state === 'Leader' || m.state === 'Follower'), writerCheckpoint: m.writerCheckpoint,
    })),
  };
}

/** What the HTTP API needs of a cluster member. */
function clusterApi(member: ClusterMember, readOnlyReplica: boolean, scheme: 'http' | 'https') {
  const { node } = member;
  return {
    membership: node,
    node,
    nodeState: () => node.nodeState,
    replicationStats: () => node.replicationTree(),
    routing: {
      readOnlyReplica,
      leaderUrl(): string | null | undefined {
        if (node.isLeader) return undefined;
        const leader = node.leaderElsewhere();
        return leader === undefined ? null : `${scheme}://${leader.httpEndPointIp}:${leader.httpEndPointPort}`;
      },
      whenLeaderKnown: () => node.leaderKnown(),
    },
  };
}

/** The projections subsystem, unless RunProjections is None. */
function createProjections(
  config: NodeConfig,
  db: Parameters<typeof createProjectionsSubsystem>[0]['db'],
  log: RootLogger['log'],
  canRead: NonNullable<Parameters<typeof createProjectionsSubsystem>[0]['canRead']>,
): ProjectionsSubsystem | undefined {
  if (config.runProjections === 'None') return undefined;
  return createProjectionsSubsystem({
    db,
    log: log.child({ component: 'projections' }),
    runProjections: config.runProjections,
    startStandardProjections: config.startStandardProjections,
    queryExpiryMinutes: config.projectionsQueryExpiry,
    executionTimeoutMs: config.projectionExecutionTimeout,
    compilationTimeoutMs: config.projectionCompilationTimeout,
    memoryLimitMb: config.projectionMemoryLimit,
    maxStateSizeBytes: config.maxProjectionStateSize,
    canRead,
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`fatal: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(EXIT_FATAL);
});

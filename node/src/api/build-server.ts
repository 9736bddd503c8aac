/**
 * Builds the node's HTTP API as a fastify instance. It never listens: main.ts does, and tests
 * use `inject`. Every route module is registered here; request validation and serialization
 * use zod; errors are mapped in one handler (error-handler.ts) and every error answer carries a
 * message in the negotiated type (error-body.ts); unknown routes answer 404 with a message.
 * Every response carries EventStoreDB's CORS headers.
 */
import type https from 'node:https';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../config/load.js';
import type { EventDb } from '../storage/event-db-types.js';
import { handleError, registerErrorHandler } from './error-handler.js';
import { clientErrorResponse, registerErrorBodies } from './error-body.js';
import { registerHttpDrain } from './http-drain.js';
import { registerOpenApi } from './openapi.js';
import { lazyChildLoggerFactory } from './request-logger.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerClusterRoutes, type ClusterMembership } from './routes/cluster.js';
import { registerLeaderRouting, type LeaderRouting } from './leader-routing.js';
import { registerLeaderForwarding } from './leader-forwarding.js';
import { registerInfoRoutes } from './routes/info.js';
import { registerPersistentSubscriptionRoutes } from './routes/persistent-subscriptions.js';
import { registerReloadConfigRoutes } from './routes/reload-config.js';
import { registerScavengeRoutes } from './routes/scavenge.js';
import { registerAutoScavengeRoutes } from './routes/auto-scavenge.js';
import type { AutoScavengeService } from '../auto-scavenge/service.js';
import type { Authorizer } from './auth-types.js';
import { registerStatsRoutes } from './routes/stats.js';
import { registerMetricsRoutes } from './routes/metrics.js';
import type { NodeMetrics } from '../metrics/node-metrics.js';
import type { StatsTree } from './routes/stats-sampler.js';
import { registerStreamsRoutes } from './routes/streams.js';
import { registerUserRoutes } from './routes/users.js';
import { registerWebRoutes } from './routes/web.js';
import type { ScavengeService } from '../scavenge/scavenge-service.js';
import type { PersistentSubscriptions } from '../subscriptions/service.js';
import type { LastReload, ReloadOutcome } from '../reload/reload.js';
import { certificateOnDisk } from '../tls/on-disk.js';
import type { TlsState } from '../tls/tls-state.js';
import type { ProjectionsSubsystem } from '../projections/projections-subsystem.js';
import { registerProjectionsRoutes } from './routes/projections.js';
import type { Security } from './security/security.js';
import { sendStatus } from './streams/stream-http.js';
import { attachHttp2, type Http2RequestHandler } from '../transport/http2-multiplex.js';

/** `application/grpc`, `application/grpc+proto`, …: a gRPC call (not gRPC-Web). */
function isGrpcRequest(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/grpc(\+|;|$)/i.test(contentType);
}

export interface BuildServerDeps {
  readonly db: EventDb;
  readonly security: Security;
  readonly log: Logger;
  readonly loaded: LoadedConfig;
  /** The node's version, reported by /info, /gossip and the OpenAPI document. */
  readonly version: string;
  /** Starts the node's graceful shutdown (POST /admin/shutdown). */
  readonly requestShutdown: () => void;
  /** Scavenge admin (POST/GET/DELETE /admin/scavenge*); those routes are absent without it. */
  readonly scavenges?: ScavengeService;
  /** Auto-scavenge (licensed); the /auto-scavenge/* routes answer 503 without it. */
  readonly autoScavenge?: AutoScavengeService;
  /** Persistent subscriptions (/subscriptions*); those routes are absent without it. */
  readonly subscriptions?: PersistentSubscriptions;
  /** A cluster member's gossip, elections, leadership commands and leader routing; absent for a node alone. */
  readonly cluster?: {
    readonly membership: ClusterMembership;
    readonly node: NonNullable<Parameters<typeof registerAdminRoutes>[1]['node']>;
    readonly routing: LeaderRouting;
    nodeState(): string;
    /** The replication group of /stats. */
    replicationStats(): StatsTree;
  };
  /** TLS: the server is https with this state's certificates (absent: plain HTTP, --insecure). */
  readonly tls?: TlsState;
  /** Configuration reload (POST /admin/reloadconfig); that route is absent without it. */
  readonly reload?: () => Promise<ReloadOutcome>;
  /** How the last reload went (GET /info `lastReload`). */
  readonly lastReload?: () => LastReload | undefined;
  /** The projections subsystem (/projections*, /projection/*); absent with RunProjections None. */
  readonly projections?: ProjectionsSubsystem;
  /** Prometheus metrics (GET /metrics, and the stream routes' latencies); that route is absent without it. */
  readonly metrics?: NodeMetrics;
  /**
   * The gRPC API (grpc/): HTTP/2 requests whose content-type is `application/grpc…` go there;
   * every other HTTP/2 request, and every HTTP/1.1 one, to the HTTP API. Without it, HTTP/2
   * still serves the HTTP API.
   */
  readonly grpc?: Http2RequestHandler;
}

/** Room for a batch of events: the chunk size bounds one append anyway. */
const BODY_LIMIT_BYTES_MAX = 64 * 1024 * 1024;

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': [
    'Content-Type, X-Requested-With, X-Forwarded-Host, X-Forwarded-Prefix, X-PINGOTHER',
    'Authorization, ES-LongPoll, ES-ExpectedVersion, ES-EventId, ES-EventType',
    'ES-RequireMaster, ES-RequireLeader, ES-HardDelete, ES-ResolveLinkTos, SVC-LongPoll',
    'SVC-ExpectedVersion, SVC-EventId, SVC-EventType, SVC-RequiresMaster, SVC-HardDelete',
    'SVC-ResolveLinkTos',
  ].join(', '),
  'access-control-expose-headers':
    'Location, ES-Position, ES-CurrentVersion, SVC-Position, SVC-CurrentVersion',
} as const;

const ALL_METHODS = 'GET, POST, PUT, DELETE, OPTIONS';
/** How long an idle keep-alive connection stays open (Node's default; fastify's own is 72 s). */
export const HTTP_KEEP_ALIVE_TIMEOUT_MS = 5000;
/** How long HTTP/2 calls in flight may finish once the server closes (subscriptions are then cut). */
const HTTP2_CLOSE_GRACE_MS = 2000;

export function buildServer(deps: BuildServerDeps): FastifyInstance {
  // With TLS the server is https (an https.Server is a tls.Server under an http.Server's API);
  // fastify types the instance by its server, which the routes do not depend on.
  const https = deps.tls === undefined ? {} : { https: deps.tls.httpsServerOptions() };
  const app = Fastify({
    ...(https as object),
    loggerInstance: deps.log.child({ component: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLoggerFactory,
    // While closing, requests already on a connection are still served (a stopping follower
    // forwards writes until its replication stops, after HTTP): a 503 would fail a client's write
    // for no reason. Their answers ask the client to close the connection (api/http-drain.ts).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // Announced to clients (`Keep-Alive: timeout=5`): a stopping cluster node waits this long for
    // idle connections to be closed by their clients (api/http-drain.ts).
    keepAliveTimeout: HTTP_KEEP_ALIVE_TIMEOUT_MS,
    // Stream names may be up to 4096 bytes, percent-encoded in the path.
    routerOptions: { maxParamLength: 16_384 },
    frameworkErrors: (error, request, reply) => handleError(error, request, reply),
    // A request that is not HTTP: a text answer (fastify's own is JSON whatever was accepted).
    clientErrorHandler: (error, socket) => {
      if ((error as NodeJS.ErrnoException).code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) socket.write(clientErrorResponse((error as NodeJS.ErrnoException).code));
      socket.destroy(error);
    },
  }) as unknown as FastifyInstance;
  if (deps.tls !== undefined) deps.tls.attachServer(app.server as unknown as TlsServer);
  // HTTP/2 on the same port (ALPN with TLS, the connection preface without): before the drain
  // tracking below, which then sees only HTTP/1.1 connections.
  const grpc = deps.grpc;
  const routing = (app as unknown as { routing: Http2RequestHandler }).routing.bind(app);
  const multiplex = attachHttp2(app.server, {
    secure: deps.tls !== undefined,
    log: deps.log,
    onRequest: (request, response) => {
      if (grpc !== undefined && isGrpcRequest(request.headers['content-type'])) grpc(request, response);
      else routing(request, response);
    },
  });
  app.addHook('preClose', async () => multiplex.closeSessions(HTTP2_CLOSE_GRACE_MS));
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandler(app);
  registerErrorBodies(app);
  const routeMethods = collectRouteMethods(app);
  registerRequestHooks(app, routeMethods);

  // No route for this method: OPTIONS answers 200, a path known for other methods 405, else 404.
  app.setNotFoundHandler((request, reply) => {
    const fullPath = request.url.split('?')[0] ?? '';
    const methods = routeMethods.forPath(fullPath);
    const path = fullPath.length > 200 ? `${fullPath.slice(0, 200)}...` : fullPath;
    if (request.method === 'OPTIONS') {
      reply.header('access-control-allow-methods', allowedMethods(methods));
      return sendStatus(reply, 200, 'OK');
    }
    if (methods.size > 0) {
      reply
        .header('allow', allowedMethods(methods))
        .header('access-control-allow-methods', allowedMethods(methods));
      return sendStatus(reply, 405, 'Method Not Allowed', `Method not allowed: ${path} answers ${allowedMethods(methods)}, not ${request.method}.`);
    }
    return sendStatus(reply, 404, 'Not Found', `Not found: no endpoint answers ${request.method} ${path}.`);
  });

  // Swagger learns routes from the onRoute hook, so it goes first.
  registerOpenApi(app, { version: deps.version });
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  registerHttpDrain(app, { onDrain: () => closing.abort() });

  const config = deps.loaded.config;
  if (deps.cluster !== undefined) {
    registerLeaderRouting(app, deps.cluster.routing);
    const peerTls = deps.tls;
    registerLeaderForwarding(app, deps.cluster.routing, peerTls === undefined ? {} : {
      tls: (host) => peerTls.clientConnectOptions(host) as https.RequestOptions,
    });
  }
  // before the stream routes: its onResponse hook times their answers
  if (deps.metrics !== undefined) registerMetricsRoutes(app, { security: deps.security, metrics: deps.metrics });
  // EnableAtomPubOverHttp false: /streams/* is not served (404), as the original without it.
  if (config.enableAtomPubOverHttp) void registerStreamsRoutes(app, {
    closing: closing.signal,
    db: deps.db,
    authorizer: deps.security,
    maxEventSizeBytes: config.maxEventSize,
    bodyLimitBytes: Math.min(Math.max(config.maxEventSize * 2, 1024 * 1024), BODY_LIMIT_BYTES_MAX),
    subscriptionGroups: (stream) => deps.subscriptions?.groupNames(stream) ?? [],
  });
  const { db, security, log, version } = deps;
  registerUserRoutes(app, { security });
  const { cluster, tls } = deps;
  const nodeState = cluster === undefined ? {} : { nodeState: () => cluster.nodeState() };
  registerInfoRoutes(app, {
    security, loaded: deps.loaded, version, ...nodeState,
    features: { projections: deps.projections !== undefined, userManagement: true, atomPub: true },
    ...(tls === undefined ? {} : { certificate: () => tls.describe(), certificateOnDisk: () => certificateOnDisk(config.certificateFile) }),
    ...(deps.lastReload === undefined ? {} : { lastReload: deps.lastReload }),
  });
  if (deps.reload !== undefined) {
    const certificateFingerprint = () => tls?.material().leaf.fingerprint256;
    registerReloadConfigRoutes(app, { security, log, reload: deps.reload, certificateFingerprint });
  }
  registerClusterRoutes(app, {
    db, version, ...nodeState, ...(cluster === undefined ? {} : { membership: cluster.membership }),
    ...(tls === undefined ? {} : { authenticatePeer: (req) => tls.verifyConnection(req.raw.socket as TLSSocket) }),
  });
  registerAdminRoutes(app, { security, db, log, requestShutdown: deps.requestShutdown, ...(cluster === undefined ? {} : { node: cluster.node }) });
  registerStatsRoutes(app, {
    security, db, ...(config.memDb ? {} : { dataPath: config.db }),
    ...(cluster === undefined ? {} : { replication: () => cluster.replicationStats() }),
  });
  if (deps.scavenges !== undefined)
    registerScavengeRoutes(app, { security: nodeCertificatesAsSystem(security, tls), scavenges: deps.scavenges });
  registerAutoScavengeRoutes(app, { security, autoScavenge: deps.autoScavenge });
  if (deps.subscriptions !== undefined) {
    const { subscriptions } = deps;
    registerPersistentSubscriptionRoutes(app, { security, subscriptions, closing: closing.signal });
  }
  // Also with projections off: the routes answer 404 with a message and are documented.
  registerProjectionsRoutes(app, { security, projections: deps.projections });
  registerWebRoutes(app);
  return app;
}

/**
 * With TLS, a request that presents the certificate of a node of this cluster acts as the system
 * (a member of $admins): how the leader drives other nodes' scavenges (auto-scavenge). Requests
 * without a client certificate are authenticated as usual.
 */
function nodeCertificatesAsSystem(security: Security, tls: TlsState | undefined): Authorizer {
  if (tls === undefined) return security;
  return {
    async authenticate(request) {
      const socket = request.raw.socket as TLSSocket;
      const presented = typeof socket.getPeerCertificate === 'function' && Object.keys(socket.getPeerCertificate()).length > 0;
      if (presented && tls.verifyConnection(socket).ok) return { kind: 'authenticated', principal: { login: '$system', groups: ['$admins'] } };
      return security.authenticate(request);
    },
    canAccessStream: (principal, stream, access) => security.canAccessStream(principal, stream, access),
    isAdmin: (principal, allowOps) => security.isAdmin(principal, allowOps),
  };
}

interface RouteMethods {
  /** `Access-Control-Allow-Methods` for a route URL pattern; undefined when none is known. */
  allowHeaderForRoute(url: string): string | undefined;
  /** Methods of every route pattern that matches a concrete path. */
  forPath(path: string): ReadonlySet<string>;
}

/** `GET, POST, OPTIONS` for the given methods; every method when none is known. */
function allowedMethods(methods: ReadonlySet<string>): string {
  return methods.size === 0 ? ALL_METHODS : [...methods, 'OPTIONS'].join(', ');
}

function routePattern(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment.startsWith(':')) return '[^/]+';
    if (segment === '*') return '.*';
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${segments.join('/')}$`);
}

/** Learns every route's methods from the onRoute hook (HEAD aside: fastify adds it to GETs). */
function collectRouteMethods(app: FastifyInstance): RouteMethods {
  const byUrl = new Map<string, { pattern: RegExp; methods: Set<string>; allow?: string }>();
  app.addHook('onRoute', (route) => {
    const entry = byUrl.get(route.url) ?? { pattern: routePattern(route.url), methods: new Set() };
    for (const method of [route.method].flat()) if (method !== 'HEAD') entry.methods.add(method);
    delete entry.allow;
    byUrl.set(route.url, entry);
  });
  return {
    allowHeaderForRoute(url) {
      const entry = byUrl.get(url);
      if (entry === undefined || entry.methods.size === 0) return undefined;
      entry.allow ??= allowedMethods(entry.methods);
      return entry.allow;
    },
    forPath(path) {
      const methods = new Set<string>();
      for (const { pattern, methods: routeMethods } of byUrl.values()) {
        if (pattern.test(path)) for (const method of routeMethods) methods.add(method);
      }
      return methods;
    },
  };
}

/**
 * CORS headers on every response and one debug line per request (never headers or bodies).
 * Callback-style hooks: an async hook costs a promise and a microtask hop per request.
 */
function registerRequestHooks(app: FastifyInstance, routeMethods: RouteMethods): void {
  // Access-Control-Allow-Methods names the methods of the matched route, as EventStoreDB does.
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(CORS_HEADERS);
    const allow = routeMethods.allowHeaderForRoute(request.routeOptions.url ?? '');
    if (allow !== undefined) reply.header('access-control-allow-methods', allow);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.debug(
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime),
      },
      'request completed',
    );
    done();
  });
}

/**
 * The node's gRPC API: the services the official KurrentDB/EventStoreDB clients call, as one
 * request handler for HTTP/2 requests whose content-type is `application/grpc…`
 * (transport/http2-multiplex.ts routes them here). Built on connect-node's adapter with the
 * gRPC protocol only; the messages are the project's own .proto files (node/proto/), generated
 * into gen/ by protoc-gen-es.
 *
 * ServerFeatures lists exactly the methods served here, so the clients pick what exists (a
 * client that finds BatchAppend uses it, else Append; persistent subscriptions and projections
 * over gRPC are served for groups on streams, not on `$all`; projections only while the node runs
 * them, RunProjections System or All).
 */
import { create } from '@bufbuild/protobuf';
import type { ConnectRouter } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import type { Authorizer } from '../api/auth-types.js';
import type { EventDb } from '../storage/event-db-types.js';
import type { Http2RequestHandler } from '../transport/http2-multiplex.js';
import { CallGuard, type Leadership } from './call-context.js';
import { uuidToWire } from './codec.js';
import { ClusterInfoSchema, Gossip, MemberInfo_VNodeState } from './gen/eventdb/grpc/gossip_pb.js';
import { ServerFeatures, SupportedMethodsSchema } from './gen/eventdb/grpc/serverfeatures_pb.js';
import { PersistentSubscriptions } from './gen/eventdb/grpc/persistent_pb.js';
import { Streams } from './gen/eventdb/grpc/streams_pb.js';
import { Operations } from './gen/eventdb/grpc/operations_pb.js';
import { Users } from './gen/eventdb/grpc/users_pb.js';
import { Monitoring } from './gen/eventdb/grpc/monitoring_pb.js';
import { Projections } from './gen/eventdb/grpc/projections_pb.js';
import { projectionsService } from './projections-service.js';
import type { ProjectionsSubsystem } from '../projections/projections-subsystem.js';
import { monitoringService } from './monitoring-service.js';
import { operationsService, type OperationsServiceDeps } from './operations-service.js';
import type { StatsTree } from '../api/routes/stats-sampler.js';
import { persistentService } from './persistent-service.js';
import { usersService } from './users-service.js';
import type { Security } from '../api/security/security.js';
import { streamsService } from './streams-service.js';
import type { PersistentSubscriptions as SubscriptionsCapability } from '../subscriptions/service.js';

/**
 * The server version reported to clients. They gate features on it (Node: semver, Rust: three
 * numeric parts), so it names the KurrentDB release whose protocol this node speaks, not
 * EventDB's own version (GET /info has that).
 */
export const PROTOCOL_SERVER_VERSION = '25.1.0';
/** The original's MaxAppendSize default (1 MiB). */
export const MAX_APPEND_SIZE_BYTES_DEFAULT = 1024 * 1024;
/** Largest gRPC message received: an append of MaxAppendSize plus its framing (the original adds room too). */
const RECEIVE_OVERHEAD_BYTES = 1024 * 1024;
/** Largest gRPC message sent (the clients accept 17 MB; an event is at most maxEventSize). */
const SEND_MESSAGE_BYTES_MAX = 17 * 1024 * 1024;

export interface GossipMember {
  readonly instanceId: string;
  readonly state: string;
  readonly isAlive: boolean;
  /** Milliseconds since the Unix epoch of the member's last gossip. */
  readonly timeStampMs: number;
  readonly httpEndPointIp: string;
  readonly httpEndPointPort: number;
}

export interface GrpcApiDeps {
  readonly db: EventDb;
  readonly authorizer: Authorizer;
  readonly log: Logger;
  readonly insecure: boolean;
  readonly maxAppendSizeBytes?: number;
  readonly leadership?: Leadership;
  /** The persistent-subscriptions subsystem the HTTP API uses too; without it the service is not served. */
  readonly subscriptions?: SubscriptionsCapability;
  /** The users the HTTP API manages (Users service); without it the service is not served. */
  readonly users?: Security;
  /** What the HTTP admin routes call (Operations service); without it the service is not served. */
  readonly operations?: Pick<OperationsServiceDeps, 'scavenges' | 'mergeIndexes' | 'requestShutdown' | 'node'>;
  /** The projections the HTTP API manages (Projections service); without it (RunProjections None) not served. */
  readonly projections?: ProjectionsSubsystem;
  /** One sample of the node's statistics (Monitoring.Stats); without it the service is not served. */
  readonly stats?: () => Promise<StatsTree>;
  /** The cluster as clients see it (Gossip.Read). */
  gossip(): readonly GossipMember[];
}

type Implemented = { service: string; method: string; features?: readonly string[] };

const PERSISTENT_SERVICE = 'event_store.client.persistent_subscriptions.persistentsubscriptions';
/** Groups on streams only: without `all` the clients refuse the `*ToAll` calls themselves. */
const PERSISTENT_METHODS: readonly Implemented[] = [
  'create', 'update', 'delete', 'read', 'getinfo', 'replayparked', 'list',
].map((method): Implemented => ({ service: PERSISTENT_SERVICE, method, features: ['stream'] }))
  .concat([{ service: PERSISTENT_SERVICE, method: 'restartsubsystem' }]);

const USERS_METHODS: readonly Implemented[] = [
  'create', 'update', 'delete', 'disable', 'enable', 'details', 'changepassword', 'resetpassword',
].map((method) => ({ service: 'event_store.client.users.users', method }));
const OPERATIONS_METHODS: readonly Implemented[] = [
  'startscavenge', 'stopscavenge', 'shutdown', 'mergeindexes', 'resignnode', 'setnodepriority', 'restartpersistentsubscriptions',
].map((method) => ({ service: 'event_store.client.operations.operations', method }));

const PROJECTIONS_SERVICE = 'event_store.client.projections.projections';
/** Create is advertised with track_emitted_streams, else the Node client creates such projections over HTTP. */
const PROJECTIONS_METHODS: readonly Implemented[] = [
  { service: PROJECTIONS_SERVICE, method: 'create', features: ['track_emitted_streams'] },
  ...['update', 'delete', 'statistics', 'disable', 'enable', 'reset', 'state', 'result', 'restartsubsystem']
    .map((method): Implemented => ({ service: PROJECTIONS_SERVICE, method })),
];

const IMPLEMENTED: readonly Implemented[] = [
  { service: 'event_store.client.streams.streams', method: 'read', features: ['position', 'events'] },
  { service: 'event_store.client.streams.streams', method: 'append' },
  { service: 'event_store.client.streams.streams', method: 'batchappend', features: ['deadline_duration'] },
  { service: 'event_store.client.streams.streams', method: 'delete' },
  { service: 'event_store.client.streams.streams', method: 'tombstone' },
  { service: 'event_store.client.gossip.gossip', method: 'read' },
  { service: 'event_store.client.server_features.serverfeatures', method: 'getsupportedmethods' },
];

function vnodeState(state: string): MemberInfo_VNodeState {
  const value = (MemberInfo_VNodeState as unknown as Record<string, number | undefined>)[state];
  return value === undefined ? MemberInfo_VNodeState.Unknown : value;
}

export function createGrpcApi(deps: GrpcApiDeps): Http2RequestHandler {
  const log = deps.log.child({ component: 'grpc' });
  const guard = new CallGuard({ authorizer: deps.authorizer, insecure: deps.insecure, log, ...(deps.leadership === undefined ? {} : { leadership: deps.leadership }) });
  const maxAppendSizeBytes = deps.maxAppendSizeBytes ?? MAX_APPEND_SIZE_BYTES_DEFAULT;
  const routes = (router: ConnectRouter): void => {
    router.service(ServerFeatures, {
      getSupportedMethods: () => create(SupportedMethodsSchema, {
        eventStoreServerVersion: PROTOCOL_SERVER_VERSION,
        methods: [
          ...IMPLEMENTED,
          ...(deps.subscriptions === undefined ? [] : PERSISTENT_METHODS),
          ...(deps.users === undefined ? [] : USERS_METHODS),
          ...(deps.operations === undefined ? [] : OPERATIONS_METHODS),
          ...(deps.projections === undefined ? [] : PROJECTIONS_METHODS),
          ...(deps.stats === undefined ? [] : [{ service: 'event_store.client.monitoring.monitoring', method: 'stats' }]),
        ].map((m) => ({ serviceName: m.service, methodName: m.method, features: [...(m.features ?? [])] })),
      }),
    });
    router.service(Gossip, {
      read: () => create(ClusterInfoSchema, {
        members: deps.gossip().map((member) => ({
          instanceId: uuidToWire(member.instanceId, false),
          timeStamp: BigInt(member.timeStampMs) * 10_000n,
          state: vnodeState(member.state),
          isAlive: member.isAlive,
          httpEndPoint: { address: member.httpEndPointIp, port: member.httpEndPointPort },
        })),
      }),
    });
    router.service(Streams, streamsService({ db: deps.db, guard, log, maxAppendSizeBytes }));
    if (deps.subscriptions !== undefined) {
      router.service(PersistentSubscriptions, persistentService({ subscriptions: deps.subscriptions, authorizer: deps.authorizer, guard, log }));
    }
    if (deps.stats !== undefined) router.service(Monitoring, monitoringService({ guard, sample: deps.stats }));
    if (deps.projections !== undefined) router.service(Projections, projectionsService({ projections: deps.projections, guard }));
    if (deps.users !== undefined) router.service(Users, usersService({ security: deps.users, guard }));
    if (deps.operations !== undefined) {
      router.service(Operations, operationsService({
        ...deps.operations, authorizer: deps.authorizer, guard, log,
        ...(deps.subscriptions === undefined ? {} : { subscriptions: deps.subscriptions }),
      }));
    }
  };
  const handler = connectNodeAdapter({
    routes,
    grpc: true,
    grpcWeb: false,
    connect: false,
    readMaxBytes: maxAppendSizeBytes + RECEIVE_OVERHEAD_BYTES,
    writeMaxBytes: SEND_MESSAGE_BYTES_MAX,
  });
  return (request, response) => handler(request, response);
}

/**
 * event_store.client.operations.Operations: maps each RPC onto what the HTTP admin routes call
 * (the scavenge service, the engine's index merge, the cluster member's resign / priority, the
 * shutdown request of the composition root, the persistent subscriptions' restart), with their
 * policy: `$admins` or `$ops`. Scavenge parameters go through the HTTP route's parser, so both
 * protocols accept and refuse the same values.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { parseScavengeParams } from '../api/scavenge/scavenge-params.js';
import type { Authorizer } from '../api/auth-types.js';
import { EventDbError, FatalError } from '../errors.js';
import type { ScavengeService } from '../scavenge/scavenge-service.js';
import type { PersistentSubscriptions } from '../subscriptions/service.js';
import type { CallGuard } from './call-context.js';
import { accessDenied, badInput, toConnectError } from './errors.js';
import { Operations, ScavengeResp_ScavengeResult as ScavengeResult, ScavengeRespSchema } from './gen/eventdb/grpc/operations_pb.js';
import { EmptySchema } from './gen/eventdb/grpc/shared_pb.js';

export interface OperationsServiceDeps {
  readonly authorizer: Authorizer;
  readonly guard: CallGuard;
  readonly log: Logger;
  readonly scavenges?: ScavengeService;
  readonly subscriptions?: PersistentSubscriptions;
  /** The engine's index merge (POST /admin/mergeindexes). */
  mergeIndexes(): Promise<void>;
  /** Starts a graceful shutdown (POST /admin/shutdown). */
  requestShutdown(): void;
  /** Leadership commands of a cluster member; absent for a node alone. */
  readonly node?: {
    resign(): { readonly accepted: boolean; readonly message: string };
    setPriority(priority: number): void;
  };
}

type Implementation = Partial<ServiceImpl<typeof Operations>>;

function scavengeNotFound(scavengeId: string): ConnectError {
  return new ConnectError(`Scavenge '${scavengeId}' is not running.`, Code.NotFound, new Headers({ exception: 'scavenge-not-found', 'scavenge-id': scavengeId }));
}

export function operationsService(deps: OperationsServiceDeps): Implementation {
  const { guard, authorizer } = deps;
  const operator = async (context: HandlerContext): Promise<string> => {
    const principal = await guard.principal(context.requestHeader);
    if (principal === undefined || !authorizer.isAdmin(principal, true)) throw accessDenied();
    return principal.login;
  };
  const mapped = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      if (err instanceof EventDbError && !(err instanceof FatalError)) {
        throw new ConnectError(err.message, err.httpStatus === 503 ? Code.Unavailable : err.httpStatus < 500 ? Code.FailedPrecondition : Code.Internal);
      }
      throw toConnectError(err) ?? err;
    }
  };
  const scavengesOf = (): ScavengeService => {
    if (deps.scavenges === undefined) throw new ConnectError('Scavenges are not available on this node', Code.Unavailable);
    return deps.scavenges;
  };

  return {
    startScavenge: (request, context) => mapped(async () => {
      const options = request.options;
      // proto3 zeros mean "not given": the defaults (1 thread, chunk 0).
      const parsed = parseScavengeParams({
        ...(options === undefined || options.threadCount === 0 ? {} : { threads: String(options.threadCount) }),
        ...(options === undefined || options.startFromChunk === 0 ? {} : { startFromChunk: String(options.startFromChunk) }),
      });
      if (parsed.kind === 'invalid') throw badInput(parsed.message);
      const login = await operator(context);
      const started = scavengesOf().start(parsed.params);
      if (started.kind === 'already-running') {
        return create(ScavengeRespSchema, { scavengeId: scavengesOf().currentScavengeId() ?? '', scavengeResult: ScavengeResult.InProgress });
      }
      deps.log.info({ login, scavengeId: started.scavengeId }, 'scavenge requested over gRPC');
      return create(ScavengeRespSchema, { scavengeId: started.scavengeId, scavengeResult: ScavengeResult.Started });
    }),

    stopScavenge: (request, context) => mapped(async () => {
      const scavengeId = request.options?.scavengeId ?? '';
      if (scavengeId === '') throw badInput('scavenge_id is required');
      await operator(context);
      const stopped = await scavengesOf().stop(scavengeId);
      if (stopped.kind === 'not-found') throw scavengeNotFound(scavengeId);
      return create(ScavengeRespSchema, { scavengeId: stopped.scavengeId, scavengeResult: ScavengeResult.Stopped });
    }),

    shutdown: (_request, context) => mapped(async () => {
      const login = await operator(context);
      deps.log.info({ login }, 'shutdown requested over gRPC');
      // After the answer has gone out, as over HTTP.
      setImmediate(() => deps.requestShutdown());
      return create(EmptySchema);
    }),

    mergeIndexes: (_request, context) => mapped(async () => {
      const login = await operator(context);
      deps.log.info({ login }, 'index merge requested over gRPC');
      deps.mergeIndexes().then(
        () => deps.log.info('index merge completed'),
        (err: unknown) => deps.log.error({ err }, 'index merge failed'),
      );
      return create(EmptySchema);
    }),

    resignNode: (_request, context) => mapped(async () => {
      const login = await operator(context);
      if (deps.node === undefined) throw new ConnectError('This node runs alone: there is no other node to hand leadership to.', Code.FailedPrecondition);
      const result = deps.node.resign();
      deps.log.info({ login, ...result }, 'resignation requested over gRPC');
      if (!result.accepted) throw new ConnectError(`Cannot resign: ${result.message}.`, Code.FailedPrecondition);
      return create(EmptySchema);
    }),

    setNodePriority: (request, context) => mapped(async () => {
      const login = await operator(context);
      deps.node?.setPriority(request.priority);
      deps.log.info({ login, nodePriority: request.priority }, 'node priority set over gRPC');
      return create(EmptySchema);
    }),

    restartPersistentSubscriptions: (_request, context) => mapped(async () => {
      await operator(context);
      if (deps.subscriptions === undefined || !deps.subscriptions.restart()) throw new ConnectError('Persistent subscriptions are not started on this node', Code.Unavailable);
      return create(EmptySchema);
    }),
  };
}

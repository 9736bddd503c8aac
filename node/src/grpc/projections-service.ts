/**
 * event_store.client.projections.Projections: maps each RPC onto the projection manager the
 * HTTP projection routes call (api/routes/projections.ts), with the same policies: every call
 * needs an authenticated caller; the manager decides who may define (create, update, delete:
 * `$admins` for non-transient projections) and operate them (enable, disable, reset:
 * `$admins`/`$ops`); Delete and RestartSubsystem need `$admins`/`$ops` as over HTTP.
 *
 * State and Result answer the projection's JSON as a google.protobuf.Value (null when it has
 * none yet). Errors as the clients decode them: a missing projection NOT_FOUND, a duplicate
 * name ALREADY_EXISTS, a refused command PERMISSION_DENIED `access-denied`, bad input
 * INVALID_ARGUMENT, a command the projection's state forbids FAILED_PRECONDITION.
 */
import { create, fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Principal } from '../api/auth-types.js';
import { ProjectionError, type CreateOptions, type ListFilter, type RunAs } from '../projections/management/projection-manager.js';
import type { ProjectionStatistics } from '../projections/projection-types.js';
import type { ProjectionsSubsystem } from '../projections/projections-subsystem.js';
import type { CallGuard } from './call-context.js';
import { accessDenied, badInput, toConnectError } from './errors.js';
import {
  CreateRespSchema, DeleteRespSchema, DisableRespSchema, EnableRespSchema, Projections, ResetRespSchema, ResultRespSchema,
  StateRespSchema, StatisticsRespSchema, UpdateRespSchema, type CreateReq_Options, type StatisticsResp,
} from './gen/eventdb/grpc/projections_pb.js';
import { EmptySchema } from './gen/eventdb/grpc/shared_pb.js';

const NAME_LENGTH_MAX = 1024;
/** The engine the clients call v1 (sent as 1, or left 0); v2 is not served. */
const ENGINE_VERSIONS = [0, 1];
const OPERATORS = ['$admins', '$ops'];

export interface ProjectionsServiceDeps {
  readonly projections: ProjectionsSubsystem;
  readonly guard: CallGuard;
}

type Implementation = Partial<ServiceImpl<typeof Projections>>;

/** Who a command runs as: the same roles the HTTP routes derive. */
function runAsOf(principal: Principal): RunAs {
  const isOperator = principal.login === 'admin' || principal.login === 'ops' || principal.groups.some((g) => OPERATORS.includes(g));
  return { name: principal.login, roles: principal.groups, isOperator, isAdmin: principal.groups.includes('$admins') };
}

function projectionName(value: string | undefined, field = 'name'): string {
  const name = value ?? '';
  if (name.trim() === '') throw badInput(`${field} is required`);
  if (name.length > NAME_LENGTH_MAX) throw badInput(`${field} is longer than ${NAME_LENGTH_MAX} characters`);
  return name;
}

function projectionFailed(err: ProjectionError): ConnectError {
  switch (err.kind) {
    case 'not-found': return new ConnectError(err.message, Code.NotFound);
    case 'conflict': return new ConnectError(err.message, Code.AlreadyExists);
    case 'not-authorized': return accessDenied();
    case 'bad-request': return badInput(err.message);
    case 'failed': return new ConnectError(err.message, Code.FailedPrecondition);
  }
}

function mapError(err: unknown): unknown {
  if (err instanceof ProjectionError) return projectionFailed(err);
  return toConnectError(err) ?? err;
}

/** The projection's JSON document as a Value; none yet (empty body) is null. */
function jsonValue(body: string): Value {
  if (body.trim() === '') return create(ValueSchema, { kind: { case: 'nullValue', value: 0 } });
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(body) as JsonValue;
  } catch {
    // Not JSON (a handler's own text): answered as the string it is.
    return create(ValueSchema, { kind: { case: 'stringValue', value: body } });
  }
  return fromJson(ValueSchema, parsed);
}

function createOptions(options: CreateReq_Options | undefined): CreateOptions {
  if (options === undefined) throw badInput('options are required');
  if (!ENGINE_VERSIONS.includes(options.engineVersion)) throw badInput(`engine_version ${options.engineVersion} is not supported`);
  const base = { query: options.query, handlerType: 'JS', enabled: true };
  const mode = options.mode;
  switch (mode.case) {
    case 'oneTime':
      return { ...base, mode: 'OneTime', name: undefined, emitEnabled: false, checkpointsEnabled: false, trackEmittedStreams: false };
    case 'transient':
      return { ...base, mode: 'Transient', name: projectionName(mode.value.name, 'transient.name'), emitEnabled: false, checkpointsEnabled: false, trackEmittedStreams: false };
    case 'continuous':
      return {
        ...base,
        mode: 'Continuous',
        name: projectionName(mode.value.name, 'continuous.name'),
        emitEnabled: mode.value.emitEnabled,
        checkpointsEnabled: true,
        trackEmittedStreams: mode.value.emitEnabled && mode.value.trackEmittedStreams,
      };
    default:
      throw badInput('mode is required: one_time, transient or continuous');
  }
}

function statisticsToWire(stats: ProjectionStatistics): StatisticsResp {
  return create(StatisticsRespSchema, {
    details: {
      coreProcessingTime: BigInt(Math.round(stats.coreProcessingTime)),
      version: BigInt(stats.version),
      epoch: BigInt(stats.epoch),
      effectiveName: stats.effectiveName,
      writesInProgress: stats.writesInProgress,
      readsInProgress: stats.readsInProgress,
      partitionsCached: stats.partitionsCached,
      status: stats.status,
      stateReason: stats.stateReason,
      name: stats.name,
      mode: stats.mode,
      position: stats.position,
      progress: stats.progress,
      lastCheckpoint: stats.lastCheckpoint,
      eventsProcessedAfterRestart: BigInt(stats.eventsProcessedAfterRestart),
      checkpointStatus: stats.checkpointStatus,
      bufferedEvents: BigInt(stats.bufferedEvents),
      writePendingEventsBeforeCheckpoint: stats.writePendingEventsBeforeCheckpoint,
      writePendingEventsAfterCheckpoint: stats.writePendingEventsAfterCheckpoint,
    },
  });
}

/** The URLs of the HTTP statistics are not on the gRPC wire. */
const noUrl = (path: string): string => path;

export function projectionsService(deps: ProjectionsServiceDeps): Implementation {
  const { projections, guard } = deps;
  const manager = (): ProjectionsSubsystem['manager'] => projections.manager;
  const caller = async (context: HandlerContext, write: boolean): Promise<Principal> => {
    guard.checkLeader(context.requestHeader, write);
    const principal = await guard.principal(context.requestHeader);
    if (principal === undefined) throw accessDenied();
    return principal;
  };
  const operator = async (context: HandlerContext): Promise<Principal> => {
    const principal = await caller(context, true);
    if (!runAsOf(principal).isOperator) throw accessDenied();
    return principal;
  };
  const mapped = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw mapError(err);
    }
  };

  return {
    create: (request, context) => mapped(async () => {
      const options = createOptions(request.options);
      const principal = await caller(context, true);
      await manager().create(options, runAsOf(principal));
      return create(CreateRespSchema);
    }),

    update: (request, context) => mapped(async () => {
      const options = request.options;
      const name = projectionName(options?.name);
      const emit = options?.emitOption.case === 'emitEnabled' ? options.emitOption.value : undefined;
      const principal = await caller(context, true);
      await manager().updateQuery(name, options?.query ?? '', undefined, emit, runAsOf(principal));
      return create(UpdateRespSchema);
    }),

    delete: (request, context) => mapped(async () => {
      const options = request.options;
      const name = projectionName(options?.name);
      const principal = await operator(context);
      await manager().delete(name, {
        deleteEmittedStreams: options?.deleteEmittedStreams ?? false,
        deleteStateStream: options?.deleteStateStream ?? false,
        deleteCheckpointStream: options?.deleteCheckpointStream ?? false,
      }, runAsOf(principal));
      return create(DeleteRespSchema);
    }),

    async *statistics(request, context): AsyncGenerator<StatisticsResp> {
      try {
        const mode = request.options?.mode ?? { case: undefined };
        const filters: Record<string, ListFilter> = { all: 'Any', transient: 'Transient', continuous: 'Continuous', oneTime: 'OneTime' };
        await caller(context, false);
        if (mode.case === 'name') {
          yield statisticsToWire(manager().statistics(projectionName(mode.value), noUrl));
          return;
        }
        if (mode.case === undefined) throw badInput('mode is required: name, all, transient, continuous or one_time');
        const filter = filters[mode.case] as ListFilter;
        for (const stats of manager().list(filter, noUrl)) yield statisticsToWire(stats);
      } catch (err) {
        throw mapError(err);
      }
    },

    disable: (request, context) => mapped(async () => {
      const name = projectionName(request.options?.name);
      const runAs = runAsOf(await caller(context, true));
      // Without a checkpoint written the original aborts the projection (the clients' abortProjection).
      if (request.options?.writeCheckpoint === false) await manager().abort(name, runAs);
      else await manager().disable(name, runAs);
      return create(DisableRespSchema);
    }),

    enable: (request, context) => mapped(async () => {
      const name = projectionName(request.options?.name);
      await manager().enable(name, runAsOf(await caller(context, true)));
      return create(EnableRespSchema);
    }),

    reset: (request, context) => mapped(async () => {
      const name = projectionName(request.options?.name);
      await manager().reset(name, runAsOf(await caller(context, true)));
      return create(ResetRespSchema);
    }),

    state: (request, context) => mapped(async () => {
      const name = projectionName(request.options?.name);
      await caller(context, false);
      const answer = await manager().state(name, request.options?.partition ?? '');
      return create(StateRespSchema, { state: jsonValue(answer.body) });
    }),

    result: (request, context) => mapped(async () => {
      const name = projectionName(request.options?.name);
      await caller(context, false);
      const answer = await manager().result(name, request.options?.partition ?? '');
      return create(ResultRespSchema, { result: jsonValue(answer.body) });
    }),

    restartSubsystem: (_request, context) => mapped(async () => {
      await operator(context);
      await projections.stop();
      await projections.start();
      return create(EmptySchema);
    }),
  };
}

/**
 * event_store.client.persistent_subscriptions.PersistentSubscriptions: maps each RPC onto the
 * persistent-subscriptions service (node/src/subscriptions/), the same one the HTTP API uses, so
 * a group created over HTTP is consumed over gRPC and the other way round. Settings are read
 * by the subsystem's own parser (parseSettingsBody, fed the HTTP field names), so both
 * protocols accept and refuse the same values.
 *
 * ACLs as over HTTP: Create, Update and Delete need `$admins`; RestartSubsystem and
 * ReplayParked `$admins` or `$ops`; GetInfo and List an authenticated user; Read an
 * authenticated user allowed to read the stream (a link's target shown only to a reader of
 * the target's stream).
 *
 * Read: the first request names the group, then acks and nacks follow by message id. The
 * consumer is one per call (its own id), and pulls from its group in a loop of long polls
 * (each at most `bufferSize` messages; the group bounds the messages in flight per consumer by
 * its own `bufferSize` setting), so the subsystem's consumer strategies and timeouts apply
 * unchanged. When the call ends the consumer leaves; its unanswered messages time out and go to
 * the other consumers.
 *
 * Groups on `$all` are not served: the subsystem subscribes to streams only, and the feature
 * list does not name `all`, so the clients refuse `*ToAll` calls themselves.
 */
import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { Authorizer, Principal } from '../api/auth-types.js';
import { readDecisions } from '../api/security/read-authorization.js';
import { groupNameProblem, streamNameProblem } from '../api/stream-names.js';
import type { GroupInfo, NackAction, PersistentSubscriptions } from '../subscriptions/service.js';
import { parseSettingsBody, type SubscriptionSettings } from '../subscriptions/settings.js';
import type { CallGuard } from './call-context.js';
import { recordedEventInit, streamNameFromWire, uuidFromWire } from './codec.js';
import { accessDenied, badInput, GrpcInputError, toConnectError } from './errors.js';
import { EmptySchema, type StreamIdentifier } from './gen/eventdb/grpc/shared_pb.js';
import {
  CreateReq_ConsumerStrategy as Strategy,
  CreateRespSchema, DeleteRespSchema, GetInfoRespSchema, ListRespSchema, PersistentSubscriptions as Service,
  ReadReq_Nack_Action as Action, ReadResp_ReadEvent_RecordedEventSchema, ReadRespSchema, ReplayParkedRespSchema,
  SubscriptionInfoSchema, UpdateRespSchema,
  type CreateReq_Settings, type ReadReq, type ReadResp, type SubscriptionInfo, type UpdateReq_Settings,
} from './gen/eventdb/grpc/persistent_pb.js';

/** How long one pull waits for messages before the loop asks again (bounds a stuck pull). */
const PULL_LONG_POLL_MS = 5_000;
/** Messages asked per pull when the client names no buffer size. */
const BUFFER_SIZE_DEFAULT = 10;
const BUFFER_SIZE_MAX = 10_000;
/** uint64 max: the clients' "from the end" revision. */
const REVISION_END = (1n << 64n) - 1n;
const TICKS_PER_MS = 10_000n;
const ALL_NOT_SUPPORTED = 'persistent subscriptions to $all are not supported by this node';

export interface PersistentServiceDeps {
  readonly subscriptions: PersistentSubscriptions;
  readonly authorizer: Authorizer;
  readonly guard: CallGuard;
  readonly log: Logger;
}

type Implementation = Partial<ServiceImpl<typeof Service>>;
type Policy = 'authenticated' | 'ops-or-admins' | 'admins';

function withTrailers(message: string, code: Code, trailers: Record<string, string>): ConnectError {
  return new ConnectError(message, code, new Headers(trailers));
}

function groupMissing(stream: string, group: string): ConnectError {
  return withTrailers(`Subscription group '${group}' on stream '${stream}' does not exist.`, Code.NotFound, {
    exception: 'persistent-subscription-does-not-exist', 'stream-name': stream, 'group-name': group,
  });
}

function groupExists(stream: string, group: string): ConnectError {
  return withTrailers(`Subscription group '${group}' on stream '${stream}' exists.`, Code.AlreadyExists, {
    exception: 'persistent-subscription-exists', 'stream-name': stream, 'group-name': group,
  });
}

function groupFailed(stream: string, group: string, reason: string): ConnectError {
  return withTrailers(reason, Code.InvalidArgument, {
    exception: 'persistent-subscription-failed', 'stream-name': stream, 'group-name': group, reason,
  });
}

function groupDropped(stream: string, group: string): ConnectError {
  return withTrailers(`Subscription group '${group}' on stream '${stream}' was dropped.`, Code.Canceled, {
    exception: 'persistent-subscription-dropped', 'stream-name': stream, 'group-name': group,
  });
}

function maximumSubscribers(stream: string, group: string): ConnectError {
  return withTrailers(`Maximum subscriptions reached for group '${group}' on stream '${stream}'.`, Code.FailedPrecondition, {
    exception: 'maximum-subscribers-reached', 'stream-name': stream, 'group-name': group,
  });
}

function notRunning(): ConnectError {
  return new ConnectError('Persistent subscriptions are not started on this node', Code.Unavailable);
}

function allNotSupported(): ConnectError {
  return new ConnectError(ALL_NOT_SUPPORTED, Code.Unimplemented);
}

/** The stream of a request's oneof (`$all` refused), checked as HTTP checks names. */
function streamOf(option: { case: string | undefined; value?: unknown }, what: string): string {
  if (option.case === 'all') throw allNotSupported();
  if (option.case === undefined) throw new GrpcInputError(`${what} needs a stream`);
  const stream = streamNameFromWire(option.value as StreamIdentifier);
  const problem = streamNameProblem(stream);
  if (problem !== undefined) throw new GrpcInputError(problem);
  return stream;
}

function checkedGroup(group: string): string {
  if (group.length === 0) throw new GrpcInputError('group_name is required');
  const problem = groupNameProblem(group);
  if (problem !== undefined) throw new GrpcInputError(problem);
  return group;
}

const STRATEGY_NAMES: Record<number, string> = {
  [Strategy.DispatchToSingle]: 'DispatchToSingle',
  [Strategy.RoundRobin]: 'RoundRobin',
  [Strategy.Pinned]: 'Pinned',
};

function millisOf(option: { case: string | undefined; value?: number | bigint }, ticksCase: string, msCase: string): number | undefined {
  if (option.case === msCase) return Number(option.value);
  if (option.case === ticksCase) return Number(BigInt(option.value ?? 0) / TICKS_PER_MS);
  return undefined;
}

/**
 * gRPC settings as the subsystem's settings, through the same parser as the HTTP body. The
 * start comes from the stream options' revision oneof, else the deprecated settings revision
 * (uint64 max = the end, -1).
 */
export function settingsFromWire(
  settings: CreateReq_Settings | UpdateReq_Settings | undefined,
  start: { case: string | undefined; value?: unknown } | undefined,
): SubscriptionSettings {
  if (settings === undefined) throw new GrpcInputError('settings are required');
  let startFrom: bigint | number;
  if (start?.case === 'start') startFrom = 0;
  else if (start?.case === 'end') startFrom = -1;
  else if (start?.case === 'revision') startFrom = start.value as bigint;
  else startFrom = settings.revision;
  if (typeof startFrom === 'bigint') {
    if (startFrom === REVISION_END) startFrom = -1;
    else if (startFrom > BigInt(Number.MAX_SAFE_INTEGER)) throw new GrpcInputError(`start revision ${startFrom} is out of range`);
    else startFrom = Number(startFrom);
  }
  const named = 'consumerStrategy' in settings && settings.consumerStrategy !== '' ? settings.consumerStrategy : STRATEGY_NAMES[settings.namedConsumerStrategy];
  if (named === undefined) throw new GrpcInputError(`unknown named_consumer_strategy ${settings.namedConsumerStrategy}`);
  const body: Record<string, unknown> = {
    resolveLinkTos: settings.resolveLinks,
    startFrom,
    extraStatistics: settings.extraStatistics,
    maxRetryCount: settings.maxRetryCount,
    minCheckPointCount: settings.minCheckpointCount,
    maxCheckPointCount: settings.maxCheckpointCount,
    maxSubscriberCount: settings.maxSubscriberCount,
    liveBufferSize: settings.liveBufferSize,
    readBatchSize: settings.readBatchSize,
    bufferSize: settings.historyBufferSize,
    namedConsumerStrategy: named,
    messageTimeoutMilliseconds: millisOf(settings.messageTimeout, 'messageTimeoutTicks', 'messageTimeoutMs'),
    checkPointAfterMilliseconds: millisOf(settings.checkpointAfter, 'checkpointAfterTicks', 'checkpointAfterMs'),
  };
  const parsed = parseSettingsBody(body);
  if (parsed.kind !== 'ok') throw new GrpcInputError(parsed.message);
  return parsed.settings;
}

function infoToWire(info: GroupInfo): SubscriptionInfo {
  const { settings, stats } = info;
  return create(SubscriptionInfoSchema, {
    eventSource: info.stream,
    groupName: info.group,
    status: stats.status,
    connections: stats.connections.map((c) => ({
      from: c.from,
      username: c.username,
      averageItemsPerSecond: Math.round(c.averageItemsPerSecond),
      totalItems: BigInt(c.totalItemsProcessed),
      countSinceLastMeasurement: BigInt(c.countSinceLastMeasurement),
      observedMeasurements: c.extraStatistics.map((m) => ({ key: m.key, value: BigInt(Math.round(m.value)) })),
      availableSlots: c.availableSlots,
      inFlightMessages: c.inFlightMessages,
      connectionName: c.connectionName,
    })),
    averagePerSecond: Math.round(stats.averageItemsPerSecond),
    totalItems: BigInt(stats.totalItemsProcessed),
    countSinceLastMeasurement: BigInt(stats.countSinceLastMeasurement),
    lastCheckpointedEventPosition: stats.lastCheckpointedEventPosition === undefined ? '' : String(stats.lastCheckpointedEventPosition),
    lastKnownEventPosition: stats.lastKnownEventPosition === undefined ? '' : String(stats.lastKnownEventPosition),
    resolveLinkTos: settings.resolveLinkTos,
    startFrom: String(settings.startFrom),
    messageTimeoutMilliseconds: settings.messageTimeoutMs,
    extraStatistics: settings.extraStatistics,
    maxRetryCount: settings.maxRetryCount,
    liveBufferSize: settings.liveBufferSize,
    bufferSize: settings.bufferSize,
    readBatchSize: settings.readBatchSize,
    checkPointAfterMilliseconds: settings.checkPointAfterMs,
    minCheckPointCount: settings.minCheckPointCount,
    maxCheckPointCount: settings.maxCheckPointCount,
    readBufferCount: stats.readBufferCount,
    liveBufferCount: BigInt(stats.liveBufferCount),
    retryBufferCount: stats.retryBufferCount,
    totalInFlightMessages: stats.totalInFlightMessages,
    outstandingMessagesCount: stats.outstandingMessagesCount,
    namedConsumerStrategy: settings.namedConsumerStrategy,
    maxSubscriberCount: settings.maxSubscriberCount,
    parkedMessageCount: BigInt(info.parkedMessageCount),
  });
}

const NACK_ACTIONS: Record<number, NackAction> = {
  [Action.Unknown]: 'unknown',
  [Action.Park]: 'park',
  [Action.Retry]: 'retry',
  [Action.Skip]: 'skip',
  [Action.Stop]: 'stop',
};

export function persistentService(deps: PersistentServiceDeps): Implementation {
  const { subscriptions, guard, authorizer } = deps;

  const admit = async (context: HandlerContext, policy: Policy, write: boolean): Promise<Principal> => {
    guard.checkLeader(context.requestHeader, write);
    const principal = await guard.principal(context.requestHeader);
    const allowed = principal !== undefined
      && (policy === 'authenticated' || authorizer.isAdmin(principal, policy === 'ops-or-admins'));
    if (!allowed) throw accessDenied();
    return principal;
  };

  const mapped = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw toConnectError(err) ?? err;
    }
  };

  return {
    create: (request, context) => mapped(async () => {
      const options = request.options;
      if (options === undefined) throw badInput('CreateReq.options is required');
      if (options.streamOption.case === 'all') throw allNotSupported();
      const stream = options.streamOption.case === 'stream'
        ? streamOf({ case: 'stream', value: options.streamOption.value.streamIdentifier }, 'CreateReq.options')
        : streamOf({ case: options.streamIdentifier === undefined ? undefined : 'stream', value: options.streamIdentifier }, 'CreateReq.options');
      const group = checkedGroup(options.groupName);
      const settings = settingsFromWire(options.settings, options.streamOption.case === 'stream' ? options.streamOption.value.revisionOption : undefined);
      const principal = await admit(context, 'admins', true);
      const result = await subscriptions.create(stream, group, settings, principal.login);
      switch (result.kind) {
        case 'created': return create(CreateRespSchema);
        case 'exists': throw groupExists(stream, group);
        case 'fail': throw groupFailed(stream, group, result.message);
        case 'not-running': throw notRunning();
      }
    }),

    update: (request, context) => mapped(async () => {
      const options = request.options;
      if (options === undefined) throw badInput('UpdateReq.options is required');
      if (options.streamOption.case === 'all') throw allNotSupported();
      const stream = options.streamOption.case === 'stream'
        ? streamOf({ case: 'stream', value: options.streamOption.value.streamIdentifier }, 'UpdateReq.options')
        : streamOf({ case: options.streamIdentifier === undefined ? undefined : 'stream', value: options.streamIdentifier }, 'UpdateReq.options');
      const group = checkedGroup(options.groupName);
      const settings = settingsFromWire(options.settings, options.streamOption.case === 'stream' ? options.streamOption.value.revisionOption : undefined);
      const principal = await admit(context, 'admins', true);
      const result = await subscriptions.update(stream, group, settings, principal.login);
      switch (result.kind) {
        case 'updated': return create(UpdateRespSchema);
        case 'not-found': throw groupMissing(stream, group);
        case 'fail': throw groupFailed(stream, group, result.message);
        case 'not-running': throw notRunning();
      }
    }),

    delete: (request, context) => mapped(async () => {
      const options = request.options;
      if (options === undefined) throw badInput('DeleteReq.options is required');
      const stream = streamOf(options.streamOption, 'DeleteReq.options');
      const group = checkedGroup(options.groupName);
      const principal = await admit(context, 'admins', true);
      const result = await subscriptions.delete(stream, group, principal.login);
      switch (result.kind) {
        case 'deleted': return create(DeleteRespSchema);
        case 'not-found': throw groupMissing(stream, group);
        case 'fail': throw groupFailed(stream, group, result.message);
        case 'not-running': throw notRunning();
      }
    }),

    getInfo: (request, context) => mapped(async () => {
      const options = request.options;
      if (options === undefined) throw badInput('GetInfoReq.options is required');
      const stream = streamOf(options.streamOption, 'GetInfoReq.options');
      const group = checkedGroup(options.groupName);
      await admit(context, 'authenticated', false);
      const info = subscriptions.info(stream, group);
      if (info === undefined) throw groupMissing(stream, group);
      if ('kind' in info) throw notRunning();
      return create(GetInfoRespSchema, { subscriptionInfo: infoToWire(info) });
    }),

    list: (request, context) => mapped(async () => {
      const option = request.options?.listOption;
      if (option === undefined || option.case === undefined) throw badInput('ListReq.options needs list_all_subscriptions or list_for_stream');
      const stream = option.case === 'listForStream' ? streamOf(
        option.value.streamOption.case === 'stream' ? { case: 'stream', value: option.value.streamOption.value } : option.value.streamOption,
        'ListReq.options.list_for_stream',
      ) : undefined;
      await admit(context, 'authenticated', false);
      if (stream === undefined) {
        const all = subscriptions.allInfos();
        if ('kind' in all) throw notRunning();
        return create(ListRespSchema, { subscriptions: all.infos.map(infoToWire) });
      }
      const infos = subscriptions.streamInfos(stream);
      if (infos !== undefined && 'kind' in infos) throw notRunning();
      // The original answers a stream without groups as "does not exist" (group name empty).
      if (infos === undefined) throw groupMissing(stream, '');
      return create(ListRespSchema, { subscriptions: infos.map(infoToWire) });
    }),

    replayParked: (request, context) => mapped(async () => {
      const options = request.options;
      if (options === undefined) throw badInput('ReplayParkedReq.options is required');
      const stream = streamOf(options.streamOption, 'ReplayParkedReq.options');
      const group = checkedGroup(options.groupName);
      let stopAt: number | undefined;
      if (options.stopAtOption.case === 'stopAt') {
        const value = options.stopAtOption.value;
        if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) throw badInput(`stop_at ${value} must be a non-negative event number`);
        stopAt = Number(value);
      }
      await admit(context, 'ops-or-admins', true);
      const result = subscriptions.replayParked(stream, group, stopAt);
      if (result.kind === 'not-found') throw groupMissing(stream, group);
      if (result.kind === 'not-running') throw notRunning();
      return create(ReplayParkedRespSchema);
    }),

    restartSubsystem: (_request, context) => mapped(async () => {
      await admit(context, 'ops-or-admins', true);
      if (!subscriptions.restart()) throw notRunning();
      return create(EmptySchema);
    }),

    async *read(requests: AsyncIterable<ReadReq>, context: HandlerContext): AsyncGenerator<ReadResp> {
      const iterator = requests[Symbol.asyncIterator]();
      let consumerId: string | undefined;
      /** Aborted when the call ends (client cancelled, or its requests ended). */
      const stop = new AbortController();
      /** Aborted when the consumer stops taking messages (the call's end, or a Stop nack). */
      const pulling = new AbortController();
      stop.signal.addEventListener('abort', () => pulling.abort(), { once: true });
      const onAbort = (): void => stop.abort();
      context.signal.addEventListener('abort', onAbort);
      try {
        const first = await iterator.next();
        if (first.done === true || first.value.content.case !== 'options') throw badInput('ReadReq.options must come first');
        const options = first.value.content.value;
        const stream = streamOf(options.streamOption, 'ReadReq.options');
        const group = checkedGroup(options.groupName);
        if (options.bufferSize < 0 || options.bufferSize > BUFFER_SIZE_MAX) throw badInput(`buffer_size ${options.bufferSize} must be within 1..${BUFFER_SIZE_MAX}`);
        const bufferSize = options.bufferSize === 0 ? BUFFER_SIZE_DEFAULT : options.bufferSize;
        const structuredUuid = options.uuidOption?.content.case === 'structured';
        guard.checkLeader(context.requestHeader, false);
        const principal = await guard.principal(context.requestHeader);
        if (principal === undefined || !(await guard.canAccess(principal, stream, 'r'))) throw accessDenied();
        const info = subscriptions.info(stream, group);
        if (info === undefined) throw groupMissing(stream, group);
        if ('kind' in info) throw notRunning();
        const id = `grpc:${principal.login}:${randomUUID()}`;
        consumerId = id;
        const consumer = { id, username: principal.login, from: 'grpc', connectionName: context.requestHeader.get('user-agent') ?? '' };
        // Acks and nacks arrive while deliveries go out: read them beside the pull loop.
        const answers = (async () => {
          for (;;) {
            const next = await iterator.next();
            if (next.done === true) return;
            const content = next.value.content;
            if (content.case === 'ack') {
              subscriptions.ack(stream, group, content.value.ids.map((uuid) => uuidFromWire(uuid)));
            } else if (content.case === 'nack') {
              const action = NACK_ACTIONS[content.value.action] ?? 'unknown';
              subscriptions.nack(stream, group, content.value.ids.map((uuid) => uuidFromWire(uuid)), action, id);
              // Stop: the consumer leaves its group (the message goes to the others) and gets
              // nothing more; the call stays open until the client ends it.
              if (action === 'stop') pulling.abort();
            }
          }
        })();
        let answersFailed: unknown;
        answers.then(() => stop.abort(), (err: unknown) => {
          answersFailed = err;
          stop.abort();
        });
        yield create(ReadRespSchema, { content: { case: 'subscriptionConfirmation', value: { subscriptionId: `${stream}::${group}` } } });
        const decisions = readDecisions(authorizer, principal);
        while (!pulling.signal.aborted) {
          const outcome = await subscriptions.pull(stream, group, consumer, bufferSize, { longPollMs: PULL_LONG_POLL_MS, signal: pulling.signal });
          if (pulling.signal.aborted) break;
          if (outcome.kind === 'not-found') throw groupDropped(stream, group);
          if (outcome.kind === 'not-running') throw groupDropped(stream, group);
          if (outcome.kind === 'max-subscribers') throw maximumSubscribers(stream, group);
          if (outcome.kind === 'fail') throw groupFailed(stream, group, outcome.message);
          for (const delivery of outcome.deliveries) {
            const resolved = await decisions.resolved(delivery.message.resolved);
            const original = resolved.link ?? resolved.event;
            yield create(ReadRespSchema, {
              content: {
                case: 'event',
                value: {
                  ...(resolved.event === undefined ? {} : { event: create(ReadResp_ReadEvent_RecordedEventSchema, recordedEventInit(resolved.event, structuredUuid)) }),
                  ...(resolved.link === undefined ? {} : { link: create(ReadResp_ReadEvent_RecordedEventSchema, recordedEventInit(resolved.link, structuredUuid)) }),
                  position: original === undefined ? { case: 'noPosition', value: {} } : { case: 'commitPosition', value: BigInt(original.commitPosition) },
                  count: { case: 'retryCount', value: delivery.retryCount },
                },
              },
            });
          }
        }
        if (!stop.signal.aborted) await new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
        if (answersFailed !== undefined) throw answersFailed;
      } catch (err) {
        throw toConnectError(err) ?? err;
      } finally {
        context.signal.removeEventListener('abort', onAbort);
        stop.abort();
        if (consumerId !== undefined) subscriptions.connectionClosed(consumerId);
      }
    },
  };
}

/**
 * event_store.client.streams.Streams: maps each RPC onto the storage engine (the same EventDb
 * the HTTP routes use) and the security service. Reads and subscriptions are async generators:
 * connect writes each message before asking for the next, so a slow reader holds the read
 * loop, not a queue. BatchAppend runs the appends of one stream concurrently, at most
 * BATCH_APPEND_IN_FLIGHT_MAX at a time, and answers each by its correlation id.
 */
import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { anyPack, timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { Principal } from '../api/auth-types.js';
import { LINK_EVENT_TYPE, resolveLink } from '../api/streams/link-resolution.js';
import { readDecisions, type ReadDecisions } from '../api/security/read-authorization.js';
import { ExpectedVersion, type AllPosition, type AppendResult, type EventDb, type NewEvent, type RecordedEvent } from '../storage/event-db-types.js';
import type { CallGuard } from './call-context.js';
import { CommitSignal } from './commit-signal.js';
import {
  compileExpression, expectedVersionFromWire, newEventFromWire, recordedEventToWire, safeNumber,
  streamIdentifierToWire, streamNameFromWire, uuidFromWire, uuidToWire, type ExpectedRevisionOption,
} from './codec.js';
import { badInput, maximumAppendSizeExceeded, streamDeleted, toConnectError, wrongExpectedVersion } from './errors.js';
import { Code as RpcCode, StatusSchema, type Status } from './gen/eventdb/grpc/status_pb.js';
import {
  type StreamIdentifier, AccessDeniedSchema, MaximumAppendSizeExceededSchema, StreamDeletedSchema, TimeoutSchema, UnknownSchema, WrongExpectedVersionSchema,
} from './gen/eventdb/grpc/shared_pb.js';
import {
  AppendRespSchema, BatchAppendRespSchema, DeleteRespSchema, ReadReq_Options_ReadDirection as Direction, ReadRespSchema,
  Streams, TombstoneRespSchema,
  type AppendResp, type BatchAppendReq, type BatchAppendReq_Options, type BatchAppendResp, type ReadReq, type ReadReq_Options, type ReadResp,
} from './gen/eventdb/grpc/streams_pb.js';

/** Events asked of the engine per read while catching up or reading. */
const READ_PAGE_EVENT_COUNT_MAX = 512;
/**
 * A subscription sends fell_behind only to a client that asks for it with this compatibility
 * level (ReadReq.Options.ControlOption), as the original; caught_up goes to every client. Here a
 * live subscription "falls behind" when, after catching up, it finds a page or more of events it
 * has not sent (a slow reader held back by HTTP/2 flow control, or a burst of writes): it then
 * reads the log as in its catch-up and says caught_up again when it reaches the end.
 */
const FELL_BEHIND_COMPATIBILITY = 2;
const BATCH_APPEND_IN_FLIGHT_MAX = 256;
const ALL_STREAM = '$all';
/** The filter window when the client sends none (the clients' default max search window). */
const FILTER_WINDOW_DEFAULT = 32;

export interface StreamsServiceDeps {
  readonly db: EventDb;
  readonly guard: CallGuard;
  readonly log: Logger;
  /** Largest accepted append (data and metadata of its events), as the original's MaxAppendSize. */
  readonly maxAppendSizeBytes: number;
}

type Implementation = Partial<ServiceImpl<typeof Streams>>;

export function streamsService(deps: StreamsServiceDeps): Implementation {
  const { db, guard } = deps;
  return {
    async *read(request: ReadReq, context: HandlerContext): AsyncGenerator<ReadResp> {
      try {
        const options = request.options;
        if (options === undefined) throw badInput('ReadReq.options is required');
        if (options.readDirection !== Direction.Forwards && options.readDirection !== Direction.Backwards)
          throw badInput(`unknown read direction ${options.readDirection}`);
        guard.checkLeader(context.requestHeader, false);
        const principal = await guard.principal(context.requestHeader);
        const structuredUuid = options.uuidOption?.content.case === 'structured';
        // A link's target is shown only to a caller who may read the target's stream.
        const reader = new EventWriter(db, options.resolveLinks, structuredUuid, (stream) => guard.canAccess(principal, stream, 'r'));
        if (options.streamOption.case === 'stream') {
          const stream = streamNameFromWire(options.streamOption.value.streamIdentifier);
          await guard.authorize(principal, stream, 'r');
          if (options.countOption.case === 'subscription') yield* subscribeStream(db, reader, stream, options, context.signal);
          else yield* readStream(db, reader, stream, options);
        } else if (options.streamOption.case === 'all') {
          await guard.authorize(principal, ALL_STREAM, 'r');
          if (options.countOption.case === 'subscription') yield* subscribeAll(db, reader, options, context.signal);
          else yield* readAll(db, reader, options);
        } else {
          throw badInput('ReadReq.options needs a stream or $all');
        }
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
    },

    async append(requests, context): Promise<AppendResp> {
      try {
        guard.checkLeader(context.requestHeader, true);
        const principal = await guard.principal(context.requestHeader);
        let stream: string | undefined;
        let expectedVersion: number = ExpectedVersion.Any;
        const events: NewEvent[] = [];
        let sizeBytes = 0;
        for await (const message of requests) {
          if (message.content.case === 'options') {
            if (stream !== undefined) throw badInput('AppendReq.options may come only once, first');
            stream = streamNameFromWire(message.content.value.streamIdentifier);
            expectedVersion = expectedVersionFromWire(message.content.value.expectedStreamRevision as ExpectedRevisionOption);
            await guard.authorize(principal, stream, 'w');
          } else if (message.content.case === 'proposedMessage') {
            if (stream === undefined) throw badInput('AppendReq.options must come first');
            const event = newEventFromWire(message.content.value);
            sizeBytes += event.data.length + event.metadata.length;
            if (sizeBytes > deps.maxAppendSizeBytes) throw maximumAppendSizeExceeded(deps.maxAppendSizeBytes);
            events.push(event);
          }
        }
        if (stream === undefined) throw badInput('AppendReq.options is required');
        const result = await appendChecked(db, stream, expectedVersion, events);
        if (result.kind === 'stream-deleted') throw streamDeleted(stream);
        if (result.kind === 'wrong-expected-version') {
          const current = result.currentVersion < 0 ? { case: 'currentNoStream' as const, value: {} } : { case: 'currentRevision' as const, value: BigInt(result.currentVersion) };
          const current206 = result.currentVersion < 0 ? { case: 'noStream2060' as const, value: {} } : { case: 'currentRevision2060' as const, value: BigInt(result.currentVersion) };
          return create(AppendRespSchema, {
            result: {
              case: 'wrongExpectedVersion',
              value: { currentRevisionOption: current, currentRevisionOption2060: current206, expectedRevisionOption: expectedOption(expectedVersion), expectedRevisionOption2060: expected206(expectedVersion) },
            },
          });
        }
        const position = await appendPosition(db, stream, result);
        return create(AppendRespSchema, {
          result: {
            case: 'success',
            value: {
              currentRevisionOption: result.lastEventNumber < 0 ? { case: 'noStream', value: {} } : { case: 'currentRevision', value: BigInt(result.lastEventNumber) },
              positionOption: { case: 'position', value: position },
            },
          },
        });
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
    },

    async *batchAppend(requests, context): AsyncGenerator<BatchAppendResp> {
      let principal: Principal | undefined;
      try {
        // requires-leader on a follower (or a read-only replica): the whole call answers NotLeader, which the clients follow.
        guard.checkLeader(context.requestHeader, true);
        principal = await guard.principal(context.requestHeader);
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
      yield* batchAppend(deps, principal, requests, context);
    },

    async delete(request, context) {
      try {
        const position = await deleteStream(deps, context, request.options, false);
        return create(DeleteRespSchema, { positionOption: { case: 'position', value: position } });
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
    },

    async tombstone(request, context) {
      try {
        const position = await deleteStream(deps, context, request.options, true);
        return create(TombstoneRespSchema, { positionOption: { case: 'position', value: position } });
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
    },
  };
}

function expectedOption(expectedVersion: number): { case: 'expectedRevision'; value: bigint } | { case: 'expectedAny' | 'expectedStreamExists' | 'expectedNoStream'; value: object } {
  if (expectedVersion >= 0) return { case: 'expectedRevision', value: BigInt(expectedVersion) };
  if (expectedVersion === ExpectedVersion.NoStream) return { case: 'expectedNoStream', value: {} };
  if (expectedVersion === ExpectedVersion.StreamExists) return { case: 'expectedStreamExists', value: {} };
  return { case: 'expectedAny', value: {} };
}

function expected206(expectedVersion: number): { case: 'expectedRevision2060'; value: bigint } | { case: 'any2060' | 'streamExists2060'; value: object } {
  if (expectedVersion >= 0) return { case: 'expectedRevision2060', value: BigInt(expectedVersion) };
  if (expectedVersion === ExpectedVersion.StreamExists) return { case: 'streamExists2060', value: {} };
  // The 20.6.0 form has no NoStream: the original sends revision -1 as ulong there.
  if (expectedVersion === ExpectedVersion.NoStream) return { case: 'expectedRevision2060', value: (1n << 64n) - 1n };
  return { case: 'any2060', value: {} };
}

/** The original's rule the engine does not apply itself: StreamExists on a soft-deleted stream is StreamDeleted. */
async function appendChecked(db: EventDb, stream: string, expectedVersion: number, events: readonly NewEvent[]): Promise<AppendResult> {
  if (expectedVersion === ExpectedVersion.StreamExists) {
    const state = await db.streamState(stream);
    if (state.kind === 'hard-deleted' || (state.kind === 'exists' && state.softDeleted)) return { kind: 'stream-deleted' };
  }
  return db.append(stream, expectedVersion, events);
}

/**
 * The $all position an append answers, as the original does: that of its last event's record,
 * the position a read of $all reports for that event (so a client that waits until a reader has
 * seen "its" position, or compares it with the last event of $all, finds it). An idempotent retry
 * answers its earlier write's last event. Without one (a forwarded write from an older peer, an
 * empty append), the write's commit position.
 */
async function appendPosition(db: EventDb, stream: string, result: Extract<AppendResult, { kind: 'success' }>): Promise<{ commitPosition: bigint; preparePosition: bigint }> {
  let at = result.lastEventPosition;
  if (at === undefined && result.idempotent && result.lastEventNumber >= 0) {
    const earlier = await db.readEvent(stream, result.lastEventNumber);
    if (earlier.kind === 'success') at = earlier.event.logPosition;
  }
  const position = BigInt(Math.max(0, at ?? result.commitPosition));
  return { commitPosition: position, preparePosition: position };
}

async function deleteStream(
  deps: StreamsServiceDeps, context: HandlerContext,
  options: { streamIdentifier?: StreamIdentifier | undefined; expectedStreamRevision: ExpectedRevisionOption } | undefined, hard: boolean,
): Promise<{ commitPosition: bigint; preparePosition: bigint }> {
  if (options === undefined) throw badInput('options are required');
  deps.guard.checkLeader(context.requestHeader, true);
  const principal = await deps.guard.principal(context.requestHeader);
  const stream = streamNameFromWire(options.streamIdentifier);
  const expectedVersion = expectedVersionFromWire(options.expectedStreamRevision);
  await deps.guard.authorize(principal, stream, 'd');
  if (!hard) {
    const state = await deps.db.streamState(stream);
    if (state.kind === 'no-stream' && (await deps.db.getStreamMetadata(stream)).metastreamVersion < 0 && expectedVersion !== ExpectedVersion.Any && expectedVersion !== ExpectedVersion.NoStream)
      throw wrongExpectedVersion(stream, expectedVersion, -1);
  }
  const result = await deps.db.deleteStream(stream, expectedVersion, hard);
  if (result.kind === 'stream-deleted') throw streamDeleted(stream);
  if (result.kind === 'wrong-expected-version') throw wrongExpectedVersion(stream, expectedVersion, result.currentVersion);
  return { commitPosition: BigInt(result.commitPosition), preparePosition: BigInt(result.commitPosition) };
}

/** Turns engine events into ReadResp events, resolving links when asked. */
class EventWriter {
  /** The shared read decision (api/security/read-authorization.ts): one ACL lookup per stream per call. */
  private readonly decisions: ReadDecisions;

  constructor(
    private readonly db: EventDb,
    private readonly resolveLinks: boolean,
    private readonly structuredUuid: boolean,
    private readonly canRead: (stream: string) => Promise<boolean>,
  ) {
    this.decisions = readDecisions({ canAccessStream: (_principal, stream) => this.canRead(stream) }, undefined);
  }

  /** Whether this caller may see an event read through `$all`: only events of streams it may read (as the HTTP `$all` feed). */
  visible(event: RecordedEvent): Promise<boolean> {
    return this.decisions.mayRead(event.stream);
  }

  async toResponse(event: RecordedEvent): Promise<ReadResp> {
    let recorded = event;
    let link: RecordedEvent | undefined;
    let unresolved = false;
    if (this.resolveLinks && event.eventType === LINK_EVENT_TYPE) {
      // The shared read decision drops a target this caller may not read; the check below stays
      // as a second guard.
      const item = await resolveLink(this.db, event, this.decisions);
      if ('kind' in item) {
        link = item.link;
        if (item.target === undefined || !(await this.canRead(item.target.stream))) unresolved = true;
        else recorded = item.target;
      }
    }
    const value = {
      ...(unresolved ? {} : { event: recordedEventToWire(recorded, this.structuredUuid) }),
      ...(link === undefined ? {} : { link: recordedEventToWire(link, this.structuredUuid) }),
      position: { case: 'commitPosition' as const, value: BigInt(event.commitPosition) },
    };
    return create(ReadRespSchema, { content: { case: 'event', value } });
  }
}

function maxCount(options: ReadReq_Options): number {
  if (options.countOption.case !== 'count') return Number.MAX_SAFE_INTEGER;
  return options.countOption.value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(options.countOption.value);
}

async function* readStream(db: EventDb, writer: EventWriter, stream: string, options: ReadReq_Options): AsyncGenerator<ReadResp> {
  if (options.streamOption.case !== 'stream') return;
  const backwards = options.readDirection === Direction.Backwards;
  const revision = options.streamOption.value.revisionOption;
  let from: number;
  if (revision.case === 'revision') from = safeNumber(revision.value, 'revision');
  else if (revision.case === 'end') from = backwards ? -1 : Number.MAX_SAFE_INTEGER;
  else from = backwards ? -1 : 0;
  if (backwards && revision.case === 'start') return;
  let remaining = maxCount(options);
  const compatibility = options.controlOption?.compatibility ?? 0;
  while (remaining > 0) {
    const result = await db.readStream(stream, from, Math.min(remaining, READ_PAGE_EVENT_COUNT_MAX), backwards ? 'backward' : 'forward');
    if (result.kind === 'stream-not-found') {
      yield create(ReadRespSchema, { content: { case: 'streamNotFound', value: { streamIdentifier: streamIdentifierToWire(stream) } } });
      return;
    }
    if (result.kind === 'stream-deleted') throw streamDeleted(stream);
    for (const event of result.events) {
      yield await writer.toResponse(event);
      remaining -= 1;
      if (remaining === 0) break;
    }
    if (result.isEndOfStream || result.events.length === 0 || result.nextEventNumber < 0) {
      if (compatibility >= 1) yield create(ReadRespSchema, { content: { case: 'lastStreamPosition', value: BigInt(Math.max(result.lastEventNumber, 0)) } });
      return;
    }
    from = result.nextEventNumber;
  }
}

interface AllFilter {
  matches(event: RecordedEvent): boolean;
  /** Events considered between two checkpoints (subscriptions only). */
  readonly checkpointIntervalEventCount: number;
}

function allFilter(options: ReadReq_Options): AllFilter | undefined {
  if (options.filterOption.case !== 'filter') return undefined;
  const filter = options.filterOption.value;
  const window = filter.window.case === 'max' && filter.window.value > 0 ? filter.window.value : FILTER_WINDOW_DEFAULT;
  const checkpointIntervalEventCount = window * Math.max(filter.checkpointIntervalMultiplier, 1);
  if (filter.filter.case === 'streamIdentifier') {
    const test = compileExpression(filter.filter.value);
    return { matches: (event) => test(event.stream), checkpointIntervalEventCount };
  }
  if (filter.filter.case === 'eventType') {
    const test = compileExpression(filter.filter.value);
    return { matches: (event) => test(event.eventType), checkpointIntervalEventCount };
  }
  throw badInput('a filter needs a stream_identifier or event_type expression');
}

function isAfter(event: RecordedEvent, position: AllPosition): boolean {
  return event.commitPosition > position.commitPosition
    || (event.commitPosition === position.commitPosition && event.logPosition > position.preparePosition);
}

function isBefore(event: RecordedEvent, position: AllPosition): boolean {
  return event.commitPosition < position.commitPosition
    || (event.commitPosition === position.commitPosition && event.logPosition < position.preparePosition);
}

async function* readAll(db: EventDb, writer: EventWriter, options: ReadReq_Options): AsyncGenerator<ReadResp> {
  if (options.streamOption.case !== 'all') return;
  const backwards = options.readDirection === Direction.Backwards;
  const start = options.streamOption.value.allOption;
  const filter = allFilter(options);
  let from: AllPosition | undefined;
  if (start.case === 'position') from = { commitPosition: safeNumber(start.value.commitPosition, 'commit position'), preparePosition: safeNumber(start.value.preparePosition, 'prepare position') };
  else if (start.case === 'end') {
    if (!backwards) return;
    from = undefined;
  } else {
    if (backwards) return;
    from = { commitPosition: 0, preparePosition: 0 };
  }
  const bound = from;
  let remaining = maxCount(options);
  for (;;) {
    const page = await db.readAll(from, READ_PAGE_EVENT_COUNT_MAX, backwards ? 'backward' : 'forward');
    for (const event of page.events) {
      // Forwards from a position includes it; backwards from a position excludes it, as the original.
      if (backwards && bound !== undefined && !isBefore(event, bound)) continue;
      if (filter !== undefined && !filter.matches(event)) continue;
      if (!(await writer.visible(event))) continue;
      yield await writer.toResponse(event);
      remaining -= 1;
      if (remaining === 0) return;
    }
    if (page.isEnd || page.events.length === 0) return;
    from = page.nextPosition;
  }
}

function confirmation(): ReadResp {
  return create(ReadRespSchema, { content: { case: 'confirmation', value: { subscriptionId: randomUUID() } } });
}

function now(): Timestamp {
  return timestampFromDate(new Date());
}

async function* subscribeStream(db: EventDb, writer: EventWriter, stream: string, options: ReadReq_Options, signal: AbortSignal): AsyncGenerator<ReadResp> {
  if (options.streamOption.case !== 'stream') return;
  const revision = options.streamOption.value.revisionOption;
  const commits = new CommitSignal(db, (write) => write.stream === stream);
  try {
    yield confirmation();
    let next: number;
    let lastSent: number | undefined;
    if (revision.case === 'revision') {
      next = safeNumber(revision.value, 'revision') + 1;
      lastSent = next - 1;
    } else if (revision.case === 'end') {
      const state = await db.streamState(stream);
      next = state.kind === 'exists' ? state.lastEventNumber + 1 : 0;
      if (state.kind === 'exists') lastSent = state.lastEventNumber;
    } else {
      next = 0;
    }
    let caughtUp = false;
    const compatibility = options.controlOption?.compatibility ?? 0;
    while (!signal.aborted) {
      const result = await db.readStream(stream, next, READ_PAGE_EVENT_COUNT_MAX, 'forward');
      if (result.kind === 'stream-deleted') throw streamDeleted(stream);
      const events = result.kind === 'success' ? result.events : [];
      if (caughtUp && result.kind === 'success' && !result.isEndOfStream && events.length >= READ_PAGE_EVENT_COUNT_MAX) {
        // a page or more behind the stream's end: caught up no longer (said again once it is)
        caughtUp = false;
        if (compatibility >= FELL_BEHIND_COMPATIBILITY) {
          yield create(ReadRespSchema, { content: { case: 'fellBehind', value: { timestamp: now(), ...(lastSent === undefined ? {} : { streamRevision: BigInt(lastSent) }) } } });
        }
      }
      for (const event of events) {
        if (event.eventNumber < next) continue;
        yield await writer.toResponse(event);
        lastSent = event.eventNumber;
        next = event.eventNumber + 1;
      }
      if (result.kind === 'success' && !result.isEndOfStream && events.length > 0) {
        next = Math.max(next, result.nextEventNumber);
        continue;
      }
      if (!caughtUp) {
        caughtUp = true;
        yield create(ReadRespSchema, {
          content: { case: 'caughtUp', value: { timestamp: now(), ...(lastSent === undefined ? {} : { streamRevision: BigInt(lastSent) }) } },
        });
      }
      await commits.wait(signal);
    }
  } finally {
    commits.close();
  }
}

async function* subscribeAll(db: EventDb, writer: EventWriter, options: ReadReq_Options, signal: AbortSignal): AsyncGenerator<ReadResp> {
  if (options.streamOption.case !== 'all') return;
  const start = options.streamOption.value.allOption;
  const filter = allFilter(options);
  const commits = new CommitSignal(db, () => true);
  try {
    yield confirmation();
    // `after`: events at or before it were delivered (or skipped); undefined = from the start.
    let after: AllPosition | undefined;
    if (start.case === 'position') after = { commitPosition: safeNumber(start.value.commitPosition, 'commit position'), preparePosition: safeNumber(start.value.preparePosition, 'prepare position') };
    else if (start.case === 'end') {
      // After the last event there is now: the next one is written at the writer's checkpoint,
      // so that checkpoint itself (as `after`) would skip it.
      const last = (await db.readAll(undefined, 1, 'backward')).events[0];
      // an empty log: from its start, which holds nothing to skip
      if (last !== undefined) after = { commitPosition: last.commitPosition, preparePosition: last.logPosition };
    }
    let caughtUp = false;
    const compatibility = options.controlOption?.compatibility ?? 0;
    let consideredSinceCheckpoint = 0;
    let lastConsidered: AllPosition | undefined;
    while (!signal.aborted) {
      const page = await db.readAll(after ?? { commitPosition: 0, preparePosition: 0 }, READ_PAGE_EVENT_COUNT_MAX, 'forward');
      if (caughtUp && !page.isEnd && page.events.length >= READ_PAGE_EVENT_COUNT_MAX) {
        // a page or more behind the end of $all: caught up no longer (said again once it is)
        caughtUp = false;
        if (compatibility >= FELL_BEHIND_COMPATIBILITY) {
          yield create(ReadRespSchema, { content: { case: 'fellBehind', value: { timestamp: now(), ...(after === undefined ? {} : { position: { commitPosition: BigInt(after.commitPosition), preparePosition: BigInt(after.preparePosition) } }) } } });
        }
      }
      let progressed = false;
      for (const event of page.events) {
        if (after !== undefined && !isAfter(event, after)) continue;
        progressed = true;
        after = { commitPosition: event.commitPosition, preparePosition: event.logPosition };
        lastConsidered = after;
        if ((filter === undefined || filter.matches(event)) && (await writer.visible(event))) yield await writer.toResponse(event);
        if (filter !== undefined) {
          consideredSinceCheckpoint += 1;
          if (consideredSinceCheckpoint >= filter.checkpointIntervalEventCount) {
            consideredSinceCheckpoint = 0;
            yield checkpoint(after);
          }
        }
      }
      if (progressed && !page.isEnd) continue;
      if (filter !== undefined && consideredSinceCheckpoint > 0 && lastConsidered !== undefined) {
        consideredSinceCheckpoint = 0;
        yield checkpoint(lastConsidered);
      }
      if (!caughtUp) {
        caughtUp = true;
        yield create(ReadRespSchema, {
          content: { case: 'caughtUp', value: { timestamp: now(), ...(after === undefined ? {} : { position: { commitPosition: BigInt(after.commitPosition), preparePosition: BigInt(after.preparePosition) } }) } },
        });
      }
      await commits.wait(signal);
    }
  } finally {
    commits.close();
  }
}

function checkpoint(position: AllPosition): ReadResp {
  return create(ReadRespSchema, {
    content: { case: 'checkpoint', value: { commitPosition: BigInt(position.commitPosition), preparePosition: BigInt(position.preparePosition), timestamp: now() } },
  });
}

interface PendingBatch {
  readonly correlationId: BatchAppendReq['correlationId'];
  readonly stream: string;
  readonly expectedVersion: number;
  readonly expectedOption: BatchAppendReq_Options['expectedStreamPosition'];
  readonly deadline: Date | undefined;
  readonly events: NewEvent[];
  sizeBytes: number;
  failure?: Status;
}

function rpcStatus(code: RpcCode, message: string, detail: Parameters<typeof anyPack>[0], value: Parameters<typeof anyPack>[1]): Status {
  return create(StatusSchema, { code, message, details: anyPack(detail, value) });
}

async function* batchAppend(
  deps: StreamsServiceDeps, principal: Principal | undefined, requests: AsyncIterable<BatchAppendReq>, context: HandlerContext,
): AsyncGenerator<BatchAppendResp> {
  const { db, guard } = deps;
  const pending = new Map<string, PendingBatch>();
  const done: BatchAppendResp[] = [];
  let wake: (() => void) | undefined;
  let inFlight = 0;
  let inputEnded = false;
  let inputError: unknown;
  let slot: (() => void) | undefined;
  const publish = (response: BatchAppendResp | ConnectError): void => {
    if (response instanceof ConnectError) inputError ??= response;
    else done.push(response);
    inFlight -= 1;
    slot?.();
    wake?.();
  };

  const finish = async (batch: PendingBatch): Promise<BatchAppendResp | ConnectError> => {
    const base = {
      correlationId: batch.correlationId,
      streamIdentifier: streamIdentifierToWire(batch.stream),
      expectedStreamPosition: batch.expectedOption,
    };
    const fail = (status: Status): BatchAppendResp => create(BatchAppendRespSchema, { ...base, result: { case: 'error', value: status } });
    if (batch.failure !== undefined) return fail(batch.failure);
    try {
      // requires-leader and leadership lost while the stream is open: the call ends with NotLeader (no Status form for it).
      try {
        guard.checkLeader(context.requestHeader, true);
      } catch (err) {
        if (err instanceof ConnectError) return err;
        throw err;
      }
      if (!(await guard.canAccess(principal, batch.stream, 'w'))) return fail(rpcStatus(RpcCode.PERMISSION_DENIED, 'Access Denied', AccessDeniedSchema, create(AccessDeniedSchema)));
      if (batch.deadline !== undefined && batch.deadline.getTime() < Date.now())
        return fail(rpcStatus(RpcCode.DEADLINE_EXCEEDED, 'Timeout', TimeoutSchema, create(TimeoutSchema)));
      const result = await appendChecked(db, batch.stream, batch.expectedVersion, batch.events);
      if (result.kind === 'stream-deleted')
        return fail(rpcStatus(RpcCode.FAILED_PRECONDITION, `Event stream '${batch.stream}' is deleted.`, StreamDeletedSchema, create(StreamDeletedSchema, { streamIdentifier: streamIdentifierToWire(batch.stream) })));
      if (result.kind === 'wrong-expected-version') {
        const detail = create(WrongExpectedVersionSchema, {
          currentStreamRevisionOption: result.currentVersion < 0 ? { case: 'currentNoStream', value: {} } : { case: 'currentStreamRevision', value: BigInt(result.currentVersion) },
          expectedStreamPositionOption: batch.expectedVersion >= 0 ? { case: 'expectedStreamPosition', value: BigInt(batch.expectedVersion) }
            : batch.expectedVersion === ExpectedVersion.NoStream ? { case: 'expectedNoStream', value: {} }
              : batch.expectedVersion === ExpectedVersion.StreamExists ? { case: 'expectedStreamExists', value: {} } : { case: 'expectedAny', value: {} },
        });
        return fail(rpcStatus(RpcCode.FAILED_PRECONDITION, 'Wrong expected version', WrongExpectedVersionSchema, detail));
      }
      return create(BatchAppendRespSchema, {
        ...base,
        result: {
          case: 'success',
          value: {
            currentRevisionOption: result.lastEventNumber < 0 ? { case: 'noStream', value: {} } : { case: 'currentRevision', value: BigInt(result.lastEventNumber) },
            positionOption: { case: 'position', value: await appendPosition(deps.db, batch.stream, result) },
          },
        },
      });
    } catch (err) {
      const mapped = toConnectError(err);
      if (mapped !== undefined) return fail(create(StatusSchema, { code: mapped.code as number as RpcCode, message: mapped.rawMessage, details: anyPack(UnknownSchema, create(UnknownSchema)) }));
      deps.log.error({ err, stream: batch.stream }, 'batch append failed');
      return fail(rpcStatus(RpcCode.UNKNOWN, 'the append failed on the server', UnknownSchema, create(UnknownSchema)));
    }
  };

  const consume = async (): Promise<void> => {
    try {
      for await (const request of requests) {
        const key = request.correlationId === undefined ? '' : uuidFromWire(request.correlationId);
        let batch = pending.get(key);
        if (batch === undefined) {
          const options = request.options;
          if (options === undefined) throw badInput('the first BatchAppendReq of a correlation id must carry options');
          const deadlineOption = options.deadlineOption;
          const deadline = deadlineOption.case === 'deadline21100' ? timestampDate(deadlineOption.value)
            : deadlineOption.case === 'deadline' ? new Date(Date.now() + Number(deadlineOption.value.seconds) * 1000 + Math.floor(deadlineOption.value.nanos / 1e6)) : undefined;
          batch = {
            correlationId: request.correlationId,
            stream: streamNameFromWire(options.streamIdentifier),
            expectedVersion: expectedVersionFromWire(options.expectedStreamPosition as ExpectedRevisionOption),
            expectedOption: options.expectedStreamPosition,
            deadline,
            events: [],
            sizeBytes: 0,
          };
          pending.set(key, batch);
        }
        for (const message of request.proposedMessages) {
          if (batch.failure !== undefined) break;
          try {
            const event = newEventFromWire(message);
            batch.sizeBytes += event.data.length + event.metadata.length;
            if (batch.sizeBytes > deps.maxAppendSizeBytes) {
              batch.failure = rpcStatus(RpcCode.INVALID_ARGUMENT, `Maximum Append Size of ${deps.maxAppendSizeBytes} Exceeded.`, MaximumAppendSizeExceededSchema, create(MaximumAppendSizeExceededSchema, { maxAppendSize: deps.maxAppendSizeBytes }));
              batch.events.length = 0;
            } else batch.events.push(event);
          } catch (err) {
            const mapped = toConnectError(err);
            if (mapped === undefined) throw err;
            batch.failure = rpcStatus(RpcCode.INVALID_ARGUMENT, mapped.rawMessage, UnknownSchema, create(UnknownSchema));
          }
        }
        if (!request.isFinal) continue;
        pending.delete(key);
        while (inFlight >= BATCH_APPEND_IN_FLIGHT_MAX) await new Promise<void>((resolve) => { slot = resolve; });
        inFlight += 1;
        const finished = batch;
        void finish(finished).then(publish);
      }
    } catch (err) {
      inputError = err;
    } finally {
      inputEnded = true;
      wake?.();
    }
  };
  void consume();
  for (;;) {
    while (done.length > 0) yield done.shift() as BatchAppendResp;
    if (inputError !== undefined) throw toConnectError(inputError) ?? inputError;
    if (inputEnded && inFlight === 0) return;
    await new Promise<void>((resolve) => { wake = resolve; });
    wake = undefined;
  }
}

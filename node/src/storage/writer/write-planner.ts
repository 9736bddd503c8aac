/**
 * What a client write becomes in the log: validation of the request (bad input is refused with
 * a 400-class error before anything is queued) and the planned record groups of an append, a
 * delete or a metadata write, decided against the batch's view of the streams. Pure apart from
 * the fresh UUIDs of the metadata events it plans.
 */
import { EventDbError } from '../../errors.js';
import { decideAppend } from '../append-decision.js';
import { TOMBSTONE_EVENT_NUMBER, type AppendResult, type NewEvent } from '../event-db-types.js';
import { PrepareFlags } from '../format/record.js';
import { isUuid, utf8LengthBytes } from '../format/binary.js';
import {
  APPEND_EVENT_COUNT_MAX, CHUNK_HEADER_SIZE_BYTES, EVENT_TYPE_BYTES_MAX, STREAM_NAME_BYTES_MAX, WRITE_BATCH_BYTES_MAX,
} from '../limits.js';
import {
  METADATA_EVENT_TYPE, SOFT_DELETED_TRUNCATE_BEFORE, TOMBSTONE_EVENT_TYPE, isMetastream, metastreamOf, originalStreamOf,
} from '../stream-metadata.js';
import type { BatchContext } from './batch-context.js';
import type { PlannedRecordGroup } from './write-batch.js';

export type WritePlan = PlannedRecordGroup[] | AppendResult;

export interface WriteLimits {
  readonly maxEventSizeBytes: number;
  readonly chunkSizeBytes: number;
}

function badRequest(message: string): EventDbError {
  return new EventDbError('EDB_BAD_REQUEST', message, { httpStatus: 400 });
}

/** Throws a 400-class EventDbError for a request that can never be written. */
export function validateWrite(limits: WriteLimits, stream: string, expectedVersion: number, events: readonly NewEvent[]): void {
  if (stream.length === 0) throw badRequest('stream name must not be empty');
  if (Buffer.byteLength(stream) > STREAM_NAME_BYTES_MAX) throw badRequest(`stream name is longer than ${STREAM_NAME_BYTES_MAX} bytes`);
  if (stream === '$all') throw badRequest('cannot write to $all');
  if (!Number.isSafeInteger(expectedVersion) || expectedVersion < -4 || expectedVersion === -3) {
    throw badRequest(`invalid expected version ${expectedVersion}`);
  }
  if (events.length > APPEND_EVENT_COUNT_MAX) throw badRequest(`an append may carry at most ${APPEND_EVENT_COUNT_MAX} events`);
  let total = 0;
  for (const e of events) {
    if (!isUuid(e.eventId)) throw badRequest(`event id '${e.eventId}' is not a UUID`);
    if (e.eventType.length === 0) throw badRequest('event type must not be empty');
    if (utf8LengthBytes(e.eventType) > EVENT_TYPE_BYTES_MAX) throw badRequest(`event type is longer than ${EVENT_TYPE_BYTES_MAX} bytes`);
    const size = e.data.length + e.metadata.length;
    if (size > limits.maxEventSizeBytes) {
      throw new EventDbError('EDB_EVENT_TOO_LARGE', `event ${e.eventId} is ${size} bytes; the limit is ${limits.maxEventSizeBytes}`, { httpStatus: 400 });
    }
    total += size + 256;
  }
  if (total > Math.min(WRITE_BATCH_BYTES_MAX, limits.chunkSizeBytes - CHUNK_HEADER_SIZE_BYTES - 256)) {
    throw new EventDbError('EDB_APPEND_TOO_LARGE', `append of ${total} bytes does not fit one write`, { httpStatus: 400 });
  }
}

export function planAppend(ctx: BatchContext, stream: string, expectedVersion: number, events: readonly NewEvent[]): WritePlan {
  if (isMetastream(stream) && ctx.lastEventNumber(originalStreamOf(stream)) === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
  const state = ctx.writeState(stream);
  const decision = decideAppend(state, expectedVersion, events.map((e) => e.eventId), {
    idAt: (n) => ctx.idAt(stream, n),
    recentNumberOf: (id) => ctx.recentNumberOf(stream, id),
  });
  switch (decision.kind) {
    case 'stream-deleted': return { kind: 'stream-deleted' };
    case 'wrong-expected-version': return { kind: 'wrong-expected-version', currentVersion: state.lastEventNumber };
    case 'idempotent':
      return { kind: 'success', firstEventNumber: decision.firstEventNumber, lastEventNumber: decision.lastEventNumber, commitPosition: -1, idempotent: true };
    case 'write': break;
  }
  const groups: PlannedRecordGroup[] = [];
  if (decision.recreate) groups.push(planRecreate(ctx, stream, decision.firstEventNumber));
  if (events.length === 0) {
    return { kind: 'success', firstEventNumber: decision.firstEventNumber, lastEventNumber: decision.firstEventNumber - 1, commitPosition: -1, idempotent: false };
  }
  const planned = events.map((event, i) => ({
    event, eventNumber: decision.firstEventNumber + i, flags: PrepareFlags.Data | PrepareFlags.IsCommitted | (event.isJson ? PrepareFlags.IsJson : 0),
  }));
  groups.push({ kind: 'events', stream, events: planned });
  return groups;
}

/** A write to a soft-deleted stream sets `$tb` to its first new event (EventStoreDB's undelete). */
function planRecreate(ctx: BatchContext, stream: string, firstEventNumber: number): PlannedRecordGroup {
  const meta = ctx.streamMetadata(stream);
  const raw = { ...meta.metadata.raw, $tb: firstEventNumber };
  return planMetadataWrite(ctx, stream, meta.version, raw);
}

function planMetadataWrite(ctx: BatchContext, stream: string, metaVersion: number, raw: Record<string, unknown>): PlannedRecordGroup {
  const metastream = metastreamOf(stream);
  const event: NewEvent = { eventId: crypto.randomUUID(), eventType: METADATA_EVENT_TYPE, data: Buffer.from(JSON.stringify(raw)), metadata: Buffer.alloc(0), isJson: true };
  const planned = [{ event, eventNumber: Math.max(metaVersion, ctx.lastEventNumber(metastream)) + 1, flags: PrepareFlags.Data | PrepareFlags.IsCommitted | PrepareFlags.IsJson }];
  return { kind: 'events', stream: metastream, events: planned };
}

export function planDelete(ctx: BatchContext, stream: string, expectedVersion: number, hard: boolean): WritePlan {
  const state = ctx.writeState(stream);
  if (state.lastEventNumber === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
  const decision = decideAppend(state, expectedVersion, [], { idAt: () => undefined, recentNumberOf: () => undefined });
  if (decision.kind === 'wrong-expected-version') return { kind: 'wrong-expected-version', currentVersion: state.lastEventNumber };
  if (decision.kind !== 'write') return { kind: 'stream-deleted' };
  if (!hard && state.lastEventNumber === -1 && ctx.streamMetadata(stream).version === -1) {
    // Nothing to delete: EventStoreDB answers wrong expected version (current -1).
    return { kind: 'wrong-expected-version', currentVersion: -1 };
  }
  if (!hard) {
    const meta = ctx.streamMetadata(stream);
    const raw = { ...meta.metadata.raw, $tb: SOFT_DELETED_TRUNCATE_BEFORE };
    return [planMetadataWrite(ctx, stream, meta.version, raw)];
  }
  const event: NewEvent = { eventId: crypto.randomUUID(), eventType: TOMBSTONE_EVENT_TYPE, data: Buffer.alloc(0), metadata: Buffer.alloc(0), isJson: false };
  const planned = [{ event, eventNumber: TOMBSTONE_EVENT_NUMBER, flags: PrepareFlags.StreamDelete | PrepareFlags.IsCommitted }];
  return [{ kind: 'events', stream, events: planned }];
}


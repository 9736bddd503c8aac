/**
 * The expected-version and idempotency rules of an append, as a pure function. The writer
 * calls it with the stream's state as of all writes ordered before this one.
 *
 * Rules (after EventStoreDB):
 * - a hard-deleted stream refuses every write;
 * - Any (-2) writes at the end, unless the first event id is already the next event of this
 *   stream's recent history, in which case the write is an idempotent retry;
 * - NoStream (-1) writes at 0 when the stream does not exist, and also recreates a soft-deleted
 *   stream (continuing its numbering);
 * - StreamExists (-4) writes at the end of a stream that exists; a soft-deleted one answers
 *   stream-deleted;
 * - N writes at N+1 when the last event is N; when events N+1.. already carry the same ids the
 *   write is an idempotent retry; otherwise the expected version is wrong.
 */
import { ExpectedVersion, TOMBSTONE_EVENT_NUMBER } from './event-db-types.js';

export interface StreamWriteState {
  /** -1 when the stream has no events; TOMBSTONE_EVENT_NUMBER when hard-deleted. */
  readonly lastEventNumber: number;
  readonly softDeleted: boolean;
}

export type AppendDecision =
  | { readonly kind: 'write'; readonly firstEventNumber: number; readonly recreate: boolean }
  | { readonly kind: 'idempotent'; readonly firstEventNumber: number; readonly lastEventNumber: number }
  | { readonly kind: 'wrong-expected-version'; readonly currentVersion: number }
  | { readonly kind: 'stream-deleted' };

export interface IdLookup {
  /** Id of this stream's event at `eventNumber`, if it exists. */
  idAt(eventNumber: number): string | undefined;
  /** Where a recently written event id landed in this stream, if known. */
  recentNumberOf(eventId: string): number | undefined;
}

export function decideAppend(state: StreamWriteState, expectedVersion: number, eventIds: readonly string[], ids: IdLookup): AppendDecision {
  const last = state.lastEventNumber;
  if (last === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
  const atEnd = { kind: 'write', firstEventNumber: last + 1, recreate: state.softDeleted } as const;
  const wrong = { kind: 'wrong-expected-version', currentVersion: last } as const;
  switch (expectedVersion) {
    case ExpectedVersion.Any:
      return idempotentByRecentId(eventIds, ids, wrong) ?? atEnd;
    case ExpectedVersion.NoStream:
      if (last === -1 || state.softDeleted) return atEnd;
      return idempotentAt(0, eventIds, ids) ?? wrong;
    case ExpectedVersion.StreamExists:
      // EventStoreDB answers "stream deleted" to StreamExists on a soft-deleted stream.
      if (state.softDeleted) return { kind: 'stream-deleted' };
      if (last >= 0) return idempotentByRecentId(eventIds, ids, wrong) ?? atEnd;
      return wrong;
    default:
      if (expectedVersion === last) return atEnd;
      if (expectedVersion < last) return idempotentAt(expectedVersion + 1, eventIds, ids) ?? wrong;
      return wrong;
  }
}

function idempotentAt(first: number, eventIds: readonly string[], ids: IdLookup): AppendDecision | undefined {
  if (eventIds.length === 0) return undefined;
  for (let i = 0; i < eventIds.length; i++) {
    if (ids.idAt(first + i) !== eventIds[i]) return undefined;
  }
  return { kind: 'idempotent', firstEventNumber: first, lastEventNumber: first + eventIds.length - 1 };
}

/** A retry whose first id is known but whose other ids differ is refused, not duplicated. */
function idempotentByRecentId(eventIds: readonly string[], ids: IdLookup, wrong: AppendDecision): AppendDecision | undefined {
  const firstId = eventIds[0];
  if (firstId === undefined) return undefined;
  const first = ids.recentNumberOf(firstId);
  if (first === undefined) return undefined;
  return idempotentAt(first, eventIds, ids) ?? wrong;
}

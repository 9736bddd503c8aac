/**
 * Reads of the committed log: streams through the index (metadata applied on every read:
 * `$tb`, `$maxCount`, `$maxAge`, soft and hard deletes) and `$all` by walking the log. Never past
 * the committed position.
 */
import { PrepareFlags, RecordType, type PrepareRecord } from '../format/record.js';
import type { LogReader } from '../reader/log-reader.js';
import type { StreamHasher, StreamIndex } from '../index/stream-index-port.js';
import {
  TOMBSTONE_EVENT_NUMBER,
  type AllPosition, type ReadAllResult, type ReadDirection, type ReadEventResult, type ReadStreamResult,
  type RecordedEvent, type StreamMetadata, type StreamState,
} from '../event-db-types.js';
import { EMPTY_METADATA, firstVisibleEventNumber, isExpired, isMetastream, isSoftDeleted } from '../stream-metadata.js';
import type { CommittedState } from './committed-state.js';

export interface StreamReaderDeps {
  readonly state: CommittedState;
  readonly index: StreamIndex;
  readonly hasher: StreamHasher;
  readonly reader: LogReader;
  readonly nowMs: () => number;
  readonly committedPosition: () => number;
}

export function toRecordedEvent(r: PrepareRecord): RecordedEvent {
  return {
    stream: r.stream, eventNumber: r.eventNumber, eventId: r.eventId, eventType: r.eventType,
    data: r.data, metadata: r.metadata, isJson: (r.flags & PrepareFlags.IsJson) !== 0,
    createdMs: r.timestampMs, logPosition: r.logPosition, commitPosition: r.logPosition,
  };
}

export class StreamReader {
  constructor(private readonly deps: StreamReaderDeps) {}

  streamState(stream: string): StreamState {
    const { state } = this.deps;
    const last = state.committedLastEventNumber(stream);
    if (last === TOMBSTONE_EVENT_NUMBER) return { kind: 'hard-deleted' };
    if (last === -1) return { kind: 'no-stream' };
    const softDeleted = !isMetastream(stream) && isSoftDeleted(state.committedMetadata(stream).metadata);
    return { kind: 'exists', lastEventNumber: last, softDeleted };
  }

  readStream(stream: string, fromEventNumber: number, maxCount: number, direction: ReadDirection): ReadStreamResult {
    const view = this.visibleRange(stream);
    if (view.kind !== 'ok') return { kind: view.kind };
    const { last, first, meta } = view;
    const count = Math.max(0, Math.floor(maxCount));
    if (direction === 'forward') {
      const from = Math.max(fromEventNumber, first);
      const to = Math.min(last, from + count - 1);
      const events = this.collectEvents(stream, from, to, meta).reverse();
      const next = Math.min(from + count, last + 1);
      return { kind: 'success', events, lastEventNumber: last, nextEventNumber: next, isEndOfStream: from + count > last };
    }
    const from = fromEventNumber < 0 ? last : Math.min(fromEventNumber, last);
    const to = Math.max(first, from - count + 1);
    const events = from < first ? [] : this.collectEvents(stream, to, from, meta);
    const next = from - count;
    return { kind: 'success', events, lastEventNumber: last, nextEventNumber: next < first ? -1 : next, isEndOfStream: next < first };
  }

  readEvent(stream: string, eventNumber: number): ReadEventResult {
    const view = this.visibleRange(stream);
    if (view.kind !== 'ok') return { kind: view.kind };
    const n = eventNumber === -1 ? view.last : eventNumber;
    if (n < view.first || n > view.last) return { kind: 'event-not-found' };
    const [event] = this.collectEvents(stream, n, n, view.meta);
    return event ? { kind: 'success', event } : { kind: 'event-not-found' };
  }

  private visibleRange(stream: string):
    | { kind: 'ok'; last: number; first: number; meta: StreamMetadata }
    | { kind: 'stream-not-found' } | { kind: 'stream-deleted' } {
    const { state } = this.deps;
    const last = state.committedLastEventNumber(stream);
    if (last === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
    if (last === -1) return { kind: 'stream-not-found' };
    const meta = isMetastream(stream) ? EMPTY_METADATA : state.committedMetadata(stream).metadata;
    if (isSoftDeleted(meta)) return { kind: 'stream-not-found' };
    return { kind: 'ok', last, first: firstVisibleEventNumber(meta, last, isMetastream(stream)), meta };
  }

  /** Events from..to (inclusive), descending, with hash collisions and expired events filtered out. */
  private collectEvents(stream: string, from: number, to: number, meta: StreamMetadata): RecordedEvent[] {
    if (to < from) return [];
    const { state } = this.deps;
    const nowMs = this.deps.nowMs();
    const out: RecordedEvent[] = [];
    let previous = Number.NaN;
    for (const entry of this.deps.index.getRange(this.deps.hasher(stream), from, to)) {
      if (entry.eventNumber === previous) continue;
      const record = state.readPrepareAt(entry.logPosition);
      if (record === undefined) continue;
      if (record.stream !== stream) { state.cacheStats.hashCollisions += 1; continue; }
      previous = entry.eventNumber;
      if (isExpired(meta, record.timestampMs, nowMs)) continue;
      out.push(toRecordedEvent(record));
    }
    return out;
  }

  readAll(from: AllPosition | undefined, maxCount: number, direction: ReadDirection): ReadAllResult {
    const { reader } = this.deps;
    const count = Math.max(0, Math.floor(maxCount));
    const events: RecordedEvent[] = [];
    if (direction === 'forward') {
      let pos = from ? from.preparePosition : 0;
      while (events.length < count) {
        const r = reader.readForward(pos);
        if (!r) break;
        pos = r.nextPosition;
        if (r.record.type === RecordType.Prepare) events.push(toRecordedEvent(r.record));
      }
      const isEnd = pos >= this.deps.committedPosition() || reader.readForward(pos) === undefined;
      return { events, nextPosition: { commitPosition: pos, preparePosition: pos }, isEnd };
    }
    let pos = from && from.preparePosition >= 0 ? from.preparePosition : this.deps.committedPosition();
    while (events.length < count) {
      const r = reader.readBackward(pos);
      if (!r) { pos = 0; break; }
      pos = r.position;
      if (r.record.type === RecordType.Prepare) events.push(toRecordedEvent(r.record));
    }
    return { events, nextPosition: { commitPosition: pos, preparePosition: pos }, isEnd: pos <= 0 || reader.readBackward(pos) === undefined };
  }
}

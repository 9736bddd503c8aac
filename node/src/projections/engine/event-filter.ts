/**
 * Which source events a projection handles (EventStoreDB's TransactionFileEventFilter,
 * StreamEventFilter, CategoryEventFilter, MultiStreamEventFilter) and how a foreachStream
 * projection partitions them (ByStreamStatePartitionSelector). Pure.
 */
import { isMetastream, isSystemStream } from '../names.js';
import type { ReaderKind, SourceDefinition } from '../source-definition.js';
import { deletedStreamOf } from '../system/system-handlers.js';
import type { SourceEvent } from './event-reader.js';

export type Decision =
  | { readonly kind: 'skip' }
  | { readonly kind: 'event' }
  /** A stream was deleted: a `$deleted` notification for its partition (foreachStream). */
  | { readonly kind: 'deleted'; readonly stream: string; readonly soft: boolean };

const SKIP: Decision = { kind: 'skip' };
const EVENT: Decision = { kind: 'event' };

function linkMetadata(source: SourceEvent): Record<string, unknown> | undefined {
  const link = source.link;
  if (link === undefined || link.metadata.byteLength === 0) return undefined;
  try {
    const value = JSON.parse(link.metadata.toString('utf8')) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The stream a deletion event (or a `$by_category` link marking one) reports deleted. */
function deletion(source: SourceEvent): { stream: string; soft: boolean } | undefined {
  const meta = linkMetadata(source);
  if (meta !== undefined && meta['$deleted'] !== undefined && typeof meta['$o'] === 'string')
    return { stream: meta['$o'], soft: source.event.stream.startsWith('$$') };
  if (source.link !== undefined && source.event === source.link) return undefined;
  const stream = deletedStreamOf(source.event);
  return stream === undefined ? undefined : { stream, soft: isMetastream(source.event.stream) };
}

function validJson(source: SourceEvent): boolean {
  if (!source.event.isJson || source.event.data.byteLength === 0) return true;
  try {
    JSON.parse(source.event.data.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/** What the projection does with an event it read. */
export function classify(d: SourceDefinition, reader: ReaderKind, source: SourceEvent): Decision {
  const positionStream = source.position.stream;
  const resolved = source.link !== undefined && source.event !== source.link;
  const eventType = source.event.eventType;
  if (reader.kind === 'all') {
    if (!d.options.$includeLinks && eventType === '$>') return SKIP;
    const passesSource =
      !isSystemStream(positionStream) ||
      (isMetastream(positionStream) && !isSystemStream(positionStream.slice(2)));
    if (!passesSource) return SKIP;
  } else if (reader.kind === 'stream' && reader.category !== undefined) {
    // A category projection handles only events its `$ce-` stream links to.
    if (source.link === undefined) return SKIP;
  }
  const deleted = deletion(source);
  if (deleted !== undefined) {
    if (d.options.handlesDeletedNotifications) return { kind: 'deleted', stream: deleted.stream, soft: deleted.soft };
    // Only $all readers pass deletion events on as events (includeDeletedStreamEvents).
    if (reader.kind !== 'all') return SKIP;
  } else if (reader.kind === 'stream' && reader.category !== undefined && !resolved) {
    return SKIP;
  }
  if (!(d.allEvents || d.events.includes(eventType))) return SKIP;
  if (!validJson(source)) return SKIP;
  return EVENT;
}

/** ByStreamStatePartitionSelector: a link's `$o`, else the event's stream (a metastream's original). */
export function streamPartition(source: SourceEvent): string {
  const meta = linkMetadata(source);
  if (meta !== undefined && typeof meta['$o'] === 'string') return meta['$o'];
  const stream = source.event.stream;
  return isMetastream(stream) ? stream.slice(2) : stream;
}

/** Bytes of an event the projection read but did not handle (checkpointUnhandledBytesThreshold). */
export function eventBytes(source: SourceEvent): number {
  return source.position.data.byteLength + source.position.metadata.byteLength;
}

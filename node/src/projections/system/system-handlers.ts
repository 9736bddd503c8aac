/**
 * The five system projections, native (no JavaScript), as EventStoreDB's Standard handlers:
 *
 * | projection | input | output |
 * |---|---|---|
 * | `$streams` | event 0 of every stream | `$>` `0@{stream}` into `$streams` |
 * | `$stream_by_category` | event 0 of every stream | `$@` with data = stream into `$category-{category}` |
 * | `$by_category` | every event (links too) | `$>` into `$ce-{category}`, metadata `$o` (and `$deleted` for a deleted stream) |
 * | `$by_event_type` | every event but links | `$>` into `$et-{type}`; deletions into `$et-$deleted` with `$deleted: -1`; `$Checkpoint` into `$et` at each checkpoint |
 * | `$by_correlation_id` | events whose metadata has the correlation id property | `$>` into `$bc-{id}`, metadata `$eventTimestamp` (and `$link` for links) |
 *
 * The category is the part of the stream name before the first (`first`) or last (`last`)
 * separator; streams starting with `$` have none. Pure functions over the engine's types.
 */
import type { RecordedEvent } from '../../storage/event-db-types.js';
import { nativeDefinition, type SourceDefinition } from '../source-definition.js';
import { EventTypes, isMetastream, SystemProjectionNames } from '../names.js';

/** An event to emit; `extra` holds extra metadata properties as raw JSON text. */
export interface EmittedSpec {
  readonly stream: string;
  readonly eventType: string;
  readonly data: string;
  readonly isJson: boolean;
  readonly extra: Readonly<Record<string, string>> | null;
}

/** What a native handler sees of an event read from $all (links are not resolved there). */
export interface NativeEvent {
  readonly event: RecordedEvent;
}

export interface NativeHandler {
  readonly name: string;
  readonly definition: SourceDefinition;
  process(input: NativeEvent): EmittedSpec | undefined;
  /** Events to write with each checkpoint ($by_event_type's `$et` stream). */
  checkpointEvents?(tagJson: string): EmittedSpec[];
}

/** The largest event number / `$tb` that marks a deleted stream (EventStoreDB's long.MaxValue). */
const DELETED_STREAM_THRESHOLD = Number.MAX_SAFE_INTEGER;

/**
 * StreamDeletedHelper.IsStreamDeletedEvent: a tombstone (`$streamDeleted`) or a `$metadata` event
 * of a metastream whose `$tb` marks the stream deleted. Returns the deleted stream, or undefined.
 */
export function deletedStreamOf(event: RecordedEvent): string | undefined {
  if (isMetastream(event.stream)) {
    if (event.eventType !== EventTypes.StreamMetadata) return undefined;
    try {
      const parsed = JSON.parse(event.data.toString('utf8')) as Record<string, unknown> | null;
      const tb = parsed?.['$tb'];
      return typeof tb === 'number' && tb >= DELETED_STREAM_THRESHOLD ? event.stream.slice(2) : undefined;
    } catch {
      return undefined;
    }
  }
  return event.eventType === EventTypes.StreamDeleted ? event.stream : undefined;
}

export type CategoryExtractor = (stream: string) => string | undefined;

const CONFIGURATION_FORMAT = 'Configuration format is: \r\nfirst|last\r\nseparator';

/** StreamCategoryExtractor.GetExtractor: `first\n-`, `last\n-`, or a single separator (= last). */
export function categoryExtractor(source: string): CategoryExtractor {
  const trimmed = source.trim();
  const prefix = 'Cannot initialize categorization projection handler.  ';
  if (source === '')
    throw new Error(`${prefix}One symbol separator or configuration must be supplied in the source.  ${CONFIGURATION_FORMAT}`);
  if (trimmed.length === 1) return byLast(trimmed);
  const parts = trimmed.split('\n');
  if (parts.length !== 2) throw new Error(`${prefix}Invalid configuration  ${CONFIGURATION_FORMAT}`);
  const direction = (parts[0] ?? '').toLowerCase().trim();
  if (direction !== 'first' && direction !== 'last')
    throw new Error(`${prefix}Invalid direction specifier.  Expected 'first' or 'last'. ${CONFIGURATION_FORMAT}`);
  const separator = (parts[1] ?? '').replace(/\r$/, '');
  if (separator.length !== 1) throw new Error(`${prefix}Single separator expected. ${CONFIGURATION_FORMAT}`);
  return direction === 'first' ? byFirst(separator) : byLast(separator);
}

function byFirst(separator: string): CategoryExtractor {
  return (stream) => {
    if (stream.startsWith('$')) return undefined;
    const at = stream.indexOf(separator);
    return at > 0 ? stream.slice(0, at) : undefined;
  };
}

function byLast(separator: string): CategoryExtractor {
  return (stream) => {
    if (stream.startsWith('$')) return undefined;
    const at = stream.lastIndexOf(separator);
    return at > 0 ? stream.slice(0, at) : undefined;
  };
}

function linkTargetOf(event: RecordedEvent): string {
  return event.eventType === EventTypes.LinkTo ? event.data.toString('utf8') : `${event.eventNumber}@${event.stream}`;
}

function streamsHandler(source: string): NativeHandler {
  if (source.trim() !== '')
    throw new Error('Cannot initialize categorize stream projection handler.  No source is allowed.');
  return {
    name: SystemProjectionNames.Streams,
    definition: nativeDefinition({ includeLinks: true }),
    process({ event }) {
      if (event.eventNumber !== 0) return undefined;
      return { stream: '$streams', eventType: EventTypes.LinkTo, data: `0@${event.stream}`, isJson: false, extra: null };
    },
  };
}

function streamByCategoryHandler(source: string): NativeHandler {
  const category = categoryExtractor(source);
  return {
    name: SystemProjectionNames.StreamByCategory,
    definition: nativeDefinition({ includeLinks: true }),
    process({ event }) {
      if (event.eventNumber !== 0) return undefined;
      const name = category(event.stream);
      if (name === undefined) return undefined;
      return { stream: `$category-${name}`, eventType: EventTypes.StreamReference, data: event.stream, isJson: false, extra: null };
    },
  };
}

function byCategoryHandler(source: string): NativeHandler {
  const category = categoryExtractor(source);
  return {
    name: SystemProjectionNames.ByCategory,
    definition: nativeDefinition({ includeLinks: true }),
    process({ event }) {
      const deleted = deletedStreamOf(event);
      const original = deleted ?? event.stream;
      const name = category(original);
      if (name === undefined) return undefined;
      const extra: Record<string, string> = { $o: JSON.stringify(original) };
      if (deleted !== undefined) extra['$deleted'] = '-1';
      return { stream: `$ce-${name}`, eventType: EventTypes.LinkTo, data: linkTargetOf(event), isJson: false, extra };
    },
  };
}

function byEventTypeHandler(source: string): NativeHandler {
  if (source.trim() !== '') throw new Error('Empty source expected');
  return {
    name: SystemProjectionNames.ByEventType,
    definition: nativeDefinition({ includeLinks: false }),
    process({ event }) {
      if (event.eventType === EventTypes.LinkTo) return undefined;
      const deleted = deletedStreamOf(event);
      const type = deleted === undefined ? event.eventType : '$deleted';
      const stream = deleted ?? event.stream;
      return {
        stream: `$et-${type}`,
        eventType: EventTypes.LinkTo,
        data: `${event.eventNumber}@${stream}`,
        isJson: false,
        extra: deleted === undefined ? null : { $deleted: '-1' },
      };
    },
    checkpointEvents(tagJson) {
      return [{ stream: '$et', eventType: EventTypes.PartitionCheckpoint, data: tagJson, isJson: true, extra: null }];
    },
  };
}

/** .NET `yyyy-MM-ddTHH:mm:ss.ffffffZ` of the event's time. */
function eventTimestamp(createdMs: number): string {
  return new Date(createdMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function byCorrelationIdHandler(source: string): NativeHandler {
  let property = '$correlationId';
  if (source.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(source);
    } catch {
      parsed = undefined;
    }
    const value = (parsed as Record<string, unknown> | undefined)?.['correlationIdProperty'];
    if (typeof value !== 'string')
      throw new Error(
        "Could not parse projection source. Please make sure the source is a valid JSON string with a property: 'correlationIdProperty' having a string value",
      );
    property = value;
  }
  return {
    name: SystemProjectionNames.ByCorrelationId,
    definition: nativeDefinition({ includeLinks: false }),
    process({ event }) {
      if (event.metadata.byteLength === 0) return undefined;
      let metadata: unknown;
      try {
        metadata = JSON.parse(event.metadata.toString('utf8'));
      } catch {
        return undefined;
      }
      if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return undefined;
      const correlation = (metadata as Record<string, unknown>)[property];
      if (correlation === undefined || correlation === null || typeof correlation === 'object') return undefined;
      const extra: Record<string, string> = { $eventTimestamp: JSON.stringify(eventTimestamp(event.createdMs)) };
      if (event.eventType === EventTypes.LinkTo)
        extra['$link'] = JSON.stringify({ eventId: event.eventId, metadata });
      return { stream: `$bc-${String(correlation)}`, eventType: EventTypes.LinkTo, data: linkTargetOf(event), isJson: false, extra };
    },
  };
}

/** Native handler types as recorded in the definition (`native:` + the original's class name). */
export const NATIVE_HANDLER_TYPES: Readonly<Record<string, (source: string) => NativeHandler>> = {
  'native:EventStore.Projections.Core.Standard.IndexStreams': streamsHandler,
  'native:EventStore.Projections.Core.Standard.CategorizeStreamByPath': streamByCategoryHandler,
  'native:EventStore.Projections.Core.Standard.CategorizeEventsByStreamPath': byCategoryHandler,
  'native:EventStore.Projections.Core.Standard.IndexEventsByEventType': byEventTypeHandler,
  'native:EventStore.Projections.Core.Standard.ByCorrelationId': byCorrelationIdHandler,
};

/** The system projections created at first start: name, handler type and source. */
export const SYSTEM_PROJECTION_DEFINITIONS: ReadonlyArray<{ name: string; handlerType: string; query: string }> = [
  { name: SystemProjectionNames.Streams, handlerType: 'native:EventStore.Projections.Core.Standard.IndexStreams', query: '' },
  { name: SystemProjectionNames.StreamByCategory, handlerType: 'native:EventStore.Projections.Core.Standard.CategorizeStreamByPath', query: 'first\r\n-' },
  { name: SystemProjectionNames.ByCategory, handlerType: 'native:EventStore.Projections.Core.Standard.CategorizeEventsByStreamPath', query: 'first\r\n-' },
  { name: SystemProjectionNames.ByEventType, handlerType: 'native:EventStore.Projections.Core.Standard.IndexEventsByEventType', query: '' },
  { name: SystemProjectionNames.ByCorrelationId, handlerType: 'native:EventStore.Projections.Core.Standard.ByCorrelationId', query: '{"correlationIdProperty":"$correlationId"}' },
];

export function createNativeHandler(handlerType: string, source: string): NativeHandler {
  const factory = NATIVE_HANDLER_TYPES[handlerType];
  if (factory === undefined) throw new Error(`Unknown handler type: ${handlerType}`);
  return factory(source);
}

/**
 * Turns an append request body into events, following EventStoreDB's AutoEventConverter:
 * a batch media type carries a JSON array of `{eventId, eventType, data, metadata}` (names
 * matched case-insensitively); any other body is one event whose type and id come from headers.
 * Nothing here writes: every check happens before the engine sees the events.
 */
import type { NewEvent } from '../../storage/event-db-types.js';
import { badRequest } from '../error-handler.js';
import { MediaType, type MediaTypeValue } from './media-types.js';
import { JSON_DEPTH_MAX, parseJsonSafely } from './json-depth.js';
import { parseGuid } from './request-headers.js';
import { xmlEventsToJson } from './xml-events.js';

export const BODY_INVALID = 'Write request body invalid.';
export const MISSING_EVENT_TYPE =
  'Must include an event type with the request either in body or as ES-EventType header.';

export type ParsedBody =
  | { readonly kind: 'events'; readonly events: readonly NewEvent[] }
  /** A single-event body without an event id: redirect to an idempotent URI. */
  | { readonly kind: 'needs-event-id' };

export interface SingleEventHeaders {
  readonly eventType: string | undefined;
  readonly eventId: string | undefined;
}

const BATCH_TYPES: ReadonlySet<string> = new Set([
  MediaType.EventsJson,
  MediaType.EventJson,
  MediaType.AtomJson,
]);
const SINGLE_TYPES: ReadonlySet<string> = new Set([
  MediaType.Json,
  MediaType.Raw,
  MediaType.Xml,
  MediaType.ApplicationXml,
]);

export function parseEventBody(
  mediaType: MediaTypeValue,
  body: Buffer,
  headers: SingleEventHeaders,
  maxEventSizeBytes: number,
): ParsedBody {
  let parsed: ParsedBody;
  if (BATCH_TYPES.has(mediaType)) {
    parsed = { kind: 'events', events: parseBatch(body) };
  } else if (mediaType === MediaType.EventsXml || mediaType === MediaType.EventXml) {
    const items = xmlEventsToJson(body.toString('utf8'));
    if (items === undefined) throw badRequest(BODY_INVALID);
    parsed = { kind: 'events', events: items.map((item) => parseBatchItem(item)) };
  } else if (SINGLE_TYPES.has(mediaType)) {
    if (headers.eventType === undefined) throw badRequest(MISSING_EVENT_TYPE);
    if (headers.eventId === undefined) return { kind: 'needs-event-id' };
    const isJson = mediaType === MediaType.Json;
    const event = {
      eventId: headers.eventId,
      eventType: headers.eventType,
      data: body,
      metadata: new Uint8Array(),
      isJson,
    };
    parsed = { kind: 'events', events: [event] };
  } else {
    throw badRequest(BODY_INVALID);
  }
  for (const event of parsed.events) {
    if (event.data.byteLength + event.metadata.byteLength > maxEventSizeBytes) {
      throw badRequest(`Too large events received. Limit is ${maxEventSizeBytes} bytes.`);
    }
  }
  return parsed;
}

function parseBatch(body: Buffer): NewEvent[] {
  // Two levels for the array and its items on top of the allowed depth of data and metadata.
  const parsed = parseJsonSafely(body.toString('utf8'), JSON_DEPTH_MAX + 2);
  if (parsed === undefined) throw badRequest(BODY_INVALID);
  const document = parsed.value;
  if (!Array.isArray(document) || document.length === 0) throw badRequest(BODY_INVALID);
  return document.map((item: unknown) => parseBatchItem(item));
}

function parseBatchItem(item: unknown): NewEvent {
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    throw badRequest(BODY_INVALID);
  // Names match case-insensitively; when two spellings of one name appear, the last one wins.
  let rawId: unknown;
  let eventType: unknown;
  let dataValue: unknown;
  let metadataValue: unknown;
  const fields = item as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    switch (key.toLowerCase()) {
      case 'eventid':
        rawId = fields[key];
        break;
      case 'eventtype':
        eventType = fields[key];
        break;
      case 'data':
        dataValue = fields[key];
        break;
      case 'metadata':
        metadataValue = fields[key];
        break;
    }
  }
  if (rawId !== undefined && rawId !== null && typeof rawId !== 'string')
    throw badRequest(BODY_INVALID);
  const eventId = typeof rawId === 'string' ? parseGuid(rawId) : undefined;
  if (eventId === undefined) {
    if (
      typeof rawId === 'string' &&
      !/^[{]?0{8}-?0{4}-?0{4}-?0{4}-?0{12}[}]?$/.test(rawId.trim())
    ) {
      throw badRequest(BODY_INVALID);
    }
    throw badRequest("Empty eventId provided. (Parameter 'eventId')");
  }
  if (typeof eventType !== 'string' || eventType === '')
    throw badRequest('Empty eventType provided.');
  const data = encodeField(dataValue);
  const metadata = encodeField(metadataValue);
  return {
    eventId,
    eventType,
    data: data.bytes,
    metadata: metadata.bytes,
    isJson: data.isJson || metadata.isJson,
  };
}

interface EncodedField {
  readonly bytes: Buffer;
  readonly isJson: boolean;
}

/** Shared by every event without data or metadata: zero bytes cannot be written to. */
const ABSENT_FIELD: EncodedField = { bytes: Buffer.alloc(0), isJson: false };

/**
 * Objects and arrays are stored as indented JSON; a string that holds a JSON object or array
 * is stored the same way; any other string is stored as its UTF-8 bytes; numbers, booleans,
 * null and a missing field become empty.
 */
function encodeField(value: unknown): EncodedField {
  if (typeof value === 'object' && value !== null) {
    return { bytes: Buffer.from(JSON.stringify(value, null, 2)), isJson: true };
  }
  if (typeof value !== 'string') return ABSENT_FIELD;
  const trimmed = value.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const parsed = parseJsonSafely(trimmed)?.value;
    if (typeof parsed === 'object' && parsed !== null) {
      return { bytes: Buffer.from(JSON.stringify(parsed, null, 2)), isJson: true };
    }
  }
  return { bytes: Buffer.from(value, 'utf8'), isJson: false };
}

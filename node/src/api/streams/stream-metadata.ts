/**
 * `GET|POST /streams/{s}/metadata`: the latest event of the metastream `$$s`. Writes force the
 * event type `$metadata` and go through the engine's setStreamMetadata, which keeps the parsed
 * `$maxAge`, `$maxCount`, `$tb`, `$cacheControl` and `$acl` that reads then enforce.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { badRequest } from '../error-handler.js';
import { escapeStream } from './entry.js';
import { BODY_INVALID, parseEventBody } from './event-body.js';
import { parseJsonSafely } from './json-depth.js';
import { isMetadataItem, metadataFromItem } from './metadata-item.js';
import {
  EVENT_CODECS,
  isXmlType,
  MediaType,
  negotiate,
  WRITE_CODECS,
  type MediaTypeValue,
} from './media-types.js';
import { sendEvent, sendNotAcceptable, type FeedQuery } from './read-stream.js';
import {
  readEventId,
  readEventType,
  readExpectedVersion,
  readRequiresMaster,
} from './request-headers.js';
import {
  ALL_STREAM,
  authorizeStream,
  CACHE_NEVER,
  requestBaseUrl,
  sendDeleted,
  sendNotFound,
  sendStatus,
  type StreamsContext,
} from './stream-http.js';
import {
  bodyBytes,
  requestContentType,
  sendCreated,
  sendUnsupportedMediaType,
  sendWriteFailure,
} from './write-stream.js';

const METADATA_EVENT_TYPE = '$metadata';

export async function handleReadMetadata(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: { stream: string },
  query: FeedQuery,
): Promise<FastifyReply> {
  const negotiated = negotiate(request.headers.accept, query.format, EVENT_CODECS);
  if (negotiated === undefined) return sendNotAcceptable(reply);
  const { stream } = params;
  await authorizeStream(context, request, stream, 'mr', {
    requireAuthenticated: stream === ALL_STREAM,
  });
  const state = await context.db.streamState(stream);
  if (state.kind === 'hard-deleted') return sendDeleted(reply, stream);
  const result = await context.db.readEvent(`$$${stream}`, -1);
  reply.header('cache-control', CACHE_NEVER);
  if (result.kind === 'success') {
    return sendEvent(reply, negotiated.mediaType, result.event, {
      baseUrl: requestBaseUrl(request),
      embed: query.embed,
    });
  }
  if (result.kind === 'stream-deleted') return sendDeleted(reply, stream);
  if (state.kind === 'no-stream') return sendNotFound(reply, `Stream '${stream}' not found.`);
  // An existing stream without metadata: an empty document (EventStoreDB's special case).
  reply.header('vary', 'Accept');
  const body =
    isXmlType(negotiated.mediaType) || negotiated.mediaType === MediaType.Raw ? '' : '{}';
  return sendStatus(reply, 200, 'OK', body, negotiated.mediaType);
}

export async function handleWriteMetadata(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: { stream: string },
): Promise<FastifyReply> {
  const { stream } = params;
  if (stream.startsWith('$$')) throw badRequest('Bad Request. Metastreams cannot have metadata.');
  const mediaType = requestContentType(request, WRITE_CODECS);
  if (mediaType === undefined) return sendUnsupportedMediaType(reply);
  const eventType = readEventType(request);
  if (eventType !== undefined && eventType !== METADATA_EVENT_TYPE) {
    throw badRequest('Bad Request. You should not include an event type for metadata.');
  }
  const expectedVersion = readExpectedVersion(request);
  readRequiresMaster(request);
  const headerEventId = readEventId(request);
  await authorizeStream(context, request, stream, 'mw');
  const { raw, eventId } = parseMetadataBody(
    mediaType,
    bodyBytes(request),
    headerEventId,
    context.maxEventSizeBytes,
  );
  const result = await context.db.setStreamMetadata(stream, expectedVersion, raw, eventId);
  if (result.kind !== 'success') return sendWriteFailure(reply, result);
  request.log.trace({ stream }, 'stream metadata written');
  return sendCreated(
    reply,
    `${requestBaseUrl(request)}/streams/${escapeStream(`$$${stream}`)}/${result.firstEventNumber}`,
  );
}

function parseMetadataBody(
  mediaType: MediaTypeValue,
  body: Buffer,
  headerEventId: string | undefined,
  maxEventSizeBytes: number,
): { raw: Record<string, unknown>; eventId: string } {
  const eventId = headerEventId ?? randomUUID();
  const parsed = parseEventBody(
    mediaType,
    body,
    { eventType: METADATA_EVENT_TYPE, eventId },
    maxEventSizeBytes,
  );
  if (parsed.kind !== 'events') throw badRequest(BODY_INVALID);
  const last = parsed.events[parsed.events.length - 1];
  if (last === undefined || (mediaType !== MediaType.Json && !last.isJson))
    throw badRequest(BODY_INVALID);
  const raw = parseJsonSafely(Buffer.from(last.data).toString('utf8'))?.value;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest(BODY_INVALID);
  const object = raw as Record<string, unknown>;
  // A plain JSON body in the spec's item shape ({eventId, eventType, data: {maxAge, ...}}).
  if (mediaType === MediaType.Json && isMetadataItem(object)) {
    const item = metadataFromItem(object);
    if (item.kind === 'invalid') throw badRequest(item.message);
    return { raw: item.metadata, eventId: headerEventId ?? item.eventId ?? last.eventId };
  }
  return { raw: object, eventId: last.eventId };
}

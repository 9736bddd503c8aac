/**
 * Stream writes over AtomPub: appends (batch, single JSON/XML/binary event, idempotent
 * `incoming/{guid}` URIs) and deletes, mapping the engine's results to EventStoreDB's answers:
 * 201 + Location, 307 to an idempotent URI, 400 `Wrong expected EventNumber` with the current
 * version, 410 `Stream deleted`, 204 `Stream deleted`.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppendResult } from '../../storage/event-db-types.js';
import { badRequest } from '../error-handler.js';
import { escapeStream } from './entry.js';
import { parseEventBody, type ParsedBody } from './event-body.js';
import {
  INCOMING_CODECS,
  parseRequestContentType,
  WRITE_CODECS,
  type MediaTypeValue,
} from './media-types.js';
import {
  parseGuid,
  readEventId,
  readEventType,
  readExpectedVersion,
  readHardDelete,
  readRequiresMaster,
} from './request-headers.js';
import {
  ALL_STREAM,
  authorizeStream,
  requestBaseUrl,
  sendStatus,
  sendWrongExpectedVersion,
  unauthorized,
  type StreamsContext,
} from './stream-http.js';

export function sendUnsupportedMediaType(reply: FastifyReply): FastifyReply {
  const reason = 'Invalid or missing Content-Type';
  return sendStatus(reply, 415, reason, reason);
}

/** The raw body as bytes; the streams routes register a buffer parser for every content type. */
export function bodyBytes(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

export function requestContentType(
  request: FastifyRequest,
  codecs: readonly MediaTypeValue[],
): MediaTypeValue | undefined {
  const parsed = parseRequestContentType(request.headers['content-type'], codecs);
  return parsed.kind === 'ok' ? parsed.mediaType : undefined;
}

/** Maps an append or delete result; `success` is left to the caller. */
export function sendWriteFailure(
  reply: FastifyReply,
  result: Exclude<AppendResult, { kind: 'success' }>,
): FastifyReply {
  switch (result.kind) {
    case 'wrong-expected-version':
      return sendWrongExpectedVersion(reply, result.currentVersion);
    case 'stream-deleted':
      return sendStatus(reply, 410, 'Stream deleted', 'Stream deleted: the stream has been deleted and takes no more writes.');
  }
}

export function sendCreated(reply: FastifyReply, location: string): FastifyReply {
  reply.header('location', location);
  return sendStatus(reply, 201, 'Created');
}

export async function handleAppend(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: { stream: string; guid?: string },
): Promise<FastifyReply> {
  const { stream } = params;
  if (stream === ALL_STREAM) throw unauthorized();
  const mediaType = requestContentType(
    request,
    params.guid === undefined ? WRITE_CODECS : INCOMING_CODECS,
  );
  if (mediaType === undefined) return sendUnsupportedMediaType(reply);
  const expectedVersion = readExpectedVersion(request);
  readRequiresMaster(request);
  let eventId = readEventId(request);
  if (params.guid !== undefined) {
    eventId = parseGuid(params.guid);
    if (eventId === undefined) throw badRequest(`'${params.guid}' is not a valid event id`);
  }
  await authorizeStream(context, request, stream, 'w');
  const headers = { eventType: readEventType(request), eventId };
  const parsed: ParsedBody = parseEventBody(
    mediaType,
    bodyBytes(request),
    headers,
    context.maxEventSizeBytes,
  );
  const baseUrl = requestBaseUrl(request);
  const streamUrl = `${baseUrl}/streams/${escapeStream(stream)}`;
  if (parsed.kind === 'needs-event-id') {
    reply.header('location', `${streamUrl}/incoming/${randomUUID()}`);
    return sendStatus(reply, 307, 'Temporary Redirect', 'Forwarding to idempotent URI');
  }
  if (
    expectedVersion === EXPECTED_VERSION_STREAM_EXISTS &&
    (await isSoftDeleted(context, stream))
  ) {
    return sendWriteFailure(reply, { kind: 'stream-deleted' });
  }
  const result = await context.db.append(stream, expectedVersion, parsed.events);
  if (result.kind !== 'success') return sendWriteFailure(reply, result);
  request.log.trace(
    { stream, eventCount: parsed.events.length, idempotent: result.idempotent },
    'appended',
  );
  return sendCreated(reply, `${streamUrl}/${result.firstEventNumber}`);
}

export async function handleDelete(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: { stream: string },
): Promise<FastifyReply> {
  if (params.stream === ALL_STREAM) throw unauthorized();
  const expectedVersion = readExpectedVersion(request);
  const hard = readHardDelete(request);
  readRequiresMaster(request);
  await authorizeStream(context, request, params.stream, 'd');
  if (!hard && (await isAbsentWithoutMetadata(context, params.stream))) {
    return sendWriteFailure(reply, { kind: 'wrong-expected-version', currentVersion: -1 });
  }
  const result = await context.db.deleteStream(params.stream, expectedVersion, hard);
  if (result.kind !== 'success') return sendWriteFailure(reply, result);
  request.log.trace({ stream: params.stream, hard }, 'stream deleted');
  return sendStatus(reply, 204, 'Stream deleted');
}

const EXPECTED_VERSION_STREAM_EXISTS = -4;

/*
 * EventStoreDB rules the engine does not (yet) apply itself, checked here before the write:
 * StreamExists on a soft-deleted stream is StreamDeleted (410), and soft-deleting a stream that
 * has neither events nor metadata is WrongExpectedVersion with current version -1.
 */
async function isSoftDeleted(context: StreamsContext, stream: string): Promise<boolean> {
  const state = await context.db.streamState(stream);
  return state.kind === 'exists' && state.softDeleted;
}

async function isAbsentWithoutMetadata(context: StreamsContext, stream: string): Promise<boolean> {
  const state = await context.db.streamState(stream);
  if (state.kind !== 'no-stream') return false;
  const { metastreamVersion } = await context.db.getStreamMetadata(stream);
  return metastreamVersion < 0;
}

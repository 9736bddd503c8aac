/**
 * Stream reads over AtomPub: feed pages (head, backward, forward, with long polling and
 * conditional GET) and single events in every supported representation.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ReadStreamResult, RecordedEvent } from '../../storage/event-db-types.js';
import { badRequest } from '../error-handler.js';
import { entryDocumentXml, eventDataXml, eventDtoXml, feedXml } from './atom-xml.js';
import { eventDataAsJson, parseEmbed, toEntry, toEventDto } from './entry.js';
import { descriptionDocument, FEED_PAGE_SIZE, streamFeed, type StreamPage } from './feed.js';
import { longPollSignal, watchCommits } from './long-poll.js';
import {
  EVENT_CODECS,
  FEED_CODECS,
  isXmlType,
  MediaType,
  negotiate,
  type MediaTypeValue,
} from './media-types.js';
import { readLongPollSeconds, readResolveLinkTos } from './request-headers.js';
import { isResolvedLink, resolveLink, resolveLinks, type FeedItem } from './link-resolution.js';
import { readDecisions } from '../security/read-authorization.js';
import {
  authorizeStream,
  CACHE_FOREVER,
  CACHE_NEVER,
  eTagValue,
  isNotModified,
  requestBaseUrl,
  sendDeleted,
  sendNotFound,
  sendStatus,
  type StreamsContext,
} from './stream-http.js';

export const READ_COUNT_MAX = 4096;

export interface FeedQuery {
  readonly embed?: string | undefined;
  readonly format?: string | undefined;
}

export interface FeedParams {
  readonly stream: string;
  /** `head` or an event number; undefined for `/streams/{s}` (head). */
  readonly event: string | undefined;
  readonly count: string | undefined;
  readonly direction: 'forward' | 'backward';
}

/** A non-negative event number, or 'head' where allowed. */
export function parseEventNumber(text: string, allowHead: boolean): number | 'head' {
  if (allowHead && text.toLowerCase() === 'head') return 'head';
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value))
    throw badRequest(`'${text}' is not valid event number`);
  return value;
}

export function parseCount(text: string | undefined): number {
  if (text === undefined) return FEED_PAGE_SIZE;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value <= 0) {
    throw badRequest(`'${text}' is not valid count. Should be positive integer`);
  }
  if (value > READ_COUNT_MAX)
    throw badRequest(`Read size too big, should be less than ${READ_COUNT_MAX} items`);
  return value;
}

export function sendNotAcceptable(reply: FastifyReply): FastifyReply {
  const reason = 'Requested URI is not available in requested format';
  return sendStatus(reply, 406, reason, reason);
}

/** Serializes a JSON document or its XML rendering in the negotiated media type. */
export function sendDocument(
  reply: FastifyReply,
  mediaType: MediaTypeValue,
  json: unknown,
  xml: () => string,
): FastifyReply {
  reply.header('vary', 'Accept');
  const body = isXmlType(mediaType) ? xml() : JSON.stringify(json, null, 2);
  return sendStatus(reply, 200, 'OK', body, mediaType);
}

export async function handleStreamFeed(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: FeedParams,
  query: FeedQuery,
): Promise<FastifyReply> {
  const negotiated = negotiate(request.headers.accept, query.format, FEED_CODECS);
  if (negotiated === undefined) return sendNotAcceptable(reply);
  const from = parseEventNumber(params.event ?? 'head', params.direction === 'backward');
  const count = parseCount(params.count);
  // Metastreams are read as they are; links elsewhere resolve unless the client says not to.
  const resolve = readResolveLinkTos(request) && !params.stream.startsWith('$$');
  const longPollSeconds =
    params.direction === 'forward' || from === 'head' ? readLongPollSeconds(request) : undefined;
  const principal = await authorizeStream(context, request, params.stream, 'r');
  if (negotiated.mediaType === MediaType.DescriptionDocJson) {
    const groups = context.subscriptionGroups?.(params.stream) ?? [];
    const body = JSON.stringify(descriptionDocument(params.stream, groups), null, 2);
    const status = negotiated.byDefault ? 406 : 200;
    return sendStatus(reply, status, 'Description Document', body, MediaType.DescriptionDocJson);
  }
  const stream = params.stream;
  const read = (): Promise<ReadStreamResult> =>
    context.db.readStream(stream, from === 'head' ? -1 : from, count, params.direction);
  let result: ReadStreamResult;
  if (longPollSeconds === undefined) {
    result = await read();
  } else {
    const watcher = watchCommits(context.db, (write) => write.stream === stream);
    try {
      result = await read();
      if (nothingNew(request, result, params.direction, negotiated.mediaType)) {
        const signal = longPollSignal(reply.raw, context.closing);
        if (await watcher.wait(longPollSeconds * 1000, signal)) result = await read();
      }
    } finally {
      watcher.dispose();
    }
  }
  if (result.kind === 'stream-not-found') return sendNotFound(reply, `Stream '${stream}' not found.`);
  if (result.kind === 'stream-deleted') return sendDeleted(reply, stream);
  return sendStreamFeed(context, request, reply, {
    params,
    from,
    count,
    mediaType: negotiated.mediaType,
    embed: query.embed,
    result,
    items: resolve
      ? await resolveLinks(context.db, result.events, readDecisions(context.authorizer, principal))
      : result.events,
  });
}

/**
 * Whether a long poll should wait: a forward page found no events, or the head of the stream
 * is what the client already has (its If-None-Match names the current version).
 */
function nothingNew(
  request: FastifyRequest,
  result: ReadStreamResult,
  direction: 'forward' | 'backward',
  mediaType: MediaTypeValue,
): boolean {
  if (result.kind === 'stream-deleted') return false;
  if (result.kind === 'stream-not-found') return true;
  if (direction === 'forward') return result.events.length === 0;
  return isNotModified(request, eTagValue(result.lastEventNumber, mediaType));
}

interface FeedResponse {
  readonly params: FeedParams;
  readonly from: number | 'head';
  readonly count: number;
  readonly mediaType: MediaTypeValue;
  readonly embed: string | undefined;
  readonly result: Extract<ReadStreamResult, { kind: 'success' }>;
  /** The page's events, links resolved when asked. */
  readonly items: readonly FeedItem[];
}

async function sendStreamFeed(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  response: FeedResponse,
): Promise<FastifyReply> {
  const { params, from, count, mediaType, result } = response;
  const last = result.lastEventNumber;
  const headRequested = from === 'head';
  const fromNumber = from === 'head' ? last : from;
  const cacheable =
    params.direction === 'backward'
      ? !headRequested && fromNumber <= last
      : last + 1 >= fromNumber + count;
  const eTag = eTagValue(last, mediaType);
  if (!cacheable && isNotModified(request, eTag)) {
    reply.header('etag', `"${eTag}"`).header('cache-control', CACHE_NEVER);
    return sendStatus(reply, 304, 'Not Modified');
  }
  const page: StreamPage = {
    stream: params.stream,
    direction: params.direction,
    fromEventNumber: fromNumber,
    count,
    lastEventNumber: last,
    isEndOfStream: result.isEndOfStream,
    headRequested,
    events: response.items,
    eTag: headRequested ? eTag : undefined,
  };
  if (cacheable) {
    reply.header('cache-control', CACHE_FOREVER);
  } else {
    reply.header('cache-control', await headCacheControl(context, params.stream, headRequested));
    reply.header('etag', `"${eTag}"`);
  }
  const feed = streamFeed(page, {
    baseUrl: requestBaseUrl(request),
    embed: parseEmbed(response.embed),
  });
  return sendDocument(reply, mediaType, feed, () => feedXml(feed));
}

/** The head of a stream may be cached for `$cacheControl` seconds when its metadata says so. */
async function headCacheControl(
  context: StreamsContext,
  stream: string,
  headRequested: boolean,
): Promise<string> {
  if (!headRequested || stream.startsWith('$$')) return CACHE_NEVER;
  const { metadata } = await context.db.getStreamMetadata(stream);
  const seconds = metadata.cacheControlSeconds;
  return seconds === undefined ? CACHE_NEVER : `max-age=${seconds}, public`;
}

export async function handleReadEvent(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: { stream: string; event: string },
  query: FeedQuery,
): Promise<FastifyReply> {
  const negotiated = negotiate(request.headers.accept, query.format, EVENT_CODECS);
  if (negotiated === undefined) return sendNotAcceptable(reply);
  const eventNumber = parseEventNumber(params.event, true);
  const resolve = readResolveLinkTos(request) && !params.stream.startsWith('$$');
  const principal = await authorizeStream(context, request, params.stream, 'r');
  const result = await context.db.readEvent(
    params.stream,
    eventNumber === 'head' ? -1 : eventNumber,
  );
  switch (result.kind) {
    case 'stream-deleted':
      return sendDeleted(reply, params.stream);
    case 'stream-not-found':
      return sendNotFound(reply, `Stream '${params.stream}' not found.`);
    case 'event-not-found':
      return sendNotFound(reply, `Event ${params.event} of stream '${params.stream}' not found.`);
    case 'success': {
      const item = resolve
        ? await resolveLink(context.db, result.event, readDecisions(context.authorizer, principal))
        : result.event;
      // A link whose target is gone, or may not be read by this reader, reads as not found.
      if (isResolvedLink(item) && item.target === undefined) return sendNotFound(reply, `Event ${params.event} of stream '${params.stream}' not found.`);
      reply.header('cache-control', eventNumber === 'head' ? CACHE_NEVER : CACHE_FOREVER);
      return sendEvent(reply, negotiated.mediaType, item, {
        baseUrl: requestBaseUrl(request),
        embed: query.embed,
      });
    }
  }
}

/**
 * One event in the negotiated representation (entry, DTO, data only, or raw bytes); for a
 * resolved link, the entry describes the link and the other representations its target.
 */
export function sendEvent(
  reply: FastifyReply,
  mediaType: MediaTypeValue,
  item: FeedItem,
  options: { baseUrl: string; embed: string | undefined },
): FastifyReply {
  reply.header('vary', 'Accept');
  const event: RecordedEvent = isResolvedLink(item) ? (item.target ?? item.link) : item;
  switch (mediaType) {
    case MediaType.Atom:
    case MediaType.AtomJson: {
      const entry = toEntry(item, {
        baseUrl: options.baseUrl,
        embed: parseEmbed(options.embed),
        singleEntry: true,
      });
      return sendDocument(reply, mediaType, entry, () => entryDocumentXml(entry));
    }
    case MediaType.EventJson:
    case MediaType.EventXml:
      return sendDocument(reply, mediaType, toEventDto(event), () => eventDtoXml(event));
    case MediaType.Raw:
      return sendStatus(reply, 200, 'OK', event.data, MediaType.Raw);
    default:
      return sendDocument(reply, mediaType, eventDataAsJson(event), () => eventDataXml(event));
  }
}

/**
 * The `$all` feed: every event of the log in commit order, system events included, and deleted
 * or expired events until a scavenge removes them. Reading it needs credentials and read access
 * to `$all` (`$admins` unless `$$$all` grants more), and shows only the events of streams the
 * reader may read. Positions are EventStoreDB's 32-hex-digit commit+prepare tokens.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AllPosition, ReadAllResult } from '../../storage/event-db-types.js';
import { badRequest } from '../error-handler.js';
import { readDecisions } from '../security/read-authorization.js';
import { feedXml } from './atom-xml.js';
import { parseEmbed } from './entry.js';
import { allFeed, parseAllPosition, type AllPage } from './feed.js';
import { longPollSignal, watchCommits } from './long-poll.js';
import { FEED_CODECS, MediaType, negotiate } from './media-types.js';
import { parseCount, sendDocument, sendNotAcceptable, type FeedQuery } from './read-stream.js';
import { readLongPollSeconds, readResolveLinkTos } from './request-headers.js';
import {
  ALL_STREAM,
  authorizeStream,
  CACHE_FOREVER_PRIVATE,
  CACHE_NEVER,
  eTagValue,
  isNotModified,
  requestBaseUrl,
  sendStatus,
  type StreamsContext,
} from './stream-http.js';

export interface AllParams {
  /** `head` or a position token; undefined for `/streams/$all`. */
  readonly position: string | undefined;
  readonly count: string | undefined;
  readonly direction: 'forward' | 'backward';
}

function parsePosition(text: string, direction: 'forward' | 'backward'): AllPosition | 'head' {
  if (direction === 'backward' && text.toLowerCase() === 'head') return 'head';
  const position = parseAllPosition(text);
  if (position === undefined) throw badRequest(`Invalid position argument: ${text}`);
  return position;
}

export async function handleAllFeed(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: AllParams,
  query: FeedQuery,
): Promise<FastifyReply> {
  const negotiated = negotiate(request.headers.accept, query.format, FEED_CODECS);
  if (negotiated === undefined) return sendNotAcceptable(reply);
  const mediaType =
    negotiated.mediaType === MediaType.DescriptionDocJson
      ? MediaType.AtomJson
      : negotiated.mediaType;
  const position = parsePosition(params.position ?? 'head', params.direction);
  const count = parseCount(params.count);
  readResolveLinkTos(request);
  const longPollSeconds = params.direction === 'forward' ? readLongPollSeconds(request) : undefined;
  const principal = await authorizeStream(context, request, ALL_STREAM, 'r', {
    requireAuthenticated: true,
  });

  // The writer checkpoint (the committed end of the log) is taken before the read, so the
  // `previous` link of a head page starts at or before the newest event shown: a client may see
  // an event twice, never miss one.
  const end = context.db.stats().writerCheckpoint;
  const requested = position === 'head' ? { commitPosition: end, preparePosition: end } : position;
  // The head of $all is versioned by the end of the log, as EventStoreDB's last commit position.
  const eTag = position === 'head' ? eTagValue(end, mediaType) : undefined;
  if (eTag !== undefined && isNotModified(request, eTag)) {
    reply.header('etag', `"${eTag}"`).header('cache-control', CACHE_NEVER);
    return sendStatus(reply, 304, 'Not Modified');
  }
  const read = (): Promise<ReadAllResult> =>
    context.db.readAll(position === 'head' ? undefined : position, count, params.direction);
  let result: ReadAllResult;
  if (longPollSeconds === undefined) {
    result = await read();
  } else {
    const watcher = watchCommits(context.db, () => true);
    try {
      result = await read();
      if (result.events.length === 0) {
        const signal = longPollSignal(reply.raw, context.closing);
        if (await watcher.wait(longPollSeconds * 1000, signal)) result = await read();
      }
    } finally {
      watcher.dispose();
    }
  }
  // Whom the ACL of `$all` admits still sees only the events of streams it may read: the page
  // keeps its positions (the next page starts after the events left out), not those events.
  const events = await readDecisions(context.authorizer, principal).filter(result.events);
  const page: AllPage = {
    direction: params.direction,
    count,
    requestedPosition: requested,
    nextPosition: result.nextPosition,
    isEnd: result.isEnd,
    events,
    readEventCount: result.events.length,
    eTag,
  };
  if (eTag !== undefined) reply.header('etag', `"${eTag}"`);
  const fullPage = result.events.length === count && position !== 'head';
  // What a page shows depends on who reads it: shared caches must not keep it.
  reply.header('cache-control', fullPage ? CACHE_FOREVER_PRIVATE : CACHE_NEVER);
  const feed = allFeed(page, { baseUrl: requestBaseUrl(request), embed: parseEmbed(query.embed) });
  return sendDocument(reply, mediaType, feed, () => feedXml(feed));
}

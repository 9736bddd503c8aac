/**
 * The Streams endpoints of the AtomPub HTTP API (`/streams/...`), wire-compatible with
 * EventStoreDB's AtomController. Registered in their own encapsulated context: request bodies
 * reach the handlers as raw bytes whatever their Content-Type, because the media type decides
 * how an append body is read (events array, single JSON event, binary data).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { handleAllFeed } from '../streams/read-all.js';
import { handleReadEvent, handleStreamFeed, type FeedQuery } from '../streams/read-stream.js';
import { handleReadMetadata, handleWriteMetadata } from '../streams/stream-metadata.js';
import {
  ALL_STREAM,
  CACHE_FOREVER,
  requestBaseUrl,
  sendNotFound,
  sendStatus,
  type StreamsContext,
} from '../streams/stream-http.js';
import { handleAppend, handleDelete } from '../streams/write-stream.js';
import { errorResponses, type ResponseDocs } from '../openapi-responses.js';
import { StreamNameSchema } from '../stream-names.js';
import { EVENT_CODECS, FEED_CODECS } from '../streams/media-types.js';

export interface StreamsRouteOptions extends StreamsContext {
  /** Largest request body accepted, in bytes (a batch of events). */
  readonly bodyLimitBytes: number;
}

// Stream names are checked here, once, for every streams route (stream-names.ts).
const StreamParams = z.object({ stream: StreamNameSchema });
const EventParams = z.object({ stream: StreamNameSchema, event: z.string() });
const PageParams = z.object({ stream: StreamNameSchema, event: z.string(), count: z.string() });
const IncomingParams = z.object({ stream: StreamNameSchema, guid: z.string() });
const ReadQuery = z.object({ embed: z.string().optional(), format: z.string().optional() });

type Direction = 'forward' | 'backward';

/** What the streams routes answer (OpenAPI); see openapi-responses.ts. */
const FEED_RESPONSES: ResponseDocs = {
  200: { description: 'A page of the feed (no Accept header: the description document)', mediaTypes: FEED_CODECS },
  304: { description: 'Not modified since the ETag in If-None-Match' },
  ...errorResponses(400, 401, 404, 406, 410),
};
const EVENT_RESPONSES: ResponseDocs = {
  200: { description: 'One event (no Accept header: its Atom XML entry)', mediaTypes: EVENT_CODECS },
  ...errorResponses(400, 401, 404, 406, 410),
};
const WRITE_RESPONSES: ResponseDocs = {
  201: { description: 'Written; Location names the first event written' },
  307: { description: 'A single event posted without an id: Location is the URI to post it to, idempotently' },
  ...errorResponses(400, 401, 410, 413, 415),
};
const DELETE_RESPONSES: ResponseDocs = {
  204: { description: 'Stream deleted' },
  ...errorResponses(400, 401, 410),
};
const REDIRECT_RESPONSES: ResponseDocs = {
  307: { description: 'The same URL without the trailing slash (Location)', mediaTypes: ['text/plain'] },
};

function feed(
  context: StreamsContext,
  request: FastifyRequest,
  reply: FastifyReply,
  params: { stream: string; event?: string; count?: string; direction: Direction },
  query: FeedQuery,
): Promise<FastifyReply> {
  if (params.stream === ALL_STREAM) {
    const allParams = { position: params.event, count: params.count, direction: params.direction };
    return handleAllFeed(context, request, reply, allParams, query);
  }
  const feedParams = {
    stream: params.stream,
    event: params.event,
    count: params.count,
    direction: params.direction,
  };
  return handleStreamFeed(context, request, reply, feedParams, query);
}

/** `/streams/{s}/` and friends answer 307 to the same URL without the trailing slash. */
function redirectTrailingSlash(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const [path = '', query] = request.url.split('?');
  const location =
    requestBaseUrl(request) + path.replace(/\/+$/, '') + (query === undefined ? '' : `?${query}`);
  reply.header('location', location).header('cache-control', CACHE_FOREVER);
  return sendStatus(reply, 307, 'Temporary Redirect', 'Moved Permanently');
}

export async function registerStreamsRoutes(
  parent: FastifyInstance,
  options: StreamsRouteOptions,
): Promise<void> {
  await parent.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes },
      (_request, body, done) => {
        done(null, body);
      },
    );
    registerReadRoutes(scope.withTypeProvider<ZodTypeProvider>(), options);
    registerWriteRoutes(scope.withTypeProvider<ZodTypeProvider>(), options, options.bodyLimitBytes);
  });
}

function registerReadRoutes(app: FastifyInstance, context: StreamsContext): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.get(
    '/streams/:stream',
    { schema: { params: StreamParams, querystring: ReadQuery }, config: { responses: FEED_RESPONSES } },
    (request, reply) =>
      feed(
        context,
        request,
        reply,
        { stream: request.params.stream, direction: 'backward' },
        request.query,
      ),
  );
  typed.get(
    '/streams/:stream/metadata',
    { schema: { params: StreamParams, querystring: ReadQuery }, config: { responses: EVENT_RESPONSES } },
    (request, reply) => handleReadMetadata(context, request, reply, request.params, request.query),
  );
  typed.get(
    '/streams/:stream/:event',
    { schema: { params: EventParams, querystring: ReadQuery }, config: { responses: EVENT_RESPONSES } },
    (request, reply) => {
      if (request.params.event === '') return redirectTrailingSlash(request, reply);
      if (request.params.stream === ALL_STREAM) return sendNotFound(reply);
      return handleReadEvent(context, request, reply, request.params, request.query);
    },
  );
  typed.get(
    '/streams/:stream/:event/:count',
    { schema: { params: PageParams, querystring: ReadQuery }, config: { responses: FEED_RESPONSES } },
    (request, reply) =>
      feed(context, request, reply, { ...request.params, direction: 'backward' }, request.query),
  );
  for (const direction of ['backward', 'forward'] as const) {
    typed.get(
      `/streams/:stream/:event/${direction}/:count`,
      { schema: { params: PageParams, querystring: ReadQuery }, config: { responses: FEED_RESPONSES } },
      (request, reply) =>
        feed(context, request, reply, { ...request.params, direction }, request.query),
    );
  }
  typed.get('/streams/:stream/metadata/', { config: { responses: REDIRECT_RESPONSES } }, (request, reply) =>
    redirectTrailingSlash(request, reply),
  );
  registerMetastreamReadRoutes(typed, context);
}

/** `/streams/{s}/metadata/{event}[...]` read the metastream `$$s` like any stream. */
function registerMetastreamReadRoutes(app: FastifyInstance, context: StreamsContext): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();
  typed.get(
    '/streams/:stream/metadata/:event',
    { schema: { params: EventParams, querystring: ReadQuery }, config: { responses: EVENT_RESPONSES } },
    (request, reply) => {
      const params = { stream: `$$${request.params.stream}`, event: request.params.event };
      return handleReadEvent(context, request, reply, params, request.query);
    },
  );
  for (const suffix of [':count', 'backward/:count', 'forward/:count'] as const) {
    const direction: 'forward' | 'backward' = suffix === 'forward/:count' ? 'forward' : 'backward';
    typed.get(
      `/streams/:stream/metadata/:event/${suffix}`,
      { schema: { params: PageParams, querystring: ReadQuery }, config: { responses: FEED_RESPONSES } },
      (request, reply) => {
        const params = { ...request.params, stream: `$$${request.params.stream}`, direction };
        return handleStreamFeed(context, request, reply, params, request.query);
      },
    );
  }
}

function registerWriteRoutes(app: FastifyInstance, context: StreamsContext, bodyLimit: number): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();
  const write = { schema: { params: StreamParams }, config: { responses: WRITE_RESPONSES }, bodyLimit };
  typed.post('/streams/:stream', write, (request, reply) =>
    handleAppend(context, request, reply, request.params),
  );
  typed.post(
    '/streams/:stream/incoming/:guid',
    { schema: { params: IncomingParams }, config: { responses: WRITE_RESPONSES }, bodyLimit },
    (request, reply) => handleAppend(context, request, reply, request.params),
  );
  typed.post('/streams/:stream/metadata', write, (request, reply) =>
    handleWriteMetadata(context, request, reply, request.params),
  );
  typed.delete(
    '/streams/:stream',
    { schema: { params: StreamParams }, config: { responses: DELETE_RESPONSES } },
    (request, reply) => handleDelete(context, request, reply, request.params),
  );
  const redirect = { config: { responses: REDIRECT_RESPONSES } };
  for (const path of ['/streams/:stream/', '/streams/:stream/metadata/']) {
    typed.post(path, redirect, (request, reply) => redirectTrailingSlash(request, reply));
  }
  typed.delete('/streams/:stream/', redirect, (request, reply) => redirectTrailingSlash(request, reply));
}

/**
 * The persistent-subscription endpoints of EventStoreDB's PersistentSubscriptionController,
 * mapped onto the subscriptions service (node/src/subscriptions/). HTTP only: parsing, ACLs,
 * status codes, media types.
 *
 * - `PUT /subscriptions/{stream}/{group}` create: 201 + Location; 409 exists; 400 invalid;
 *   `POST` update: 200 (drops consumers, resets); 404 missing; `DELETE`: 200; 404 missing.
 *   Bodies are JSON or XML (415 otherwise); answers are the completion message.
 * - `GET /subscriptions/{stream}/{group}[/{count}]?embed=` the next messages (1 by default,
 *   1..100) as `competingatom+xml` (the default) or `+json`; 406 for anything else. The
 *   `ES-LongPoll: N` header (an extension: the original ignores it here) waits up to N s for
 *   messages when none are there.
 * - `POST .../ack/{id}`, `.../ack?ids=`, `.../nack/{id}?action=`, `.../nack?ids=&action=`: 202,
 *   400 `messageid should be a properly formed guid`.
 * - `POST .../replayParked?stopAt=`; `GET /subscriptions`, `/subscriptions/{stream}`,
 *   `.../info` (JSON or XML); `POST /subscriptions/restart`;
 *   `GET /subscriptions/viewparkedmessages/{stream}/{group}/{event}/{backward|forward}/{count}`.
 *
 * ACLs (legacy policy): create/update/delete/restart/replayParked need `$admins` or `$ops`;
 * statistics need an authenticated user; reading, ack and nack need an authenticated user
 * allowed to read the stream. Every refusal is a 401 with an empty body.
 *
 * An HTTP consumer is its user on one connection (the client's address and port): what
 * `maxSubscriberCount` counts and consumer strategies choose between. A consumer leaves when
 * its connection closes or after it idles (see group-state.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

import type {
  CreateResult,
  GroupInfo,
  NackAction,
  PersistentSubscriptions,
  UpdateResult,
} from '../../subscriptions/service.js';
import type { SubscriptionSettings } from '../../subscriptions/settings.js';
import { parkedStreamOf } from '../../subscriptions/names.js';
import { originalOf } from '../../subscriptions/resolved-event.js';
import { errorResponses, type ResponseDocs } from '../openapi-responses.js';
import { authorizeRequest, replyUnauthorized } from '../security/http-auth.js';
import type { Security } from '../security/security.js';
import { parseEmbed } from '../streams/entry.js';
import { streamFeed } from '../streams/feed.js';
import { longPollSignal } from '../streams/long-poll.js';
import { MediaType, negotiate, type MediaTypeValue } from '../streams/media-types.js';
import { parseGuid, readLongPollSeconds, readResolveLinkTos } from '../streams/request-headers.js';
import { requestBaseUrl, sendStatus } from '../streams/stream-http.js';
import {
  admit,
  admitPrincipal,
  admitSettings,
  admitStreamReader,
  badRequest,
  consumerIdOf,
  consumerOf,
  DEFAULT_CODECS,
  headerValue,
  INVALID_HEADER,
  NOT_ACCEPTABLE,
  notRunning,
  parseInt32,
  sendCompletion,
  sendDocument,
  userOf,
} from './persistent-subscriptions-http.js';
import { GroupNameSchema, groupNameProblem, StreamNameSchema, streamNameProblem } from '../stream-names.js';
import { readDecisions } from '../security/read-authorization.js';
import {
  competingFeed,
  dtoXml,
  feedXml,
  infoDto,
  pagedDto,
  resolvedEntry,
  subscriptionPath,
  summaryDto,
} from './persistent-subscriptions-wire.js';
import { registerZodScope, type HostApp, type ZodScope } from './zod-route-scope.js';

export interface PersistentSubscriptionRoutesDeps {
  readonly security: Security;
  readonly subscriptions: PersistentSubscriptions;
  /** Aborted when the server starts closing: long polls answer at once. */
  readonly closing: AbortSignal;
}

/** AtomCodecs of the competing feed: XML first (the answer when no Accept is sent). */
const COMPETING_CODECS: readonly MediaTypeValue[] = [MediaType.CompetingXml, MediaType.CompetingJson];
const MESSAGE_COUNT_MAX = 100;
const NEVER_ABORTED = new AbortController().signal;
const BAD_GUID = 'messageid should be a properly formed guid';
const MAX_SUBSCRIBERS = 'Maximum subscriptions reached';
const BODY_LIMIT_BYTES = 1024 * 1024;

/** OpenAPI: what each route answers (openapi-responses.ts). */
function answers(
  success: Record<number, { description: string; mediaTypes?: readonly string[] }>,
  ...errors: number[]
): { responses: ResponseDocs } {
  return { responses: { ...success, ...errorResponses(...errors) } };
}
const COMPLETION = 'The completion message {correlationId, reason, result}';
const STATS_TYPES = [MediaType.Json, MediaType.Xml];
const FEED_TYPES = [MediaType.CompetingXml, MediaType.CompetingJson];

// Stream and group names are checked here, once, for every subscriptions route (stream-names.ts).
const GroupParams = z.object({
  stream: StreamNameSchema.describe('The stream the group subscribes to'),
  subscription: GroupNameSchema.describe('The group name'),
});
const StreamParams = z.object({ stream: StreamNameSchema });
const CountParams = GroupParams.extend({ count: z.string().describe('1..100') });
const MessageParams = GroupParams.extend({ messageid: z.string().describe('A message id (GUID)') });
const ParkedParams = z.object({
  stream: StreamNameSchema,
  group: GroupNameSchema,
  event: z.string().describe('An event number (or head, backward)'),
  count: z.string(),
});
const FormatQuery = z.looseObject({ format: z.string().optional() });
const EmbedQuery = z.looseObject({
  embed: z.string().optional().describe('none, content, rich, body, pretty, tryharder'),
});
const PagingQuery = z.looseObject({
  offset: z.string().optional().describe('Streams to skip (paged answer)'),
  count: z.string().optional().describe('Streams per page (paged answer)'),
});
const IdsQuery = z.looseObject({ ids: z.string().optional().describe('Comma-separated message ids') });
const ActionQuery = z.looseObject({
  action: z.string().optional().describe('Park, Retry, Skip or Stop'),
});
const NackQuery = z.looseObject({ ids: z.string().optional(), action: z.string().optional() });
const ReplayQuery = z.looseObject({ stopAt: z.string().optional().describe('Replay parked messages numbered below this') });
/** The create/update body (SubscriptionConfigData); property names match case-insensitively. */
const SubscriptionItem = z
  .object({
    resolveLinktos: z.boolean().optional(),
    startFrom: z.number().int().optional(),
    startPosition: z.string().optional(),
    extraStatistics: z.boolean().optional(),
    checkPointAfterMilliseconds: z.number().int().optional(),
    liveBufferSize: z.number().int().optional(),
    readBatchSize: z.number().int().optional(),
    bufferSize: z.number().int().optional(),
    maxCheckPointCount: z.number().int().optional(),
    maxRetryCount: z.number().int().optional(),
    maxSubscriberCount: z.number().int().optional(),
    messageTimeoutMilliseconds: z.number().int().optional(),
    minCheckPointCount: z.number().int().optional(),
    namedConsumerStrategy: z.enum(['RoundRobin', 'DispatchToSingle', 'Pinned', 'PinnedByCorrelation']).optional(),
    preferRoundRobin: z.boolean().optional(),
  })
  .describe('Subscription item (all fields optional); JSON or XML');

export function registerPersistentSubscriptionRoutes(
  app: HostApp,
  deps: PersistentSubscriptionRoutesDeps,
): void {
  registerZodScope(app, (scope) => {
    // Bodies are read by the handlers (create/update decide JSON or XML; others ignore them).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES },
      (_request, body, done) => done(null, body),
    );
    registerStatistics(scope, deps);
    registerManagement(scope, deps);
    registerMessages(scope, deps);
    registerParked(scope, deps);
  });
}

// ---- statistics ----------------------------------------------------------------------------

function registerStatistics(scope: ZodScope, deps: PersistentSubscriptionRoutesDeps): void {
  const tags = ['subscriptions'];
  scope.get(
    '/subscriptions',
    {
      schema: {
        tags,
        summary: 'Every subscription group (paged over streams with offset and count)',
        querystring: PagingQuery.extend(FormatQuery.shape),
      },
      config: answers({ 200: { description: 'Group summaries (or a page of them)', mediaTypes: STATS_TYPES } }, 400, 401, 406),
    },
    async (request, reply) => {
      const mediaType = await admit(request, reply, deps, 'authenticated', DEFAULT_CODECS);
      if (mediaType === undefined) return reply;
      const { offset, count } = request.query;
      let page: { offset: number; count: number } | undefined;
      if (offset !== undefined || count !== undefined) {
        const offsetValue = offset === undefined ? 0 : parseInt32(offset);
        if (offsetValue === undefined || offsetValue < 0)
          return badRequest(reply, `Offset "${offset ?? ''}" must be a non-negative integer`);
        const countValue = count === undefined ? undefined : parseInt32(count);
        if (countValue === undefined || countValue < 1)
          return badRequest(reply, `Count "${count ?? ''}" must be a positive integer`);
        page = { offset: offsetValue, count: countValue };
      }
      const all = deps.subscriptions.allInfos(page);
      if ('kind' in all) return notRunning(reply);
      const baseUrl = requestBaseUrl(request);
      if (page === undefined) {
        const summaries = all.infos.map((info) => summaryDto(baseUrl, info));
        return sendDocument(reply, 200, mediaType, summaries, () =>
          dtoXml('', summaries, 'SubscriptionSummary'),
        );
      }
      const paged = pagedDto(baseUrl, { ...page, total: all.total }, all.infos);
      return sendDocument(reply, 200, mediaType, paged, () => dtoXml('PagedSubscriptionInfo', paged));
    },
  );
  scope.get(
    '/subscriptions/:stream',
    {
      schema: { tags, summary: "A stream's subscription groups", params: StreamParams, querystring: FormatQuery },
      config: answers({ 200: { description: 'Group summaries', mediaTypes: STATS_TYPES }, 404: { description: 'No group on this stream ([])', mediaTypes: STATS_TYPES } }, 401, 406),
    },
    async (request, reply) => {
      const mediaType = await admit(request, reply, deps, 'authenticated', DEFAULT_CODECS);
      if (mediaType === undefined) return reply;
      const infos = deps.subscriptions.streamInfos(request.params.stream);
      if (infos !== undefined && 'kind' in infos) return notRunning(reply);
      const baseUrl = requestBaseUrl(request);
      const summaries = (infos ?? []).map((info) => summaryDto(baseUrl, info));
      return sendDocument(reply, infos === undefined ? 404 : 200, mediaType, summaries, () =>
        dtoXml('', summaries, 'SubscriptionSummary'),
      );
    },
  );
  scope.get(
    '/subscriptions/:stream/:subscription/info',
    {
      schema: { tags, summary: 'A group: settings, status, statistics, consumers', params: GroupParams, querystring: FormatQuery },
      config: answers({ 200: { description: 'The group', mediaTypes: STATS_TYPES } }, 401, 404, 406),
    },
    async (request, reply) => {
      const mediaType = await admit(request, reply, deps, 'authenticated', DEFAULT_CODECS);
      if (mediaType === undefined) return reply;
      const info = deps.subscriptions.info(request.params.stream, request.params.subscription);
      if (info === undefined) return sendStatus(reply, 404, 'Not Found');
      if ('kind' in info) return notRunning(reply);
      const dto = infoDto(requestBaseUrl(request), info as GroupInfo);
      return sendDocument(reply, 200, mediaType, dto, () => dtoXml('SubscriptionInfo', dto));
    },
  );
}

// ---- create, update, delete, restart, replay -------------------------------------------------

/** The route options of create (PUT) and update (POST): a settings body in JSON or XML. */
function settingsRouteOptions(
  summary: string,
  success: Record<number, { description: string; mediaTypes?: readonly string[] }>,
) {
  return {
    schema: { tags: ['subscriptions'], summary, params: GroupParams, querystring: FormatQuery, body: SubscriptionItem.optional() },
    config: answers(success, 400, 401, 406, 415),
    // The body is read as bytes and parsed by the handler (JSON or XML), which also checks the
    // names in the path (changeSettings), as the schema does for every other route.
    validatorCompiler: () => () => true,
  };
}

/** What create and update answer alike: an invalid setting (400) and a stopped service (503). */
type SettingsFailure = Extract<CreateResult | UpdateResult, { kind: 'fail' | 'not-running' }>;

/**
 * Create and update: admit the settings body, apply it, point Location at the group, and answer
 * the completion message; `answer` maps the outcomes of its own (success, exists, missing).
 */
async function changeSettings<R extends CreateResult | UpdateResult>(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: PersistentSubscriptionRoutesDeps,
  params: { readonly stream: string; readonly subscription: string },
  change: (stream: string, subscription: string, settings: SubscriptionSettings, user: string) => Promise<R>,
  answer: (result: Exclude<R, SettingsFailure>, mediaType: MediaTypeValue) => FastifyReply,
): Promise<FastifyReply> {
  const problem = streamNameProblem(params.stream) ?? groupNameProblem(params.subscription);
  if (problem !== undefined) return badRequest(reply, problem);
  const parsed = await admitSettings(request, reply, deps);
  if (parsed === undefined) return reply;
  const { stream, subscription } = params;
  const { mediaType, settings, user } = parsed;
  const result: CreateResult | UpdateResult = await change(stream, subscription, settings, user);
  reply.header('location', `${requestBaseUrl(request)}${subscriptionPath(stream, subscription)}`);
  switch (result.kind) {
    case 'fail':
      return sendCompletion(reply, 400, 'Bad Request', mediaType, 'Fail', result.message);
    case 'not-running':
      return notRunning(reply);
    default:
      return answer(result as Exclude<R, SettingsFailure>, mediaType);
  }
}

function registerManagement(scope: ZodScope, deps: PersistentSubscriptionRoutesDeps): void {
  const tags = ['subscriptions'];
  scope.put(
    '/subscriptions/:stream/:subscription',
    settingsRouteOptions('Create a subscription group ($admins)', {
      201: { description: `Created (Location: the group); ${COMPLETION}`, mediaTypes: STATS_TYPES },
      409: { description: `The group exists; ${COMPLETION}`, mediaTypes: STATS_TYPES },
    }),
    async (request, reply) =>
      changeSettings(request, reply, deps, request.params, deps.subscriptions.create.bind(deps.subscriptions), (result, mediaType) =>
        result.kind === 'created'
          ? sendCompletion(reply, 201, 'Created', mediaType, 'Success')
          : sendCompletion(reply, 409, 'Conflict', mediaType, 'AlreadyExists', result.message),
      ),
  );
  scope.post(
    '/subscriptions/:stream/:subscription',
    settingsRouteOptions('Update a group: drops its consumers and restarts it from its checkpoint ($admins)', {
      200: { description: `Updated; ${COMPLETION}`, mediaTypes: STATS_TYPES },
      404: { description: `No such group; ${COMPLETION}`, mediaTypes: STATS_TYPES },
    }),
    async (request, reply) =>
      changeSettings(request, reply, deps, request.params, deps.subscriptions.update.bind(deps.subscriptions), (result, mediaType) =>
        result.kind === 'updated'
          ? sendCompletion(reply, 200, 'OK', mediaType, 'Success')
          : sendCompletion(reply, 404, 'Not Found', mediaType, 'DoesNotExist', result.message),
      ),
  );
  scope.delete(
    '/subscriptions/:stream/:subscription',
    {
      schema: { tags, summary: 'Delete a group and its checkpoint and parked messages ($admins)', params: GroupParams },
      config: answers(
        {
          200: { description: `Deleted; ${COMPLETION}`, mediaTypes: [MediaType.Json] },
          404: { description: `No such group; ${COMPLETION}`, mediaTypes: [MediaType.Json] },
        },
        400, 401,
      ),
    },
    async (request, reply) => {
      const decision = await authorizeRequest(deps.security, request, reply, 'admins');
      if (!decision.allowed) return reply;
      const { stream, subscription } = request.params;
      const result = await deps.subscriptions.delete(stream, subscription, userOf(decision.principal));
      switch (result.kind) {
        case 'deleted':
          return sendCompletion(reply, 200, 'OK', MediaType.Json, 'Success');
        case 'not-found':
          return sendCompletion(reply, 404, 'Not Found', MediaType.Json, 'DoesNotExist', result.message);
        case 'fail':
          return sendCompletion(reply, 400, 'Bad Request', MediaType.Json, 'Fail', result.message);
        case 'not-running':
          return notRunning(reply);
      }
    },
  );
  scope.post(
    '/subscriptions/restart',
    {
      schema: { tags, summary: 'Restart the subsystem from the stored configuration ($admins or $ops)', querystring: FormatQuery },
      config: answers({ 200: { description: '"Restarting"', mediaTypes: STATS_TYPES } }, 400, 401, 406),
    },
    async (request, reply) => {
      const mediaType = await admit(request, reply, deps, 'ops-or-admins', DEFAULT_CODECS);
      if (mediaType === undefined) return reply;
      if (!deps.subscriptions.restart()) {
        const reason =
          'The Persistent Subscriptions subsystem cannot be restarted because it is not started.';
        return sendStatus(reply, 400, 'Bad Request', reason);
      }
      return sendDocument(reply, 200, mediaType, 'Restarting', () => dtoXml('string', 'Restarting'));
    },
  );
  scope.post(
    '/subscriptions/:stream/:subscription/replayParked',
    {
      schema: {
        tags,
        summary: 'Deliver parked messages again (those numbered below stopAt, or all) ($admins or $ops)',
        params: GroupParams,
        querystring: ReplayQuery,
      },
      config: answers(
        {
          200: { description: `Replay started; ${COMPLETION}`, mediaTypes: [MediaType.Json] },
          404: { description: `No such group; ${COMPLETION}`, mediaTypes: [MediaType.Json] },
        },
        400, 401,
      ),
    },
    async (request, reply) => {
      const decision = await authorizeRequest(deps.security, request, reply, 'ops-or-admins');
      if (!decision.allowed) return reply;
      const { stopAt } = request.query;
      let stopAtValue: number | undefined;
      if (stopAt !== undefined) {
        stopAtValue = /^\d+$/.test(stopAt) ? Number(stopAt) : Number.NaN;
        if (!Number.isSafeInteger(stopAtValue))
          return badRequest(reply, 'stopAt should be a properly formed positive long');
      }
      const { stream, subscription } = request.params;
      const result = deps.subscriptions.replayParked(stream, subscription, stopAtValue);
      switch (result.kind) {
        case 'ok':
          return sendCompletion(reply, 200, 'OK', MediaType.Json, 'Success');
        case 'not-found':
          return sendCompletion(reply, 404, 'Not Found', MediaType.Json, 'DoesNotExist', result.message);
        case 'not-running':
          return notRunning(reply);
      }
    },
  );
}

// ---- messages: read next, ack, nack ----------------------------------------------------------

const READ_ANSWERS = answers(
  {
    200: { description: 'The next messages, newest first, with ack/nack links', mediaTypes: FEED_TYPES },
    404: { description: 'No such group ("Not found.")', mediaTypes: FEED_TYPES },
  },
  400, 401, 406,
);
const ANSWER_ANSWERS = answers({ 202: { description: 'Accepted (no body)' } }, 400, 401);

function registerMessages(scope: ZodScope, deps: PersistentSubscriptionRoutesDeps): void {
  const tags = ['subscriptions'];
  const readNext = async (
    request: FastifyRequest,
    reply: FastifyReply,
    params: { stream: string; subscription: string; count?: string },
    embed: string | undefined,
  ): Promise<FastifyReply> => {
    const negotiated = negotiate(request.headers.accept, undefined, COMPETING_CODECS);
    if (negotiated === undefined) return sendStatus(reply, 406, NOT_ACCEPTABLE, NOT_ACCEPTABLE);
    const principal = await admitStreamReader(request, reply, deps, params.stream);
    if (principal === undefined) return reply;
    let count = 1;
    if (params.count !== undefined) {
      const parsed = parseInt32(params.count) ?? 0;
      if (parsed < 1 || parsed > MESSAGE_COUNT_MAX) {
        return badRequest(
          reply,
          `Message count must be an integer between 1 and ${MESSAGE_COUNT_MAX} 'count' ='${parsed}'`,
        );
      }
      count = parsed;
    }
    const longPollSeconds = headerValue(reply, () => readLongPollSeconds(request));
    if (longPollSeconds === INVALID_HEADER) return reply;
    const consumer = consumerOf(request, principal, deps.subscriptions);
    const outcome = await deps.subscriptions.pull(params.stream, params.subscription, consumer, count, {
      longPollMs: (longPollSeconds ?? 0) * 1000,
      // Only a long poll waits, and only it needs to know when the client goes away.
      signal: longPollSeconds === undefined ? NEVER_ABORTED : longPollSignal(reply.raw, deps.closing),
    });
    const mediaType = negotiated.mediaType;
    switch (outcome.kind) {
      case 'not-running':
        return notRunning(reply);
      case 'not-found':
        return sendDocument(reply, 404, mediaType, 'Not found.', () => dtoXml('string', 'Not found.'), 'Not Found');
      case 'fail':
        return sendDocument(reply, 400, mediaType, outcome.message, () => dtoXml('string', outcome.message), 'Bad Request');
      case 'max-subscribers':
        return badRequest(reply, MAX_SUBSCRIBERS);
      case 'ok': {
        // A message reached through a link shows its target only to a reader of the target's stream.
        const decisions = readDecisions(deps.security, principal);
        const deliveries = await Promise.all(
          outcome.deliveries.map(async (delivery) => ({
            ...delivery,
            message: { ...delivery.message, resolved: await decisions.resolved(delivery.message.resolved) },
          })),
        );
        const feed = competingFeed({
          baseUrl: requestBaseUrl(request),
          stream: params.stream,
          group: params.subscription,
          count,
          embed: parseEmbed(embed),
          deliveries,
        });
        return sendDocument(reply, 200, mediaType, feed, () => feedXml(feed));
      }
    }
  };
  scope.get(
    '/subscriptions/:stream/:subscription',
    {
      schema: { tags, summary: 'The next message (competingatom+xml or +json)', params: GroupParams, querystring: EmbedQuery },
      config: READ_ANSWERS,
    },
    (request, reply) => readNext(request, reply, request.params, request.query.embed),
  );
  scope.get(
    '/subscriptions/:stream/:subscription/:count',
    {
      schema: { tags, summary: 'The next count (1..100) messages', params: CountParams, querystring: EmbedQuery },
      config: READ_ANSWERS,
    },
    (request, reply) => readNext(request, reply, request.params, request.query.embed),
  );

  const answer = async (
    request: FastifyRequest,
    reply: FastifyReply,
    params: { stream: string; subscription: string },
    ids: string | undefined,
    apply: (ids: string[], consumerId: string) => void,
  ): Promise<FastifyReply> => {
    const principal = await admitStreamReader(request, reply, deps, params.stream);
    if (principal === undefined) return reply;
    const parsed = (ids ?? '').split(',').map(parseGuid);
    if (ids === undefined || parsed.some((id) => id === undefined)) return badRequest(reply, BAD_GUID);
    apply(parsed as string[], consumerIdOf(request, principal));
    return sendStatus(reply, 202, 'Accepted');
  };
  const ackOf =
    (params: { stream: string; subscription: string }) =>
    (ids: string[]): void =>
      deps.subscriptions.ack(params.stream, params.subscription, ids);
  const nackOf =
    (params: { stream: string; subscription: string }, action: string | undefined) =>
    (ids: string[], consumerId: string): void =>
      deps.subscriptions.nack(params.stream, params.subscription, ids, nackActionOf(action), consumerId);
  scope.post(
    '/subscriptions/:stream/:subscription/ack/:messageid',
    { schema: { tags, summary: 'Acknowledge a message', params: MessageParams }, config: ANSWER_ANSWERS },
    (request, reply) =>
      answer(request, reply, request.params, request.params.messageid, ackOf(request.params)),
  );
  scope.post(
    '/subscriptions/:stream/:subscription/ack',
    { schema: { tags, summary: 'Acknowledge messages', params: GroupParams, querystring: IdsQuery }, config: ANSWER_ANSWERS },
    (request, reply) =>
      answer(request, reply, request.params, request.query.ids, ackOf(request.params)),
  );
  scope.post(
    '/subscriptions/:stream/:subscription/nack/:messageid',
    {
      schema: { tags, summary: 'Negatively acknowledge a message', params: MessageParams, querystring: ActionQuery },
      config: ANSWER_ANSWERS,
    },
    (request, reply) =>
      answer(request, reply, request.params, request.params.messageid, nackOf(request.params, request.query.action)),
  );
  scope.post(
    '/subscriptions/:stream/:subscription/nack',
    {
      schema: { tags, summary: 'Negatively acknowledge messages', params: GroupParams, querystring: NackQuery },
      config: ANSWER_ANSWERS,
    },
    (request, reply) =>
      answer(request, reply, request.params, request.query.ids, nackOf(request.params, request.query.action)),
  );
}

/** `park|retry|skip|stop`, case-insensitive; anything else is Unknown (retry, or park at the limit). */
function nackActionOf(action: string | undefined): NackAction {
  switch ((action ?? '').toLowerCase()) {
    case 'park':
      return 'park';
    case 'retry':
      return 'retry';
    case 'skip':
      return 'skip';
    case 'stop':
      return 'stop';
    default:
      return 'unknown';
  }
}

// ---- parked messages -----------------------------------------------------------------------

function registerParked(scope: ZodScope, deps: PersistentSubscriptionRoutesDeps): void {
  for (const direction of ['backward', 'forward'] as const) {
    scope.get(
      `/subscriptions/viewparkedmessages/:stream/:group/:event/${direction}/:count`,
      {
        schema: {
          tags: ['subscriptions'],
          summary: `A page of the parked messages, read ${direction}`,
          params: ParkedParams,
          querystring: EmbedQuery,
        },
        config: answers({ 200: { description: 'A page of the parked-message stream', mediaTypes: FEED_TYPES } }, 400, 401, 404, 406, 410),
      },
      async (request, reply) => {
        const admitted = await admitPrincipal(request, reply, deps, 'authenticated', COMPETING_CODECS);
        if (admitted === undefined) return reply;
        const { mediaType, principal } = admitted;
        const { stream, group, event, count } = request.params;
        const head = direction === 'backward' && event === 'head';
        const from = head ? -1 : /^\d+$/.test(event) ? Number(event) : Number.NaN;
        if (!Number.isSafeInteger(from)) return badRequest(reply, `'${event}' is not valid event number`);
        const countValue = parseInt32(count);
        if (countValue === undefined || countValue <= 0)
          return badRequest(reply, `'${count}' is not valid count. Should be positive integer`);
        const resolveLinkTos = headerValue(reply, () => readResolveLinkTos(request));
        if (resolveLinkTos === INVALID_HEADER) return reply;
        if (!(await deps.security.canAccessStream(principal, parkedStreamOf(stream, group), 'r'))) {
          return replyUnauthorized(reply);
        }
        const read = await deps.subscriptions.readParked(stream, group, {
          fromEventNumber: from,
          count: countValue,
          direction,
          resolveLinkTos,
        });
        if (read.kind === 'stream-not-found') return sendStatus(reply, 404, 'Not Found');
        if (read.kind === 'stream-deleted') return sendStatus(reply, 410, 'Deleted');
        const baseUrl = requestBaseUrl(request);
        const decisions = readDecisions(deps.security, principal);
        const visible = await Promise.all(read.events.map((resolved) => decisions.resolved(resolved)));
        const records = visible.map(originalOf);
        const last = read.lastEventNumber;
        const feed = streamFeed(
          {
            stream: read.parkedStream,
            direction,
            fromEventNumber: head ? last : from,
            count: countValue,
            lastEventNumber: last,
            isEndOfStream: read.isEndOfStream,
            headRequested: head,
            events: records,
            eTag: undefined,
          },
          { baseUrl, embed: 'none' },
        );
        const embed = parseEmbed(request.query.embed);
        const newestFirst = direction === 'forward' ? [...visible].reverse() : [...visible];
        feed.entries = newestFirst.map((resolved) => resolvedEntry(resolved, { baseUrl, embed }));
        return sendDocument(reply, 200, mediaType, feed, () => feedXml(feed));
      },
    );
  }
}

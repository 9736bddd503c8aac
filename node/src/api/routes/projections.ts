/**
 * The projections endpoints of EventStoreDB's ProjectionsController, mapped onto the projection
 * manager (node/src/projections/). Responses are JSON only (406 when the client accepts no JSON);
 * errors are text/plain: 404 `Not Found`, 409 `Conflict`, 500 `Failed`, 401 `Not Authorized`,
 * 400 `Bad Request`.
 *
 * - `GET /projections/{any|all-non-transient|transient|onetime|continuous}`: `{"projections": [...]}`
 * - `POST /projections/{transient|onetime|continuous}?name=&type=&enabled=&emit=&checkpoints=&trackemittedstreams=`:
 *   body = the source (any Content-Type, but one is required: 415 without), 201 + Location
 * - `GET /projection/{name}`, `/statistics`, `/state?partition=`, `/result?partition=` (ES-Position),
 *   `/query[?config=yes]`, `PUT /query?type=&emit=`, `POST /command/{enable|disable|reset|abort}`,
 *   `GET|PUT /config`, `DELETE /projection/{name}?deleteStateStream=&deleteCheckpointStream=&deleteEmittedStreams=`
 * - `POST /projections/read-events`, `POST /projections/restart`
 *
 * Boolean parameters accept yes/true/1 and no/false/0. As the original's URI templates match
 * the decoded URL, a query sent as one escaped parameter (`?name=x%26emit=yes`, as the original's
 * documentation does with curl) is read as separate parameters.
 * Policies: $ops/$admins for delete, config and restart, authenticated otherwise; changing a
 * non-transient projection also needs $ops/$admins (401 `Not authorized`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ProjectionError, type ListFilter, type RunAs } from '../../projections/management/projection-manager.js';
import { ProjectionConfigSchema, type ProjectionMode } from '../../projections/projection-types.js';
import type { ProjectionsSubsystem } from '../../projections/projections-subsystem.js';
import { ReadEventsRequestSchema } from '../../projections/read-events.js';
import type { Authorizer, Principal } from '../auth-types.js';
import { authorizeRequest, type EndpointPolicy } from '../security/http-auth.js';
import { MediaType, negotiate, parseRequestContentType } from '../streams/media-types.js';
import { CACHE_NEVER, requestBaseUrl, sendStatus } from '../streams/stream-http.js';
import type { HostApp } from './zod-route-scope.js';
import { errorResponses, type ResponseDocs } from '../openapi-responses.js';

export interface ProjectionsRoutesDeps {
  readonly security: Authorizer;
  /**
   * Undefined with RunProjections None: the routes are still registered (so the OpenAPI
   * document lists them) and every one answers 404 with PROJECTIONS_OFF_MESSAGE, as an
   * unknown route answers 404 in the original.
   */
  readonly projections: ProjectionsSubsystem | undefined;
}

export const PROJECTIONS_OFF_MESSAGE =
  'Projections are not running on this node: start it with --run-projections System (the system projections) or All.';

const JSON_ONLY = [MediaType.Json] as const;
const LIST_FILTERS: Record<string, ListFilter> = {
  any: 'Any',
  'all-non-transient': 'AllNonTransient',
  transient: 'Transient',
  onetime: 'OneTime',
  continuous: 'Continuous',
};
const CREATE_MODES: Record<string, ProjectionMode> = { transient: 'Transient', onetime: 'OneTime', continuous: 'Continuous' };
const COMMANDS = ['enable', 'disable', 'reset', 'abort'] as const;
const OPERATORS = ['$admins', '$ops'];

const NameParams = z.object({ name: z.string().min(1) });

/** The query string as the original's URI templates see it (decoded before matching). */
function queryOf(request: FastifyRequest): URLSearchParams {
  const url = request.raw.url ?? '';
  const at = url.indexOf('?');
  let query = at < 0 ? '' : url.slice(at + 1);
  if (!query.includes('&') && /%26/i.test(query)) {
    try {
      query = decodeURIComponent(query);
    } catch {
      // Left as it is: the parameters just are not split.
    }
  }
  return new URLSearchParams(query);
}

/** IsOn(match, option, def): yes/true/1 are true; with a nullable default, no/false/0 are false. */
function flag(query: URLSearchParams, name: string, fallback: boolean): boolean {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  return ['yes', 'true', '1'].includes(raw.toLowerCase());
}

function optionalFlag(query: URLSearchParams, name: string): boolean | undefined {
  const raw = query.get(name)?.toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if (['yes', 'true', '1'].includes(raw)) return true;
  if (['no', 'false', '0'].includes(raw)) return false;
  return undefined;
}

function runAsOf(principal: Principal | undefined): RunAs | undefined {
  if (principal === undefined) return undefined;
  const isOperator =
    principal.login === 'admin' || principal.login === 'ops' || principal.groups.some((g) => OPERATORS.includes(g));
  const isAdmin = principal.groups.includes('$admins');
  return { name: principal.login, roles: principal.groups, isOperator, isAdmin };
}

function sendJson(reply: FastifyReply, status: number, reason: string, value: unknown): FastifyReply {
  return sendStatus(reply, status, reason, JSON.stringify(value, null, 2), MediaType.Json);
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  if (err instanceof ProjectionError) {
    switch (err.kind) {
      case 'not-found':
        return sendStatus(reply, 404, 'Not Found', err.message);
      case 'conflict':
        return sendStatus(reply, 409, 'Conflict', err.message);
      case 'not-authorized':
        return sendStatus(reply, 401, 'Not Authorized', err.message);
      case 'bad-request':
        return sendStatus(reply, 400, 'Bad Request', err.message);
      case 'failed':
        return sendStatus(reply, 500, 'Failed', err.message);
    }
  }
  throw err;
}

type Handler = (request: FastifyRequest, reply: FastifyReply, principal: Principal | undefined) => Promise<FastifyReply>;

/**
 * `msgTypeId` of `GET /projection/{name}/config`: the original's body is its ProjectionConfig
 * message serialized, whose message type id comes first. Its value is an internal number that
 * differs between the original's versions; clients read the other fields, some send it back.
 */
export const PROJECTION_CONFIG_MSG_TYPE_ID = 331;

const JSON_TYPES = [MediaType.Json];

/** The answers of a projection route, by method and path (see openapi-responses.ts). */
function projectionResponses(method: string | readonly string[], url: string): ResponseDocs {
  const verb = (Array.isArray(method) ? method[0] : method) as string;
  if (url === '/projections') return { 302: { description: 'Moved to the web interface (Location)' }, ...errorResponses(404) };
  if (verb === 'GET' || verb === 'HEAD')
    return { 200: { description: 'OK', mediaTypes: url.endsWith('/query') ? [...JSON_TYPES, 'application/javascript'] : JSON_TYPES }, ...errorResponses(401, 404, 406) };
  const created = verb === 'POST' && /^\/projections\/[^/]+$/.test(url) && !url.endsWith('/restart') && !url.endsWith('/read-events');
  return {
    [created ? 201 : 200]: { description: created ? 'Created' : 'OK', mediaTypes: JSON_TYPES },
    ...errorResponses(400, 401, 404, 406, 409, 415),
  };
}

export function registerProjectionsRoutes(app: HostApp, deps: ProjectionsRoutesDeps): void {
  const { security, projections } = deps;
  const running = (): ProjectionsSubsystem => {
    if (projections === undefined) throw new ProjectionError('not-found', PROJECTIONS_OFF_MESSAGE);
    return projections;
  };
  const manager = (): ProjectionsSubsystem['manager'] => running().manager;

  /** Authorizes, negotiates JSON, runs the handler and maps projection errors. */
  const route =
    (policy: EndpointPolicy, handler: Handler, options: { json?: boolean } = {}) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const decision = await authorizeRequest(security, request, reply, policy);
      if (!decision.allowed) return reply;
      if (options.json !== false && negotiate(request.headers.accept, undefined, JSON_ONLY) === undefined) {
        const reason = 'Requested URI is not available in requested format';
        return sendStatus(reply, 406, reason, reason);
      }
      try {
        return await handler(request, reply, decision.principal);
      } catch (err: unknown) {
        return sendError(reply, err);
      }
    };

  const urlOf = (request: FastifyRequest) => (path: string) => `${requestBaseUrl(request)}${path}`;
  const name = (request: FastifyRequest): string => (request.params as { name: string }).name;
  const updated = (reply: FastifyReply, projection: string): FastifyReply => sendJson(reply, 200, 'OK', { name: projection });

  void app.register(async (scope: FastifyInstance) => {
    if (projections === undefined)
      scope.addHook('onRequest', async (_request, reply) => sendStatus(reply, 404, 'Not Found', PROJECTIONS_OFF_MESSAGE));
    // What each projection route can answer, for the OpenAPI document (404 always: projections off).
    scope.addHook('onRoute', (options) => {
      options.config = { ...options.config, responses: options.config?.responses ?? projectionResponses(options.method, options.url) };
    });
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 16 * 1024 * 1024 }, (_request, body, done) => done(null, body));
    const bodyText = (request: FastifyRequest): string => (Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '');

    scope.get('/projections', (request, reply) => {
      reply.header('location', `${requestBaseUrl(request)}/web/projections.htm`);
      return sendStatus(reply, 302, 'Found', 'Moved');
    });

    for (const [segment, filter] of Object.entries(LIST_FILTERS)) {
      scope.get(
        `/projections/${segment}`,
        route('authenticated', async (request, reply) => {
          reply.header('cache-control', CACHE_NEVER);
          return sendJson(reply, 200, 'OK', { projections: manager().list(filter, urlOf(request)) });
        }),
      );
    }

    for (const [segment, mode] of Object.entries(CREATE_MODES)) {
      scope.post(
        `/projections/${segment}`,
        route('authenticated', async (request, reply, principal) => {
          if (request.headers['content-type'] === undefined) {
            const reason = 'Invalid or missing Content-Type';
            return sendStatus(reply, 415, reason, reason);
          }
          const query = queryOf(request);
          const emitEnabled = mode !== 'Transient' && flag(query, 'emit', false);
          const created = await manager().create(
            {
              mode,
              name: query.get('name') ?? undefined,
              query: bodyText(request),
              handlerType: query.get('type') ?? 'JS',
              enabled: flag(query, 'enabled', true),
              emitEnabled,
              checkpointsEnabled: mode === 'Continuous' || flag(query, 'checkpoints', false),
              trackEmittedStreams: emitEnabled && flag(query, 'trackemittedstreams', false),
            },
            runAsOf(principal),
          );
          reply.header('location', `${requestBaseUrl(request)}/projection/${encodeURIComponent(created)}`);
          return sendJson(reply, 201, 'Created', { name: created });
        }),
      );
    }

    scope.post(
      '/projections/read-events',
      route('authenticated', async (request, reply, principal) => {
        if (parseRequestContentType(request.headers['content-type'], JSON_ONLY).kind !== 'ok') {
          const reason = 'Invalid or missing Content-Type';
          return sendStatus(reply, 415, reason, reason);
        }
        let parsed;
        try {
          parsed = ReadEventsRequestSchema.safeParse(JSON.parse(bodyText(request)));
        } catch {
          parsed = undefined;
        }
        if (parsed === undefined || !parsed.success) return sendStatus(reply, 400, 'Bad Request', 'Invalid read-events request');
        // The page is read as the requesting user: every source stream must be readable to them.
        const q = parsed.data.query;
        const sources = [...(q.allStreams === true ? ['$all'] : []), ...(q.streams ?? []), ...(q.categories ?? []).map((c) => `$ce-${c}`)];
        for (const stream of sources) {
          if (!(await security.canAccessStream(principal, stream, 'r'))) return sendStatus(reply, 401, 'Not Authorized', 'Not authorized');
        }
        try {
          const mayRead = (stream: string): Promise<boolean> => security.canAccessStream(principal, stream, 'r');
          return sendStatus(reply, 200, 'OK', await running().readEvents(parsed.data, mayRead), MediaType.Json);
        } catch (err: unknown) {
          return sendStatus(reply, 400, 'Bad Request', err instanceof Error ? err.message : String(err));
        }
      }),
    );

    scope.post(
      '/projections/restart',
      route('ops-or-admins', async (_request, reply) => {
        await running().stop();
        await running().start();
        return sendJson(reply, 200, 'OK', 'Restarting');
      }),
    );

    scope.get(
      '/projection/:name',
      { schema: { params: NameParams } },
      route('authenticated', async (request, reply) => {
        reply.header('cache-control', CACHE_NEVER);
        return sendJson(reply, 200, 'OK', manager().statistics(name(request), urlOf(request)));
      }),
    );

    scope.get(
      '/projection/:name/statistics',
      { schema: { params: NameParams } },
      route('authenticated', async (request, reply) => {
        reply.header('cache-control', CACHE_NEVER);
        return sendJson(reply, 200, 'OK', { projections: [manager().statistics(name(request), urlOf(request))] });
      }),
    );

    for (const kind of ['state', 'result'] as const) {
      scope.get(
        `/projection/:name/${kind}`,
        { schema: { params: NameParams } },
        route('authenticated', async (request, reply) => {
          const partition = queryOf(request).get('partition') ?? '';
          const answer = kind === 'state' ? await manager().state(name(request), partition) : await manager().result(name(request), partition);
          if (answer.position !== undefined) reply.header('ES-Position', answer.position).header('SVC-Position', answer.position);
          return sendStatus(reply, 200, 'OK', answer.body, MediaType.Json);
        }),
      );
    }

    scope.get(
      '/projection/:name/query',
      { schema: { params: NameParams } },
      route(
        'authenticated',
        async (request, reply) => {
          const query = await manager().query(name(request));
          if (flag(queryOf(request), 'config', false)) return sendJson(reply, 200, 'OK', query.config);
          return sendStatus(reply, 200, 'OK', query.query, 'application/javascript');
        },
        { json: false },
      ),
    );

    scope.put(
      '/projection/:name/query',
      { schema: { params: NameParams } },
      route('authenticated', async (request, reply, principal) => {
        const query = queryOf(request);
        const projection = name(request);
        await manager().updateQuery(projection, bodyText(request), query.get('type') ?? undefined, optionalFlag(query, 'emit'), runAsOf(principal));
        return updated(reply, projection);
      }),
    );

    for (const command of COMMANDS) {
      scope.post(
        `/projection/:name/command/${command}`,
        { schema: { params: NameParams } },
        route('authenticated', async (request, reply, principal) => {
          const projection = name(request);
          const runAs = runAsOf(principal);
          if (command === 'enable') await manager().enable(projection, runAs);
          else if (command === 'disable') await manager().disable(projection, runAs);
          else if (command === 'reset') await manager().reset(projection, runAs);
          else await manager().abort(projection, runAs);
          return updated(reply, projection);
        }),
      );
    }

    scope.get(
      '/projection/:name/config',
      { schema: { params: NameParams } },
      route('ops-or-admins', async (request, reply) => {
        // The original answers its ProjectionConfig message serialized, message type id first.
        return sendJson(reply, 200, 'OK', { msgTypeId: PROJECTION_CONFIG_MSG_TYPE_ID, ...manager().getConfig(name(request)) });
      }),
    );

    scope.put(
      '/projection/:name/config',
      { schema: { params: NameParams } },
      route('ops-or-admins', async (request, reply, principal) => {
        if (parseRequestContentType(request.headers['content-type'], JSON_ONLY).kind !== 'ok') {
          const reason = 'Invalid or missing Content-Type';
          return sendStatus(reply, 415, reason, reason);
        }
        const projection = name(request);
        let body: unknown;
        try {
          body = JSON.parse(bodyText(request));
        } catch {
          return sendStatus(reply, 400, 'Bad Request', 'Failed to parse the projection config');
        }
        const current = manager().getConfig(projection);
        const parsed = ProjectionConfigSchema.safeParse({ ...current, ...(typeof body === 'object' && body !== null ? body : {}) });
        if (!parsed.success) return sendStatus(reply, 400, 'Bad Request', 'Failed to parse the projection config');
        const timeout = parsed.data.projectionExecutionTimeout;
        if (timeout !== null && timeout !== undefined && timeout <= 0)
          return sendStatus(reply, 400, 'Bad Request', `projectionExecutionTimeout should be positive. Found : ${timeout}`);
        await manager().updateConfig(projection, parsed.data, runAsOf(principal));
        return updated(reply, projection);
      }),
    );

    scope.delete(
      '/projection/:name',
      { schema: { params: NameParams } },
      route('ops-or-admins', async (request, reply, principal) => {
        const query = queryOf(request);
        const projection = name(request);
        await manager().delete(
          projection,
          {
            deleteCheckpointStream: flag(query, 'deleteCheckpointStream', false),
            deleteStateStream: flag(query, 'deleteStateStream', false),
            deleteEmittedStreams: flag(query, 'deleteEmittedStreams', false),
          },
          runAsOf(principal),
        );
        return updated(reply, projection);
      }),
    );
  });
}

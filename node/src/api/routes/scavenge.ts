/**
 * The scavenge admin endpoints of EventStoreDB's AdminController:
 *
 * - `POST /admin/scavenge?threads=&threshold=&throttlePercent=&syncOnly=&startFromChunk=`
 *   starts a run and answers its id; 400 with a plain-text reason when a parameter is invalid
 *   or a run is already going;
 * - `GET /admin/scavenge/current`: the running scavenge, or empty strings when none;
 * - `GET /admin/scavenge/last`: the last run of this process and its result (`Unknown` after a
 *   restart);
 * - `GET /admin/scavenge/{scavengeId}` (the `scavengeLink` of the answers above): that run,
 *   `InProgress` or the result its history stream records; 404 when unknown;
 * - `DELETE /admin/scavenge/{scavengeId|current}`: stops the run, answers once it has stopped;
 *   404 `Scavenge Id does not exist` otherwise.
 *
 * All need `$admins` or `$ops` (401 with an empty body otherwise). Responses are negotiated
 * over EventStoreDB's admin codecs, text/plain first: no Accept header gives the DTO's text form
 * (`ScavengeId: <id>`), JSON is indented with camelCase keys, XML uses the DTO names. Request
 * bodies are ignored, whatever their type, as the original declares no request codec.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

import { EventDbError, FatalError } from '../../errors.js';
import type { ScavengeParams } from '../../storage/event-db-types.js';
import type { Authorizer } from '../auth-types.js';
import {
  CURRENT_SCAVENGE,
  type ScavengeService,
} from '../../scavenge/scavenge-service.js';
import { parseScavengeParams, ScavengeStartQuerySchema } from '../scavenge/scavenge-params.js';
import { authorizeRequest } from '../security/http-auth.js';
import { MediaType, negotiate, type MediaTypeValue } from '../streams/media-types.js';
import { sendStatus } from '../streams/stream-http.js';
import { registerZodScope, type ZodScope, type HostApp } from './zod-route-scope.js';
import { errorResponses } from '../openapi-responses.js';

export interface ScavengeRoutesDeps {
  readonly security: Authorizer;
  readonly scavenges: ScavengeService;
}

/** EventStoreDB's admin codecs, in order: the first is the default. */
const ADMIN_CODECS: readonly MediaTypeValue[] = [
  MediaType.PlainText,
  MediaType.Json,
  MediaType.Xml,
  MediaType.ApplicationXml,
];
const ADMIN_ERRORS = errorResponses(400, 401, 406);
const EMPTY_GUID = '00000000-0000-0000-0000-000000000000';
const NOT_FOUND_MESSAGE = 'Scavenge Id does not exist';
const ALREADY_RUNNING_MESSAGE = 'Scavenge is already running';

export const ScavengeStartedSchema = z.object({ scavengeId: z.string() });
/** Where a running scavenge is (not in the original, which logs it only). */
export const ScavengeProgressSchema = z
  .object({
    stage: z.string().describe('Starting, Accumulating, Calculating, ExecutingChunks, MergingChunks, ExecutingIndex, Cleaning or Done'),
    chunksDone: z.number().int().describe('Logical chunks executed so far'),
    chunksTotal: z.number().int().describe('Logical chunks below the scavenge point'),
    percent: z.number().describe('chunksDone of chunksTotal in percent (100 once past chunk execution)'),
  })
  .describe('Only while the scavenge runs');
export const ScavengeCurrentSchema = z.object({
  scavengeId: z.string().describe('Empty when no scavenge is running'),
  scavengeLink: z.string().describe('/admin/scavenge/{scavengeId}, or empty'),
  progress: ScavengeProgressSchema.optional(),
});
export const ScavengeLastSchema = z.object({
  scavengeId: z.string().describe('The all-zero UUID when no scavenge ran since the node started'),
  scavengeLink: z.string(),
  scavengeResult: z.enum(['Unknown', 'InProgress', 'Success', 'Stopped', 'Errored']),
});
export const ScavengeRunSchema = z.object({
  scavengeId: z.string(),
  scavengeLink: z.string(),
  scavengeResult: z
    .string()
    .describe('InProgress, or the recorded result: Success, Stopped, Errored, Interrupted (Unknown until recorded)'),
  progress: ScavengeProgressSchema.optional(),
});
const FormatQuerySchema = z.object({
  format: z.string().optional().describe('json, xml or text; overrides the Accept header'),
});
const StopParamsSchema = z.object({
  scavengeId: z.string().describe(`A scavenge id, or \`${CURRENT_SCAVENGE}\``),
});
const TEXT_ERROR = z.string().describe('text/plain reason');

/** A response DTO in EventStoreDB's three renderings. */
interface AdminDto {
  /** XML root element name. */
  readonly name: string;
  readonly json: unknown;
  readonly text: string;
  /** XML child elements, in order. */
  readonly fields: ReadonlyArray<readonly [string, string]>;
}

export function registerScavengeRoutes(app: HostApp, deps: ScavengeRoutesDeps): void {
  registerZodScope(app, (scope) => {
    // The original declares no request codec: a body, of any type, is read and ignored.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null));
    registerStart(scope, deps);
    registerReads(scope, deps);
    registerRunStatus(scope, deps);
    registerStop(scope, deps);
  });
}

function registerStart(scope: ZodScope, deps: ScavengeRoutesDeps): void {
  scope.post(
    '/admin/scavenge',
    {
      schema: {
        tags: ['admin'],
        summary: 'Start a scavenge (or resume a stopped one)',
        querystring: ScavengeStartQuerySchema,
        response: { 200: ScavengeStartedSchema, 400: TEXT_ERROR },
      },
      config: { responses: { 200: { description: 'Started', mediaTypes: ADMIN_CODECS }, ...ADMIN_ERRORS } },
    },
    async (req, reply) => {
      const mediaType = await admit(req, reply, deps, req.query.format);
      if (mediaType === undefined) return reply;
      const parsed = parseScavengeParams(req.query);
      if (parsed.kind === 'invalid') return sendStatus(reply, 400, 'Bad Request', parsed.message);
      if (parsed.startFromChunkGiven) {
        req.log.warn('startFromChunk is deprecated and ignored');
      }
      if (parsed.threadsRequested !== undefined) {
        req.log.warn(
          { threadsRequested: parsed.threadsRequested, threads: parsed.params.threads },
          'too many scavenging threads requested; capping',
        );
      }
      const started = startOrRefuse(deps.scavenges, parsed.params);
      switch (started.kind) {
        case 'already-running':
          return sendStatus(reply, 400, 'Bad Request', ALREADY_RUNNING_MESSAGE);
        case 'refused':
          return sendStatus(reply, started.status, started.reason, started.message);
        case 'started':
          return sendDto(reply, mediaType, {
            name: 'ScavengeResultDto',
            json: { scavengeId: started.scavengeId },
            text: `ScavengeId: ${started.scavengeId}`,
            fields: [['ScavengeId', started.scavengeId]],
          });
      }
    },
  );
}

function registerReads(scope: ZodScope, deps: ScavengeRoutesDeps): void {
  scope.get(
    '/admin/scavenge/current',
    {
      schema: {
        tags: ['admin'],
        summary: 'The running scavenge, if any',
        querystring: FormatQuerySchema,
        response: { 200: ScavengeCurrentSchema },
      },
      config: { responses: { 200: { description: 'The running scavenge', mediaTypes: ADMIN_CODECS }, ...ADMIN_ERRORS } },
    },
    async (req, reply) => {
      const mediaType = await admit(req, reply, deps, req.query.format);
      if (mediaType === undefined) return reply;
      const scavengeId = deps.scavenges.currentScavengeId() ?? '';
      const scavengeLink = scavengeId === '' ? '' : scavengeLinkOf(scavengeId);
      const progress = scavengeId === '' ? undefined : deps.scavenges.progress(scavengeId);
      return sendDto(reply, mediaType, {
        name: 'ScavengeGetCurrentResultDto',
        json: { scavengeId, scavengeLink, ...(progress === undefined ? {} : { progress }) },
        text: `ScavengeId: ${scavengeId}, ScavengeLink: ${scavengeLink}${progressText(progress)}`,
        fields: [
          ['ScavengeId', scavengeId],
          ['ScavengeLink', scavengeLink],
          ...progressFields(progress),
        ],
      });
    },
  );
  scope.get(
    '/admin/scavenge/last',
    {
      schema: {
        tags: ['admin'],
        summary: 'The last scavenge started since the node started, and its result',
        querystring: FormatQuerySchema,
        response: { 200: ScavengeLastSchema },
      },
      config: { responses: { 200: { description: 'The last scavenge', mediaTypes: ADMIN_CODECS }, ...ADMIN_ERRORS } },
    },
    async (req, reply) => {
      const mediaType = await admit(req, reply, deps, req.query.format);
      if (mediaType === undefined) return reply;
      const last = deps.scavenges.last();
      const scavengeId = last.scavengeId ?? EMPTY_GUID;
      const scavengeLink = last.scavengeId === undefined ? '' : scavengeLinkOf(last.scavengeId);
      const scavengeResult = last.result;
      return sendDto(reply, mediaType, {
        name: 'ScavengeGetLastResultDto',
        json: { scavengeId, scavengeLink, scavengeResult },
        text:
          `ScavengeId: ${scavengeId}, ScavengeLink: ${scavengeLink}, ` +
          `ScavengeResult: ${scavengeResult}`,
        fields: [
          ['ScavengeId', scavengeId],
          ['ScavengeLink', scavengeLink],
          ['ScavengeResult', scavengeResult],
        ],
      });
    },
  );
}

function registerRunStatus(scope: ZodScope, deps: ScavengeRoutesDeps): void {
  scope.get(
    '/admin/scavenge/:scavengeId',
    {
      schema: {
        tags: ['admin'],
        summary: 'One scavenge by id (the scavengeLink of the other answers): running, or its recorded result',
        params: StopParamsSchema,
        querystring: FormatQuerySchema,
        response: { 200: ScavengeRunSchema, 404: TEXT_ERROR },
      },
      config: { responses: { 200: { description: 'The scavenge', mediaTypes: ADMIN_CODECS }, ...ADMIN_ERRORS, ...errorResponses(404) } },
    },
    async (req, reply) => {
      const mediaType = await admit(req, reply, deps, req.query.format);
      if (mediaType === undefined) return reply;
      const scavengeId = req.params.scavengeId;
      const scavengeResult = await deps.scavenges.status(scavengeId);
      if (scavengeResult === undefined) return sendStatus(reply, 404, 'Not Found', NOT_FOUND_MESSAGE);
      const scavengeLink = scavengeLinkOf(scavengeId);
      const progress = deps.scavenges.progress(scavengeId);
      return sendDto(reply, mediaType, {
        name: 'ScavengeGetResultDto',
        json: { scavengeId, scavengeLink, scavengeResult, ...(progress === undefined ? {} : { progress }) },
        text: `ScavengeId: ${scavengeId}, ScavengeLink: ${scavengeLink}, ScavengeResult: ${scavengeResult}${progressText(progress)}`,
        fields: [
          ['ScavengeId', scavengeId],
          ['ScavengeLink', scavengeLink],
          ['ScavengeResult', scavengeResult],
          ...progressFields(progress),
        ],
      });
    },
  );
}

function registerStop(scope: ZodScope, deps: ScavengeRoutesDeps): void {
  scope.delete(
    '/admin/scavenge/:scavengeId',
    {
      schema: {
        tags: ['admin'],
        summary: 'Stop the running scavenge; answers once it has stopped',
        params: StopParamsSchema,
        querystring: FormatQuerySchema,
        response: { 200: z.string().describe('The stopped scavenge id'), 404: TEXT_ERROR },
      },
      config: { responses: { 200: { description: 'Stopped', mediaTypes: ADMIN_CODECS }, ...ADMIN_ERRORS, ...errorResponses(404) } },
    },
    async (req, reply) => {
      const mediaType = await admit(req, reply, deps, req.query.format);
      if (mediaType === undefined) return reply;
      const stopped = await deps.scavenges.stop(req.params.scavengeId);
      if (stopped.kind === 'not-found') {
        return sendStatus(reply, 404, 'Not Found', NOT_FOUND_MESSAGE);
      }
      return sendDto(reply, mediaType, {
        name: 'string',
        json: stopped.scavengeId,
        text: stopped.scavengeId,
        fields: [],
      });
    },
  );
}

type StartOutcome =
  | ReturnType<ScavengeService['start']>
  | { readonly kind: 'refused'; readonly status: number; readonly reason: string; message: string };

/** An engine refusal (e.g. shutting down) answers its own status instead of a 500. */
function startOrRefuse(scavenges: ScavengeService, params: ScavengeParams): StartOutcome {
  try {
    return scavenges.start(params);
  } catch (err: unknown) {
    if (!(err instanceof EventDbError) || err instanceof FatalError) throw err;
    const status = err.httpStatus;
    const reason = status === 503 ? 'Service Unavailable' : status < 500 ? 'Bad Request' : 'Error';
    return { kind: 'refused', status, reason, message: err.message };
  }
}

/**
 * Negotiates the response type (406 when none fits), then requires `$admins` or `$ops` (401).
 * Undefined when a reply has been sent.
 */
async function admit(
  req: FastifyRequest,
  reply: FastifyReply,
  deps: ScavengeRoutesDeps,
  format: string | undefined,
): Promise<MediaTypeValue | undefined> {
  const negotiated = negotiate(req.headers.accept, format, ADMIN_CODECS);
  if (negotiated === undefined) {
    const reason = 'Requested URI is not available in requested format';
    sendStatus(reply, 406, reason, reason);
    return undefined;
  }
  const decision = await authorizeRequest(deps.security, req, reply, 'ops-or-admins');
  return decision.allowed ? negotiated.mediaType : undefined;
}

function scavengeLinkOf(scavengeId: string): string {
  return `/admin/scavenge/${scavengeId}`;
}

type Progress = z.infer<typeof ScavengeProgressSchema>;

function progressText(progress: Progress | undefined): string {
  if (progress === undefined) return '';
  return `, Stage: ${progress.stage}, ChunksDone: ${progress.chunksDone}, ChunksTotal: ${progress.chunksTotal}, Percent: ${progress.percent}`;
}

function progressFields(progress: Progress | undefined): Array<[string, string]> {
  if (progress === undefined) return [];
  return [
    ['Stage', progress.stage],
    ['ChunksDone', String(progress.chunksDone)],
    ['ChunksTotal', String(progress.chunksTotal)],
    ['Percent', String(progress.percent)],
  ];
}

function sendDto(reply: FastifyReply, mediaType: MediaTypeValue, dto: AdminDto): FastifyReply {
  reply.header('vary', 'Accept');
  return sendStatus(reply, 200, 'OK', renderDto(mediaType, dto), mediaType);
}

function renderDto(mediaType: MediaTypeValue, dto: AdminDto): string {
  if (mediaType === MediaType.PlainText) return dto.text;
  if (mediaType === MediaType.Json) return JSON.stringify(dto.json, null, 2);
  const declaration = '<?xml version="1.0" encoding="utf-8"?>';
  if (dto.fields.length === 0) {
    return `${declaration}<${dto.name}>${escapeXml(dto.text)}</${dto.name}>`;
  }
  const children = dto.fields.map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`);
  return `${declaration}<${dto.name}>${children.join('')}</${dto.name}>`;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Shared plumbing of the streams routes: the request's absolute base URL (honouring the
 * X-Forwarded-* headers as EventStoreDB does), reason phrases, caching headers and ETags,
 * and the authorization check every route makes before touching the engine.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Authorizer, Principal, StreamAccess } from '../auth-types.js';
import type { EventDb } from '../../storage/event-db-types.js';
import { EventDbError } from '../../errors.js';
import { contentTypeHeader } from './media-types.js';

export interface StreamsContext {
  readonly db: EventDb;
  readonly authorizer: Authorizer;
  readonly maxEventSizeBytes: number;
  /** Aborted when the server starts closing: long polls answer at once instead of waiting. */
  readonly closing: AbortSignal;
  /** Persistent-subscription groups of a stream, named by the description document. */
  readonly subscriptionGroups?: (stream: string) => readonly string[];
}

export const ALL_STREAM = '$all';
export const CACHE_FOREVER = 'max-age=31536000, public';
/** A page that never changes but whose content depends on the reader (`$all`). */
export const CACHE_FOREVER_PRIVATE = 'max-age=31536000, private';
export const CACHE_NEVER = 'max-age=0, no-cache, must-revalidate';

function firstHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first.trim() === '' ? undefined : first.split(',')[0]?.trim();
}

/** `http://host:port[/prefix]`, from the Host header or the X-Forwarded-* headers. */
export function requestBaseUrl(request: FastifyRequest): string {
  const protocol = firstHeader(request, 'x-forwarded-proto') ?? request.protocol;
  let host =
    firstHeader(request, 'x-forwarded-host') ?? firstHeader(request, 'host') ?? request.hostname;
  const forwardedPort = firstHeader(request, 'x-forwarded-port');
  if (forwardedPort !== undefined && /^\d+$/.test(forwardedPort))
    host = `${host.replace(/:\d+$/, '')}:${forwardedPort}`;
  const prefix = firstHeader(request, 'x-forwarded-prefix');
  const path = prefix === undefined ? '' : `/${prefix.replace(/^\/+|\/+$/g, '')}`;
  return `${protocol}://${host}${path}`;
}

/** Sends a status with EventStoreDB's reason phrase and an optional body. */
export function sendStatus(
  reply: FastifyReply,
  status: number,
  reason: string,
  body: string | Buffer = '',
  mediaType = 'text/plain',
): FastifyReply {
  reply.raw.statusMessage = reason;
  return reply.code(status).header('content-type', contentTypeHeader(mediaType)).send(body);
}

/** 404; without a message the answer names the request's path (api/error-body.ts). */
export function sendNotFound(reply: FastifyReply, message = ''): FastifyReply {
  return sendStatus(reply, 404, 'Not Found', message);
}

/** 410 for a deleted stream. */
export function sendDeleted(reply: FastifyReply, stream?: string): FastifyReply {
  return sendStatus(reply, 410, 'Deleted', stream === undefined ? '' : `Stream '${stream}' has been deleted.`);
}

export function sendWrongExpectedVersion(
  reply: FastifyReply,
  currentVersion: number,
): FastifyReply {
  reply
    .header('SVC-CurrentVersion', String(currentVersion))
    .header('ES-CurrentVersion', String(currentVersion));
  return sendStatus(
    reply,
    400,
    'Wrong expected EventNumber',
    `Wrong expected EventNumber: the stream's current version is ${currentVersion}.`,
  );
}

/** A stable 32-bit hash of the response media type (EventStoreDB uses string.GetHashCode). */
function mediaTypeHash(mediaType: string): number {
  let hash = 0;
  for (let charIndex = 0; charIndex < mediaType.length; charIndex++) {
    hash = (Math.imul(hash, 31) + mediaType.charCodeAt(charIndex)) | 0;
  }
  return hash;
}

/** The ETag value without quotes: `<version>;<media type hash>`. */
export function eTagValue(version: number, mediaType: string): string {
  return `${version};${mediaTypeHash(mediaType)}`;
}

/** True when If-None-Match names the current version for this media type (answer 304). */
export function isNotModified(request: FastifyRequest, eTag: string): boolean {
  const header = request.headers['if-none-match'];
  if (header === undefined) return false;
  return header
    .split(',')
    .some((tag) => tag.trim().replace(/^W\//, '').replace(/^"|"$/g, '') === eTag);
}

/** Thrown when the request may not do what it asks; the error handler answers 401, empty. */
export function unauthorized(): EventDbError {
  return new EventDbError('EDB_UNAUTHORIZED', '', {
    httpStatus: 401,
    details: { reason: 'Unauthorized' },
  });
}

/**
 * Authenticates the request and checks `access` on `stream`; metastream access maps to the
 * original stream's `mr`/`mw`. Returns the principal (undefined = anonymous) or throws 401.
 */
export async function authorizeStream(
  context: StreamsContext,
  request: FastifyRequest,
  stream: string,
  access: StreamAccess,
  options: { requireAuthenticated?: boolean } = {},
): Promise<Principal | undefined> {
  const auth = await context.authorizer.authenticate(request);
  if (auth.kind === 'rejected') throw unauthorized();
  if (auth.kind === 'anonymous' && options.requireAuthenticated === true) throw unauthorized();
  const principal = auth.kind === 'authenticated' ? auth.principal : undefined;
  let target = stream;
  let targetAccess = access;
  if (stream.startsWith('$$') && (access === 'r' || access === 'w')) {
    target = stream.slice(2);
    targetAccess = access === 'r' ? 'mr' : 'mw';
  }
  if (!(await context.authorizer.canAccessStream(principal, target, targetAccess)))
    throw unauthorized();
  return principal;
}

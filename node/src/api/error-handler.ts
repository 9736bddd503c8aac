/**
 * The one place where errors become HTTP responses. Like EventStoreDB's SendBadRequest, an
 * error answer is `text/plain` whose body is the message; the reason phrase is the standard one
 * unless the error names another. Stack traces never leave the server: anything unexpected is a
 * 500 with a fixed text, and the error is logged with the request.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { EventDbError, FatalError, type ErrorCode } from '../errors.js';
import { WWW_AUTHENTICATE_VALUE } from './security/http-auth.js';
import { drainRequestBody } from './body-drain.js';

/** 400 with `message` as the body. */
export function badRequest(message: string, details: Record<string, unknown> = {}): EventDbError {
  return new EventDbError('EDB_BAD_REQUEST', message, { httpStatus: 400, details });
}

const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  EDB_BAD_REQUEST: 400,
  EDB_EVENT_TOO_LARGE: 400,
  EDB_APPEND_TOO_LARGE: 400,
  EDB_NOT_FOUND: 404,
  EDB_UNAUTHORIZED: 401,
  EDB_CONFIG_INVALID: 400,
  EDB_CLOSED: 503,
  EDB_NOT_READY: 503,
  EDB_NOT_LEADER: 503,
  EDB_WRITE_TIMEOUT: 500,
};

/** What a 503 (not ready, not the leader, shutting down) tells clients to wait before they retry. */
export const RETRY_AFTER_SECONDS = '1';

/** Conditions of a cluster or of a stopping node, not faults of this node: logged as warnings. */
const OPERATIONAL_CODES: ReadonlySet<ErrorCode> = new Set(['EDB_CLOSED', 'EDB_NOT_READY', 'EDB_NOT_LEADER', 'EDB_WRITE_TIMEOUT']);

/** Fastify's own client errors that keep their status; everything else client-caused is 400. */
const FASTIFY_CLIENT_STATUSES = new Set([400, 401, 404, 405, 406, 408, 414, 415, 431]);

function sendText(
  reply: FastifyReply,
  status: number,
  message: string,
  reason?: string,
): FastifyReply {
  if (reason !== undefined) reply.raw.statusMessage = reason;
  return reply.code(status).type('text/plain; charset=utf-8').send(message);
}

function describeValidation(err: FastifyError): string {
  const parts = (err.validation ?? []).map((issue) => {
    const where =
      issue.instancePath === ''
        ? (err.validationContext ?? 'request')
        : issue.instancePath.slice(1);
    return `${where}: ${issue.message ?? 'invalid'}`;
  });
  return parts.length > 0 ? `Invalid request. ${parts.join('; ')}` : 'Invalid request.';
}

export function handleError(
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (err instanceof FatalError) {
    request.log.error({ err }, 'request hit a fatal error');
    reply.header('retry-after', RETRY_AFTER_SECONDS);
    return sendText(reply, 503, 'Server Is Not Ready', 'Server Is Not Ready');
  }
  if (err instanceof EventDbError) {
    const status = STATUS_BY_CODE[err.code] ?? err.httpStatus;
    if (status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE_VALUE);
    if (status === 503) reply.header('retry-after', RETRY_AFTER_SECONDS);
    if (OPERATIONAL_CODES.has(err.code)) request.log.warn({ code: err.code, reason: err.message }, 'request not served');
    else if (status >= 500) request.log.error({ err }, 'request failed');
    return sendText(
      reply,
      status,
      err.message,
      typeof err.details.reason === 'string' ? err.details.reason : undefined,
    );
  }
  const fastifyError = err as FastifyError;
  if (hasZodFastifySchemaValidationErrors(err) || fastifyError.validation !== undefined) {
    return sendText(reply, 400, describeValidation(fastifyError));
  }
  const status = typeof fastifyError.statusCode === 'number' ? fastifyError.statusCode : 500;
  if (status === 413) {
    const limitBytes = request.routeOptions.bodyLimit;
    return sendText(reply, 413, `Request body too large: at most ${limitBytes} bytes are accepted here.`);
  }
  if (status === 415)
    return sendText(
      reply,
      415,
      'Invalid or missing Content-Type',
      'Invalid or missing Content-Type',
    );
  if (FASTIFY_CLIENT_STATUSES.has(status)) return sendText(reply, status, fastifyError.message);
  if (status >= 400 && status < 500) return sendText(reply, 400, 'Invalid request.');
  request.log.error({ err }, 'unhandled error in request');
  return sendText(reply, 500, 'Internal Server Error');
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(async (err, request, reply) => {
    // A refused body (too large, unparsable) is read away first (api/body-drain.ts): the client
    // then reads the answer instead of a reset when the connection closes.
    const status = (err as FastifyError).statusCode;
    if (!request.raw.complete && status !== undefined && status < 500) await drainRequestBody(request.raw);
    return handleError(err, request, reply);
  });
}

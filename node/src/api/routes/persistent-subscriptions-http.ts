/**
 * Request plumbing of the persistent-subscription routes: answer-type negotiation and the
 * endpoint policies (406, 401), the create/update body (JSON or XML, 415 otherwise), the
 * consumer a request stands for (its user on its connection), and the answers' encodings.
 */
import type { Socket } from 'node:net';

import type { FastifyReply, FastifyRequest } from 'fastify';

import { EventDbError } from '../../errors.js';
import type { ConsumerIdentity, PersistentSubscriptions } from '../../subscriptions/service.js';
import { parseSettingsBody, type SettingsParse } from '../../subscriptions/settings.js';
import type { Principal } from '../auth-types.js';
import { authorizeRequest, replyUnauthorized, type EndpointPolicy } from '../security/http-auth.js';
import type { Security } from '../security/security.js';
import {
  contentTypeHeader,
  MediaType,
  negotiate,
  parseRequestContentType,
  type MediaTypeValue,
} from '../streams/media-types.js';
import { sendStatus } from '../streams/stream-http.js';
import { parseXml, xmlToJson } from '../streams/xml-events.js';
import { completionMessage, dtoXml, type CompletionResult } from './persistent-subscriptions-wire.js';

export interface RequestDeps {
  readonly security: Security;
}

/** PersistentSubscriptionController.DefaultCodecs (statistics, create/update answers). */
export const DEFAULT_CODECS: readonly MediaTypeValue[] = [MediaType.Json, MediaType.Xml];
export const NOT_ACCEPTABLE = 'Requested URI is not available in requested format';
const NOT_RUNNING = 'Persistent subscriptions are not started';

/** Negotiates the answer type (406), then applies the endpoint policy (401). */
export async function admit(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RequestDeps,
  policy: EndpointPolicy,
  codecs: readonly MediaTypeValue[],
): Promise<MediaTypeValue | undefined> {
  return (await admitPrincipal(request, reply, deps, policy, codecs))?.mediaType;
}

export async function admitPrincipal(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RequestDeps,
  policy: EndpointPolicy,
  codecs: readonly MediaTypeValue[],
): Promise<{ mediaType: MediaTypeValue; principal: Principal | undefined } | undefined> {
  const format = (request.query as { format?: string } | undefined)?.format;
  const negotiated = negotiate(request.headers.accept, format, codecs);
  if (negotiated === undefined) {
    sendStatus(reply, 406, NOT_ACCEPTABLE, NOT_ACCEPTABLE);
    return undefined;
  }
  const decision = await authorizeRequest(deps.security, request, reply, policy);
  return decision.allowed
    ? { mediaType: negotiated.mediaType, principal: decision.principal }
    : undefined;
}

/** An authenticated user allowed to read `stream` (processing messages); undefined after a 401. */
export async function admitStreamReader(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RequestDeps,
  stream: string,
): Promise<Principal | undefined> {
  const decision = await authorizeRequest(deps.security, request, reply, 'authenticated');
  if (!decision.allowed || decision.principal === undefined) return undefined;
  if (!(await deps.security.canAccessStream(decision.principal, stream, 'r'))) {
    replyUnauthorized(reply);
    return undefined;
  }
  return decision.principal;
}

/** Create and update: JSON or XML body (415 otherwise), $admins, valid settings. */
export async function admitSettings(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RequestDeps,
): Promise<
  | { mediaType: MediaTypeValue; settings: Extract<SettingsParse, { kind: 'ok' }>['settings']; user: string }
  | undefined
> {
  const requestType = parseRequestContentType(request.headers['content-type'], DEFAULT_CODECS);
  if (requestType.kind === 'unsupported') {
    const reason = 'Invalid or missing Content-Type';
    sendStatus(reply, 415, reason, reason);
    return undefined;
  }
  const format = (request.query as { format?: string } | undefined)?.format;
  const negotiated = negotiate(request.headers.accept, format, DEFAULT_CODECS);
  if (negotiated === undefined) {
    sendStatus(reply, 406, NOT_ACCEPTABLE, NOT_ACCEPTABLE);
    return undefined;
  }
  // The spec (Authentication 4): creating (and so redefining) a group needs $admins, not $ops.
  const decision = await authorizeRequest(deps.security, request, reply, 'admins');
  if (!decision.allowed) return undefined;
  const body = readBody(request.body, requestType.mediaType);
  if (body.kind === 'invalid') {
    badRequest(reply, body.message);
    return undefined;
  }
  const parsed = parseSettingsBody(body.value);
  if (parsed.kind === 'invalid') {
    badRequest(reply, parsed.message);
    return undefined;
  }
  if (parsed.kind === 'fail') {
    sendCompletion(reply, 400, 'Bad Request', negotiated.mediaType, 'Fail', parsed.message);
    return undefined;
  }
  return {
    mediaType: negotiated.mediaType,
    settings: parsed.settings,
    user: userOf(decision.principal),
  };
}

export function readBody(
  body: unknown,
  mediaType: MediaTypeValue,
): { kind: 'ok'; value: unknown } | { kind: 'invalid'; message: string } {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : '';
  if (text.trim() === '') return { kind: 'ok', value: undefined };
  if (mediaType === MediaType.Xml) {
    const root = parseXml(text);
    if (root === undefined) return { kind: 'invalid', message: 'Invalid subscription settings: the XML body cannot be read' };
    return { kind: 'ok', value: root.children.length === 0 ? undefined : xmlToJson(root) };
  }
  try {
    return { kind: 'ok', value: JSON.parse(text) };
  } catch {
    return { kind: 'invalid', message: 'Invalid subscription settings: the body is not valid JSON' };
  }
}

export function userOf(principal: Principal | undefined): string {
  return principal?.login ?? '';
}

/** Consumers registered per connection, so that a closing connection takes them along. */
const consumersBySocket = new WeakMap<Socket, Set<string>>();

export function consumerIdOf(request: FastifyRequest, principal: Principal): string {
  const socket = request.raw.socket;
  return `${principal.login}@${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`;
}

export function consumerOf(
  request: FastifyRequest,
  principal: Principal,
  subscriptions: PersistentSubscriptions,
): ConsumerIdentity {
  const socket = request.raw.socket;
  const id = consumerIdOf(request, principal);
  let ids = consumersBySocket.get(socket);
  if (ids === undefined) {
    const known = new Set<string>();
    ids = known;
    consumersBySocket.set(socket, known);
    socket.once('close', () => {
      for (const consumerId of known) subscriptions.connectionClosed(consumerId);
    });
  }
  ids.add(id);
  const userAgent = request.headers['user-agent'];
  return {
    id,
    username: principal.login,
    from: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`,
    connectionName: typeof userAgent === 'string' ? userAgent : '',
  };
}

/** .NET int.TryParse of an int32 (sign and surrounding spaces allowed); undefined otherwise. */
export function parseInt32(text: string): number | undefined {
  if (!/^\s*[+-]?\d+\s*$/.test(text)) return undefined;
  const value = Number(text);
  return value >= -(2 ** 31) && value <= 2 ** 31 - 1 ? value : undefined;
}

export const INVALID_HEADER = Symbol('invalid header');

/** Reads a header with the streams API's parsers; a malformed one is answered 400 here. */
export function headerValue<T>(reply: FastifyReply, read: () => T): T | typeof INVALID_HEADER {
  try {
    return read();
  } catch (err: unknown) {
    if (!(err instanceof EventDbError) || err.httpStatus !== 400) throw err;
    badRequest(reply, err.message);
    return INVALID_HEADER;
  }
}

export function badRequest(reply: FastifyReply, message: string): FastifyReply {
  return sendStatus(reply, 400, 'Bad Request', message);
}

export function notRunning(reply: FastifyReply): FastifyReply {
  return sendStatus(reply, 503, 'Service Unavailable', NOT_RUNNING);
}

export function sendDocument(
  reply: FastifyReply,
  status: number,
  mediaType: MediaTypeValue,
  json: unknown,
  xml: () => string,
  reason = status === 200 ? 'OK' : 'Not Found',
): FastifyReply {
  const body = mediaType.endsWith('xml') ? xml() : JSON.stringify(json, null, 2);
  reply.raw.statusMessage = reason;
  return reply.code(status).header('content-type', contentTypeHeader(mediaType)).send(body);
}

export function sendCompletion(
  reply: FastifyReply,
  status: number,
  reason: string,
  mediaType: MediaTypeValue,
  result: CompletionResult,
  message = '',
): FastifyReply {
  const completion = completionMessage(result, message);
  return sendDocument(
    reply,
    status,
    mediaType,
    completion,
    () => dtoXml('PersistentSubscriptionCompleted', completion),
    reason,
  );
}

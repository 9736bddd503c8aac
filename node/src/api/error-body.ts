/**
 * Every error answer (status 400 and above) carries a short message in the type the request
 * accepts: text (`text/plain`, also when nothing in Accept matches), JSON (`application/json`
 * and every `+json` type such as the Atom and events types) or XML (`application/xml`,
 * `text/xml`, every `+xml` type). Routes keep answering errors as EventStoreDB does, `text/plain`
 * with the message as the body (or empty); one onSend hook turns that into the negotiated type
 * and gives empty answers (401, 404, 405, 410, ...) a message. Status codes, reason phrases and
 * headers (`WWW-Authenticate`, `ES-`/`SVC-` headers, `Allow`) are left as the route set them.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export type ErrorFormat = 'text' | 'json' | 'xml';

interface AcceptRange {
  readonly format: ErrorFormat | undefined;
  readonly quality: number;
  readonly order: number;
}

function formatOfRange(range: string): ErrorFormat | undefined {
  const type = range.toLowerCase();
  if (type === 'application/json' || type === 'text/json' || type.endsWith('+json') || type === 'application/*') return 'json';
  if (type === 'application/xml' || type === 'text/xml' || type.endsWith('+xml')) return 'xml';
  if (type === 'text/plain' || type === 'text/*' || type === '*/*' || type === '*') return 'text';
  return undefined;
}

/** The error format for an Accept header: the first of highest quality that names one; else text. */
export function negotiateErrorFormat(accept: string | readonly string[] | undefined): ErrorFormat {
  const header = Array.isArray(accept) ? accept.join(',') : (accept as string | undefined);
  if (header === undefined || header.trim() === '') return 'text';
  const ranges: AcceptRange[] = header.split(',').map((part, order) => {
    const [type = '', ...params] = part.split(';').map((p) => p.trim());
    let quality = 1;
    for (const param of params) {
      const match = /^q\s*=\s*([0-9.]+)$/i.exec(param);
      if (match !== null) quality = Number(match[1]);
    }
    return { format: formatOfRange(type), quality: Number.isFinite(quality) ? quality : 0, order };
  });
  const usable = ranges.filter((r) => r.format !== undefined && r.quality > 0);
  usable.sort((a, b) => b.quality - a.quality || a.order - b.order);
  return usable[0]?.format ?? 'text';
}

export const ERROR_CONTENT_TYPES: Readonly<Record<ErrorFormat, string>> = {
  text: 'text/plain; charset=utf-8',
  json: 'application/json; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
};

/** Characters XML 1.0 cannot carry at all (control characters, lone surrogates, U+FFFE/F). */
const XML_INVALID = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/g;

function xmlText(text: string): string {
  return text
    .replace(XML_INVALID, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

/** The body of an error answer in `format`. */
export function renderErrorBody(format: ErrorFormat, status: number, reason: string, message: string): string {
  if (format === 'json') return JSON.stringify({ status, error: reason, message });
  if (format === 'xml')
    return `<?xml version="1.0" encoding="utf-8"?><error><status>${status}</status><reason>${xmlText(reason)}</reason><message>${xmlText(message)}</message></error>`;
  return message;
}

/** A message for an error answer its route left empty. */
export function defaultErrorMessage(status: number, method: string, path: string, hasCredentials: boolean): string {
  switch (status) {
    case 401:
      return hasCredentials
        ? 'Not authorized: the credentials are wrong, or the user may not do this.'
        : 'Not authorized: this request needs the credentials (HTTP Basic) of a user who may make it.';
    case 404:
      return `Not found: nothing at ${path}.`;
    case 405:
      return `Method not allowed: ${path} does not answer ${method}.`;
    case 410:
      return `Deleted: ${path} names a deleted stream.`;
    default:
      return `${STATUS_CODES[status] ?? 'Error'}: ${method} ${path}.`;
  }
}

function requestPath(request: FastifyRequest): string {
  const path = request.url.split('?')[0] ?? '/';
  // An answer names the path as the client sent it, cut short so that no answer is huge.
  return path.length > 200 ? `${path.slice(0, 200)}...` : path;
}

function isTextPlain(contentType: unknown): boolean {
  if (contentType === undefined) return true;
  const value = String(contentType).toLowerCase();
  return value === '' || value.startsWith('text/plain');
}

/** The onSend step: error answers get a message, in the negotiated type. */
export function errorBody(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  const status = reply.statusCode;
  if (status < 400 || request.method === 'HEAD') return payload;
  if (!isTextPlain(reply.getHeader('content-type'))) return payload;
  if (payload !== undefined && payload !== null && typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  let message = payload === undefined || payload === null ? '' : payload.toString();
  if (message === '')
    message = defaultErrorMessage(status, request.method, requestPath(request), request.headers.authorization !== undefined);
  const format = negotiateErrorFormat(request.headers.accept);
  const reason = reply.raw.statusMessage || STATUS_CODES[status] || 'Error';
  reply.removeHeader('content-length');
  reply.header('content-type', ERROR_CONTENT_TYPES[format]);
  const vary = reply.getHeader('vary');
  if (vary === undefined) reply.header('vary', 'Accept');
  return renderErrorBody(format, status, reason, message);
}

export function registerErrorBodies(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => errorBody(request, reply, payload));
}

/**
 * Node's answer to a request it could not parse (before fastify sees it): text, since there
 * is no Accept header to read, and the connection closes.
 */
export function clientErrorResponse(code: string | undefined): string {
  const status = code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const reason = STATUS_CODES[status] ?? 'Bad Request';
  const message =
    status === 431
      ? 'Request header fields too large.'
      : status === 408
        ? 'Request timeout: the request did not arrive in time.'
        : 'Bad request: the request is not valid HTTP.';
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n${message}`;
}

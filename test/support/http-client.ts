/**
 * A thin fetch wrapper for integration tests: never follows redirects, returns status, reason
 * phrase, headers and body text, and sends admin credentials unless told otherwise.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { ADMIN_AUTHORIZATION } from './credentials.js';

export interface HttpResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly text: string;
  readonly bytes: Buffer;
  json<T = any>(): T;
}

export interface HttpOptions {
  readonly headers?: Record<string, string>;
  /** A Readable is sent chunked (no Content-Length). */
  readonly body?: string | Buffer | Readable;
  /** Default true: send admin credentials. */
  readonly auth?: boolean;
}

export function httpClient(baseUrl: string) {
  return async function http(
    method: string,
    path: string,
    options: HttpOptions = {},
  ): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.auth !== false) headers.authorization ??= ADMIN_AUTHORIZATION;
    const url = path.startsWith('http') ? path : `${baseUrl}${path}`;
    const streamed = options.body instanceof Readable;
    const body = streamed ? (Readable.toWeb(options.body as Readable) as ReadableStream) : (options.body as string | Buffer | undefined);
    const response = await fetch(url, { method, headers, body, redirect: 'manual', ...(streamed ? { duplex: 'half' } : {}) } as RequestInit);
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString('utf8');
    return {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
      text,
      bytes,
      json: () => JSON.parse(text),
    };
  };
}

export type Http = ReturnType<typeof httpClient>;

export const EVENTS_JSON = 'application/vnd.eventstore.events+json';
export const ATOM_JSON = 'application/vnd.eventstore.atom+json';

export function uniqueStream(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function newEvent(eventType: string, data: unknown, metadata?: unknown) {
  return {
    eventId: randomUUID(),
    eventType,
    data,
    ...(metadata === undefined ? {} : { metadata }),
  };
}

/** Appends `events` as an events+json batch. */
export function appendEvents(
  http: Http,
  stream: string,
  events: unknown[],
  headers: Record<string, string> = {},
) {
  return http('POST', `/streams/${encodeURIComponent(stream)}`, {
    headers: { 'content-type': EVENTS_JSON, ...headers },
    body: JSON.stringify(events),
  });
}

export function readFeed(http: Http, path: string, headers: Record<string, string> = {}) {
  return http('GET', path, { headers: { accept: ATOM_JSON, ...headers } });
}

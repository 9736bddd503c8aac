/**
 * A competing consumer of a persistent subscription for tests and benches: pulls messages
 * over its own keep-alive connection (the node tells consumers apart by connection and user)
 * and acknowledges them by following the feed's links, as clients are told to.
 */
import { Pool } from 'undici';

import { ADMIN_AUTHORIZATION } from './credentials.js';

export const COMPETING_JSON = 'application/vnd.eventstore.competingatom+json';

export interface CompetingEntry {
  /** The entry's title `{eventNumber}@{stream}`, split. */
  readonly eventNumber: number;
  readonly stream: string;
  readonly retryCount: number;
  readonly summary: string;
  /** The message id, from the ack link. */
  readonly messageId: string;
  readonly ackUri: string;
  readonly nackUri: string;
  /** Present with embed=rich or more. */
  readonly eventId?: string;
  readonly data?: string;
  readonly raw: Record<string, unknown>;
}

export interface PullResult {
  readonly status: number;
  readonly statusText: string;
  readonly text: string;
  readonly feed: Record<string, unknown> | undefined;
  /** In delivery order (oldest first; the feed lists newest first). */
  readonly entries: CompetingEntry[];
  readonly links: Record<string, string>;
}

export interface PullOptions {
  readonly embed?: string;
  readonly longPollSeconds?: number;
}

export class CompetingConsumer {
  private readonly pool: Pool;
  private readonly path: string;
  private closed: Promise<void> | undefined;

  constructor(
    readonly baseUrl: string,
    readonly stream: string,
    readonly group: string,
    private readonly authorization: string = ADMIN_AUTHORIZATION,
  ) {
    this.pool = new Pool(baseUrl, { connections: 1, pipelining: 1 });
    this.path = `/subscriptions/${encodeURIComponent(stream)}/${encodeURIComponent(group)}`;
  }

  async pull(count: number, options: PullOptions = {}): Promise<PullResult> {
    const query = options.embed === undefined ? '' : `?embed=${options.embed}`;
    const headers: Record<string, string> = {
      accept: COMPETING_JSON,
      authorization: this.authorization,
    };
    if (options.longPollSeconds !== undefined) headers['es-longpoll'] = String(options.longPollSeconds);
    const response = await this.pool.request({ method: 'GET', path: `${this.path}/${count}${query}`, headers });
    const text = await response.body.text();
    if (response.statusCode !== 200) {
      return { status: response.statusCode, statusText: '', text, feed: undefined, entries: [], links: {} };
    }
    const feed = JSON.parse(text) as Record<string, unknown>;
    const links = Object.fromEntries(
      (feed.links as { uri: string; relation: string }[]).map((l) => [l.relation, l.uri]),
    );
    const entries = (feed.entries as Record<string, unknown>[]).map(toEntry).reverse();
    return { status: 200, statusText: 'OK', text, feed, entries, links };
  }

  /** POSTs to an ack/nack link (or any path of the node); answers the status. */
  async post(uriOrPath: string): Promise<number> {
    const path = uriOrPath.startsWith('http') ? uriOrPath.slice(new URL(uriOrPath).origin.length) : uriOrPath;
    const response = await this.pool.request({
      method: 'POST',
      path,
      headers: { authorization: this.authorization, 'content-type': 'application/json' },
      body: '{}',
    });
    await response.body.dump();
    return response.statusCode;
  }

  async ackAll(result: PullResult): Promise<void> {
    if (result.entries.length === 0) return;
    const status = await this.post(result.links['ackAll'] ?? '');
    if (status !== 202) throw new Error(`ackAll answered ${status}`);
  }

  async nack(entries: readonly CompetingEntry[], action: string): Promise<number> {
    const ids = entries.map((e) => e.messageId).join(',');
    return this.post(`${this.path}/nack?ids=${ids}&action=${action}`);
  }

  /** Closes the connection (the node drops the consumer); safe to call twice. */
  close(): Promise<void> {
    this.closed ??= this.pool.close();
    return this.closed;
  }
}

function toEntry(raw: Record<string, unknown>): CompetingEntry {
  const title = String(raw.title);
  const at = title.indexOf('@');
  const links = Object.fromEntries(
    (raw.links as { uri: string; relation: string }[]).map((l) => [l.relation, l.uri]),
  );
  const ackUri = links['ack'] ?? '';
  return {
    eventNumber: Number(title.slice(0, at)),
    stream: title.slice(at + 1),
    retryCount: Number(raw.retryCount),
    summary: String(raw.summary),
    messageId: ackUri.slice(ackUri.lastIndexOf('/') + 1),
    ackUri,
    nackUri: links['nack'] ?? '',
    ...(typeof raw.eventId === 'string' ? { eventId: raw.eventId } : {}),
    ...(typeof raw.data === 'string' ? { data: raw.data } : {}),
    raw,
  };
}

/** Appends `count` events to `stream` in batches (events+json), each with data {i}. */
export async function appendNumbered(
  baseUrl: string,
  stream: string,
  count: number,
  options: { from?: number; batch?: number; metadata?: (i: number) => unknown } = {},
): Promise<void> {
  const batch = options.batch ?? 500;
  const from = options.from ?? 0;
  for (let start = from; start < from + count; start += batch) {
    const events = [];
    for (let i = start; i < Math.min(start + batch, from + count); i++) {
      events.push({
        eventId: crypto.randomUUID(),
        eventType: 'Numbered',
        data: { i },
        ...(options.metadata === undefined ? {} : { metadata: options.metadata(i) }),
      });
    }
    const response = await fetch(`${baseUrl}/streams/${encodeURIComponent(stream)}`, {
      method: 'POST',
      headers: {
        authorization: ADMIN_AUTHORIZATION,
        'content-type': 'application/vnd.eventstore.events+json',
      },
      body: JSON.stringify(events),
    });
    if (response.status !== 201) throw new Error(`append answered ${response.status}`);
  }
}

/** Creates a group (PUT) with the settings; throws unless 201. */
export async function createGroup(
  baseUrl: string,
  stream: string,
  group: string,
  settings: Record<string, unknown> = {},
): Promise<void> {
  const response = await fetch(
    `${baseUrl}/subscriptions/${encodeURIComponent(stream)}/${encodeURIComponent(group)}`,
    {
      method: 'PUT',
      headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/json' },
      body: JSON.stringify(settings),
    },
  );
  if (response.status !== 201) {
    throw new Error(`create ${stream}/${group} answered ${response.status}: ${await response.text()}`);
  }
}

export async function groupInfo(
  baseUrl: string,
  stream: string,
  group: string,
): Promise<Record<string, any>> {
  const response = await fetch(
    `${baseUrl}/subscriptions/${encodeURIComponent(stream)}/${encodeURIComponent(group)}/info`,
    { headers: { authorization: ADMIN_AUTHORIZATION, accept: 'application/json' } },
  );
  if (response.status !== 200) throw new Error(`info answered ${response.status}`);
  return (await response.json()) as Record<string, any>;
}

/** Polls `probe` every 50 ms until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Helpers for projection tests against a real node: polling, statistics, waiting for projections
 * to catch up with the log, and reading a stream's raw events in order.
 */
import type { Http } from './http-client.js';

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface Statistics {
  status: string;
  stateReason: string;
  name: string;
  mode: string;
  position: string;
  progress: number;
  lastCheckpoint: string;
  eventsProcessedAfterRestart: number;
  writesInProgress: number;
  writePendingEventsAfterCheckpoint: number;
  [key: string]: unknown;
}

export async function statistics(http: Http, name: string): Promise<Statistics> {
  const res = await http('GET', `/projection/${encodeURIComponent(name)}`, { headers: { accept: 'application/json' } });
  if (res.status !== 200) throw new Error(`GET /projection/${name}: ${res.status} ${res.text}`);
  return res.json<Statistics>();
}

/** The last event in $all, to tell whether anything was written between two polls. */
async function allHead(http: Http): Promise<string> {
  const res = await http('GET', '/streams/%24all/head/backward/1', { headers: { accept: 'application/vnd.eventstore.atom+json' } });
  const entry = res.json<{ entries: Array<{ id: string; title: string }> }>().entries[0];
  return entry === undefined ? '' : `${entry.title} ${entry.id}`;
}

/**
 * Waits until each projection runs, has read to the end of the log and has no write pending,
 * twice in a row with the log unchanged in between.
 */
export async function waitCaughtUp(http: Http, names: readonly string[], timeoutMs = 60_000): Promise<void> {
  let previous = '';
  let last = '';
  await waitFor(
    `${names.join(', ')} to catch up`,
    async () => {
      const head = await allHead(http);
      const stats = await Promise.all(names.map((n) => statistics(http, n)));
      last = stats.map((s) => `${s.name}: ${s.status} ${s.position} ${s.progress}% pending ${s.writePendingEventsAfterCheckpoint} writing ${s.writesInProgress}`).join('; ');
      for (const s of stats) if (s.status.startsWith('Faulted')) throw new Error(`${s.name} faulted: ${s.stateReason}`);
      const done = stats.every((s) => s.status === 'Running' && s.progress === 100 && s.writePendingEventsAfterCheckpoint === 0 && s.writesInProgress === 0);
      const snapshot = head + stats.map((s) => s.position).join('|');
      const stable = done && snapshot === previous;
      previous = done ? snapshot : '';
      return stable ? true : undefined;
    },
    timeoutMs,
    100,
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)} (last: ${last})`);
  });
}

export interface RawEvent {
  eventNumber: number;
  eventType: string;
  streamId: string;
  data: string;
  metaData?: string;
}

/** Every event of a stream, oldest first, links not resolved (undefined when the stream does not exist). */
export async function readRawStream(http: Http, stream: string): Promise<RawEvent[] | undefined> {
  const out: RawEvent[] = [];
  let from = 0;
  for (;;) {
    const res = await http('GET', `/streams/${encodeURIComponent(stream)}/${from}/forward/4096?embed=tryharder`, {
      headers: { accept: 'application/vnd.eventstore.atom+json', 'ES-ResolveLinkTos': 'false' },
    });
    if (res.status === 404) return from === 0 ? undefined : out;
    if (res.status !== 200) throw new Error(`read ${stream}: ${res.status} ${res.text}`);
    const feed = res.json<{ entries: RawEvent[]; headOfStream: boolean }>();
    const entries = [...feed.entries].reverse();
    out.push(...entries);
    if (entries.length === 0 || feed.headOfStream) return out;
    from = (entries[entries.length - 1]?.eventNumber ?? from) + 1;
  }
}

export async function createProjection(
  http: Http,
  mode: 'continuous' | 'onetime' | 'transient',
  name: string,
  source: string,
  params: Record<string, string> = {},
): Promise<void> {
  const query = new URLSearchParams({ name, type: 'JS', enabled: 'yes', ...params }).toString();
  const res = await http('POST', `/projections/${mode}?${query}`, { headers: { 'content-type': 'application/javascript' }, body: source });
  if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${res.text}`);
}

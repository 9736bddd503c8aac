/**
 * Scavenge admin against real node processes and the real engine scavenger: parameter
 * validation (each bad value is a 400 with EventStoreDB's message and starts nothing), the
 * $admins/$ops policy, current/last/stop, the history streams as an `$ops` user reads them over
 * the streams API, and the `Interrupted` entry a node writes at start for a run it was killed in.
 *
 * Long runs come from a small chunk size and `throttlePercent=1` (the run rests 99 times as long
 * as it works after each chunk), so a test can observe and stop a run, or kill the node in it.
 */
import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { httpClient, type Http } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { basic } from '../support/credentials.js';

const OPS = basic('ops', 'changeit');
const WORKER = basic('worker', 'worker-pw');
const JSON_ACCEPT = { accept: 'application/json' };
const ATOM_JSON = 'application/vnd.eventstore.atom+json';
const EMPTY_GUID = '00000000-0000-0000-0000-000000000000';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME_SPAN = /^(\d+\.)?\d\d:\d\d:\d\d(\.\d{7})?$/;
const HISTORY_EVENT_TYPES = [
  '$scavengeStarted',
  '$scavengeChunksCompleted',
  '$scavengeMergeCompleted',
  '$scavengeIndexCompleted',
  '$scavengeCompleted',
];
const HISTORY_ACL = { $r: '$ops', $w: [], $d: [], $mr: [], $mw: [] };
const SECONDS_PER_DAY = 86_400;

interface HistoryEvent {
  readonly eventNumber: number;
  readonly eventType: string;
  readonly data: Record<string, unknown>;
}

async function createWorker(http: Http): Promise<void> {
  const created = await http('POST', '/users/', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      LoginName: 'worker', FullName: 'Worker', Password: 'worker-pw', Groups: [],
    }),
  });
  expect(created.status).toBe(201);
}

async function startScavenge(http: Http, query = '', authorization?: string): Promise<string> {
  const response = await http('POST', `/admin/scavenge${query}`, {
    headers: { ...JSON_ACCEPT, ...(authorization === undefined ? {} : { authorization }) },
  });
  expect(response.status, response.text).toBe(200);
  const { scavengeId } = response.json() as { scavengeId: string };
  expect(scavengeId).toMatch(UUID);
  return scavengeId;
}

async function lastScavenge(http: Http) {
  const response = await http('GET', '/admin/scavenge/last', { headers: JSON_ACCEPT });
  expect(response.status).toBe(200);
  return response.json() as { scavengeId: string; scavengeLink: string; scavengeResult: string };
}

async function currentScavenge(http: Http) {
  const response = await http('GET', '/admin/scavenge/current', { headers: JSON_ACCEPT });
  expect(response.status).toBe(200);
  return response.json() as { scavengeId: string; scavengeLink: string };
}

/** Polls `check` every 100 ms until it returns a value, failing after `timeoutMs`. */
async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  context: () => string = () => '',
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}${context()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Waits until a run's history stream holds its $scavengeStarted event. Polls as admin: until the
 * run's metadata is written, only $admins may read its stream.
 */
async function waitForScavengeStarted(http: Http, stream: string, context?: () => string): Promise<void> {
  await waitFor('$scavengeStarted to be written', async () => {
    const response = await http('GET', `/streams/${encodeURIComponent(stream)}?embed=body`, {
      headers: { accept: ATOM_JSON },
    });
    const written = response.status === 200 && response.text.includes('"$scavengeStarted"');
    return written ? true : undefined;
  }, 60_000, context);
}

async function waitForResult(http: Http, scavengeId: string, timeoutMs = 60_000): Promise<string> {
  return waitFor(`scavenge ${scavengeId} to end`, async () => {
    const last = await lastScavenge(http);
    expect(last.scavengeId).toBe(scavengeId);
    return last.scavengeResult === 'InProgress' ? undefined : last.scavengeResult;
  }, timeoutMs);
}

/** A history stream in event-number order, read over the streams API (as `$ops` by default). */
async function readHistory(
  http: Http,
  stream: string,
  authorization = OPS,
): Promise<HistoryEvent[]> {
  const path = `/streams/${encodeURIComponent(stream)}/0/forward/4096?embed=body`;
  const response = await http('GET', path, {
    headers: { accept: ATOM_JSON, authorization },
  });
  expect(response.status, `${stream}: ${response.text}`).toBe(200);
  const feed = response.json() as {
    entries: Array<{ eventNumber: number; eventType: string; data?: unknown }>;
  };
  return feed.entries
    .map((e) => ({
      eventNumber: e.eventNumber,
      eventType: e.eventType,
      data: (typeof e.data === 'string' ? JSON.parse(e.data) : e.data) as Record<string, unknown>,
    }))
    .sort((a, b) => a.eventNumber - b.eventNumber);
}

/** The `$>` link data of every event in `$scavenges`, in order (links read as links, not resolved). */
async function readLinks(http: Http): Promise<string[]> {
  const response = await http('GET', '/streams/%24scavenges/0/forward/4096?embed=body', {
    headers: { accept: ATOM_JSON, authorization: OPS, 'ES-ResolveLinkTos': 'false' },
  });
  if (response.status === 404) return [];
  expect(response.status).toBe(200);
  const feed = response.json() as { entries: Array<{ eventNumber: number; eventType: string }> };
  const entries = feed.entries.sort((a, b) => a.eventNumber - b.eventNumber);
  const links: string[] = [];
  for (const entry of entries) {
    expect(entry.eventType).toBe('$>');
    const event = await http('GET', `/streams/%24scavenges/${entry.eventNumber}`, {
      headers: { accept: 'application/octet-stream', authorization: OPS, 'ES-ResolveLinkTos': 'false' },
    });
    links.push(event.text);
  }
  return links;
}

async function readMetadata(http: Http, stream: string): Promise<unknown> {
  const response = await http('GET', `/streams/${encodeURIComponent(stream)}/metadata`, {
    headers: JSON_ACCEPT,
  });
  expect(response.status).toBe(200);
  return response.json();
}

/** Streams with `$maxCount 1` and 20 events each: plenty to remove, over many 16 KiB chunks. */
async function writeRemovableEvents(http: Http, streamCount: number): Promise<void> {
  const headers = { 'content-type': 'application/vnd.eventstore.events+json' };
  for (let streamIndex = 0; streamIndex < streamCount; streamIndex++) {
    const stream = `scavenge-load-${randomUUID().slice(0, 8)}`;
    const metadata = await http('POST', `/streams/${stream}/metadata`, {
      headers,
      body: JSON.stringify([
        { eventId: randomUUID(), eventType: '$metadata', data: { $maxCount: 1 } },
      ]),
    });
    expect(metadata.status).toBe(201);
    for (let batch = 0; batch < 4; batch++) {
      const events = Array.from({ length: 5 }, () => ({
        eventId: randomUUID(), eventType: 'load', data: { padding: 'x'.repeat(800) },
      }));
      const body = JSON.stringify(events);
      const appended = await http('POST', `/streams/${stream}`, { headers, body });
      expect(appended.status).toBe(201);
    }
  }
}

function expectHistoryShape(
  events: HistoryEvent[],
  scavengeId: string,
  nodeEndpoint: string,
): void {
  expect(events[0]?.eventType).toBe('$scavengeStarted');
  expect(events[0]?.data).toEqual({ scavengeId, nodeEndpoint });
  for (const event of events) {
    expect(HISTORY_EVENT_TYPES).toContain(event.eventType);
    expect(event.data).toMatchObject({ scavengeId, nodeEndpoint });
    if (event.eventType !== '$scavengeStarted') expect(event.data['timeTaken']).toMatch(TIME_SPAN);
  }
  const completed = events.filter((e) => e.eventType === '$scavengeCompleted');
  expect(completed).toHaveLength(1);
  expect(Object.keys(completed[0]?.data ?? {})).toEqual([
    'scavengeId', 'nodeEndpoint', 'result', 'error', 'timeTaken', 'spaceSaved', 'maxChunkScavenged',
  ]);
  expect(events.at(-1)?.eventType).toBe('$scavengeCompleted');
}

describe('scavenge admin on a fresh in-memory node', () => {
  let node: NodeProcess;
  let http: Http;

  beforeAll(async () => {
    node = await startNode();
    http = httpClient(node.baseUrl);
    await createWorker(http);
  });
  afterAll(async () => {
    await node.stop();
  });

  it('refuses each invalid parameter with 400 and its message, starting nothing', async () => {
    const cases: Array<[string, string]> = [
      ['threads=0', 'threads must be a 1 or above'],
      ['threads=-2', 'threads must be a 1 or above'],
      ['threads=two', 'threads must be a 1 or above'],
      ['threads=1.5', 'threads must be a 1 or above'],
      ['threads=', 'threads must be a 1 or above'],
      ['threads=1&threads=2', 'threads must be a 1 or above'],
      ['threshold=abc', 'threshold must be an integer'],
      ['threshold=0.5', 'threshold must be an integer'],
      ['threshold=2147483648', 'threshold must be an integer'],
      ['throttlePercent=0', 'throttlePercent must be between 1 and 100 inclusive'],
      ['throttlePercent=101', 'throttlePercent must be between 1 and 100 inclusive'],
      ['throttlePercent=fast', 'throttlePercent must be between 1 and 100 inclusive'],
      ['throttlePercent=50&threads=2', 'throttlePercent must be 100 for a multi-threaded scavenge'],
      ['throttlePercent=99&threads=4', 'throttlePercent must be 100 for a multi-threaded scavenge'],
      ['syncOnly=yes', 'syncOnly must be a boolean'],
      ['syncOnly=1', 'syncOnly must be a boolean'],
      ['startFromChunk=-1', 'startFromChunk must be a positive integer'],
      ['startFromChunk=first', 'startFromChunk must be a positive integer'],
      ['startFromChunk=-1&threads=0&syncOnly=no', 'startFromChunk must be a positive integer'],
      ['threads=0&threshold=x', 'threads must be a 1 or above'],
    ];
    for (const [query, message] of cases) {
      const response = await http('POST', `/admin/scavenge?${query}`, { headers: JSON_ACCEPT });
      // The message in the type asked for (JSON here; text/plain when nothing matches).
      expect([query, response.status, response.statusText, response.json().message]).toEqual([
        query, 400, 'Bad Request', message,
      ]);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
    expect(await currentScavenge(http)).toEqual({ scavengeId: '', scavengeLink: '' });
    expect(await lastScavenge(http)).toEqual({
      scavengeId: EMPTY_GUID, scavengeLink: '', scavengeResult: 'Unknown',
    });
    expect(await readLinks(http)).toEqual([]);
  });

  it('answers 401 with a message to anonymous, ordinary and bad-password calls', async () => {
    const routes: Array<[string, string]> = [
      ['POST', '/admin/scavenge'],
      ['GET', '/admin/scavenge/current'],
      ['GET', '/admin/scavenge/last'],
      ['DELETE', '/admin/scavenge/current'],
    ];
    const callers: Array<[string, Record<string, string> | undefined]> = [
      ['anonymous', undefined],
      ['ordinary user', { authorization: WORKER }],
      ['wrong password', { authorization: basic('admin', 'wrong') }],
      ['unknown user', { authorization: basic('nobody', 'changeit') }],
    ];
    for (const [method, path] of routes) {
      for (const [caller, headers] of callers) {
        const response = await http(method, path, {
          ...(headers === undefined ? { auth: false } : { headers }),
        });
        expect([method, path, caller, response.status]).toEqual([method, path, caller, 401]);
        expect(response.text).toMatch(/^Not authorized: /);
      }
    }
    expect((await lastScavenge(http)).scavengeResult).toBe('Unknown');
  });

  it('reports no current scavenge as empty strings, in text by default', async () => {
    const text = await http('GET', '/admin/scavenge/current');
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(text.text).toBe('ScavengeId: , ScavengeLink: ');
    const last = await http('GET', '/admin/scavenge/last', { headers: { authorization: OPS } });
    expect(last.text).toBe(`ScavengeId: ${EMPTY_GUID}, ScavengeLink: , ScavengeResult: Unknown`);
    const stop = await http('DELETE', '/admin/scavenge/current');
    expect([stop.status, stop.text]).toEqual([404, 'Scavenge Id does not exist']);
  });

  it('writes the history of a run, readable by $ops, linked from $scavenges', async () => {
    const started = await http('POST', '/admin/scavenge');
    expect(started.status).toBe(200);
    expect(started.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const scavengeId = /^ScavengeId: (.+)$/.exec(started.text)?.[1] ?? '';
    expect(scavengeId).toMatch(UUID);
    expect(await waitForResult(http, scavengeId)).toBe('Success');
    expect(await lastScavenge(http)).toEqual({
      scavengeId, scavengeLink: `/admin/scavenge/${scavengeId}`, scavengeResult: 'Success',
    });
    expect(await currentScavenge(http)).toEqual({ scavengeId: '', scavengeLink: '' });
    const followed = await http('GET', `/admin/scavenge/${scavengeId}`, { headers: JSON_ACCEPT });
    expect([followed.status, followed.json()]).toEqual([
      200, { scavengeId, scavengeLink: `/admin/scavenge/${scavengeId}`, scavengeResult: 'Success' },
    ]);
    const unknownRun = await http('GET', `/admin/scavenge/${randomUUID()}`);
    expect([unknownRun.status, unknownRun.text]).toEqual([404, 'Scavenge Id does not exist']);
    const anonymous = await http('GET', `/admin/scavenge/${scavengeId}`, { auth: false });
    expect(anonymous.status).toBe(401);

    const stream = `$scavenges-${scavengeId}`;
    const nodeEndpoint = `127.0.0.1:${node.port}`;
    const events = await readHistory(http, stream);
    expectHistoryShape(events, scavengeId, nodeEndpoint);
    expect(events.at(-1)?.data).toMatchObject({ result: 'Success', error: null });
    const completedNumber = events.at(-1)?.eventNumber;
    expect(await readLinks(http)).toEqual([`0@${stream}`, `${completedNumber}@${stream}`]);

    const worker = await http('GET', `/streams/${encodeURIComponent(stream)}`, {
      headers: { accept: ATOM_JSON, authorization: WORKER },
    });
    expect(worker.status).toBe(401);
    const expectedMetadata = { $maxAge: 30 * SECONDS_PER_DAY, $acl: HISTORY_ACL };
    expect(await readMetadata(http, stream)).toEqual(expectedMetadata);
    expect(await readMetadata(http, '$scavenges')).toEqual(expectedMetadata);
  });

  it('lets $ops start a scavenge too, and answers in JSON and XML when asked', async () => {
    const scavengeId = await startScavenge(http, '?threads=2&threshold=-1', OPS);
    expect(await waitForResult(http, scavengeId)).toBe('Success');
    const xml = await http('GET', '/admin/scavenge/last', {
      headers: { accept: 'text/xml', authorization: OPS },
    });
    expect(xml.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(xml.text).toContain(`<ScavengeId>${scavengeId}</ScavengeId>`);
    expect(xml.text).toContain('<ScavengeResult>Success</ScavengeResult>');
    const json = await http('GET', '/admin/scavenge/last?format=json');
    expect(json.text).toBe(
      `{\n  "scavengeId": "${scavengeId}",\n  "scavengeLink": "/admin/scavenge/${scavengeId}",\n` +
        '  "scavengeResult": "Success"\n}',
    );
  });

  it('ignores startFromChunk, caps threads at 4, and logs a warning for each', async () => {
    const scavengeId = await startScavenge(http, '?startFromChunk=3&threads=9');
    expect(await waitForResult(http, scavengeId)).toBe('Success');
    const warnings = node.output.filter((line) => line.includes('"level":40'));
    expect(warnings.some((line) => line.includes('startFromChunk is deprecated'))).toBe(true);
    expect(warnings.some((line) => line.includes('"threadsRequested":9'))).toBe(true);
  });
});

describe('scavenge admin on disk: long runs, stop, and a kill mid-run', () => {
  const dirs = tempDir('eventdb-scavenge-admin-');
  const nodeArgs = [
    '--db', `${dirs.path}/db`, '--index', `${dirs.path}/index`,
    '--chunk-size', '16384', '--scavenge-history-max-age', '7',
  ];
  let node: NodeProcess;
  let port: number;
  let http: Http;

  beforeAll(async () => {
    node = await startNode({ memDb: false, args: nodeArgs });
    port = node.port;
    http = httpClient(node.baseUrl);
    await writeRemovableEvents(http, 20);
  });
  afterAll(async () => {
    await node.stop();
    dirs.remove();
  });

  it('shows the running scavenge, refuses a second, answers DELETE once stopped', async () => {
    const scavengeId = await startScavenge(http, '?throttlePercent=1');
    const current = await currentScavenge(http);
    // With its progress (scavenge-progress.test.ts), which the original has in its log only.
    expect(current).toMatchObject({ scavengeId, scavengeLink: `/admin/scavenge/${scavengeId}` });
    const running = await http('GET', current.scavengeLink);
    expect(running.status).toBe(200);
    expect(running.text.startsWith(`ScavengeId: ${scavengeId}, ScavengeLink: ${current.scavengeLink}, ScavengeResult: InProgress, Stage: `)).toBe(true);
    const second = await http('POST', '/admin/scavenge', { headers: JSON_ACCEPT });
    expect([second.status, second.statusText, second.json().message]).toEqual([
      400, 'Bad Request', 'Scavenge is already running',
    ]);
    expect(await lastScavenge(http)).toMatchObject({ scavengeId, scavengeResult: 'InProgress' });
    const unknown = await http('DELETE', `/admin/scavenge/${randomUUID()}`);
    expect([unknown.status, unknown.statusText, unknown.text]).toEqual([
      404, 'Not Found', 'Scavenge Id does not exist',
    ]);

    const stopped = await http('DELETE', '/admin/scavenge/current', { headers: JSON_ACCEPT });
    expect(stopped.status).toBe(200);
    expect(stopped.json()).toBe(scavengeId);
    expect(await currentScavenge(http)).toEqual({ scavengeId: '', scavengeLink: '' });
    expect(await lastScavenge(http)).toMatchObject({ scavengeId, scavengeResult: 'Stopped' });
    const stream = `$scavenges-${scavengeId}`;
    const events = await readHistory(http, stream);
    expectHistoryShape(events, scavengeId, `127.0.0.1:${port}`);
    expect(events.at(-1)?.data).toMatchObject({ result: 'Stopped' });
    expect(await readMetadata(http, stream)).toEqual({
      $maxAge: 7 * SECONDS_PER_DAY, $acl: HISTORY_ACL,
    });
  });

  it('writes Interrupted at restart for a scavenge the node was killed in', async () => {
    const scavengeId = await startScavenge(http, '?throttlePercent=1');
    const stream = `$scavenges-${scavengeId}`;
    await waitForScavengeStarted(http, stream, () => `; node output:\n${node.output.slice(-40).join('\n')}`);
    expect((await currentScavenge(http)).scavengeId).toBe(scavengeId);
    await node.stop('SIGKILL');

    // Same port: history entries are matched by node endpoint, as in EventStoreDB.
    const restartArgs = [...nodeArgs, '--http-port', String(port), '--always-keep-scavenged'];
    node = await startNode({ memDb: false, args: restartArgs });
    const deprecated = (line: string): boolean =>
      line.includes('AlwaysKeepScavenged is deprecated');
    expect(node.output.some(deprecated)).toBe(true);
    http = httpClient(`http://127.0.0.1:${port}`);
    const events = await readHistory(http, stream);
    expectHistoryShape(events, scavengeId, `127.0.0.1:${port}`);
    const completed = events.at(-1);
    expect(completed?.data).toMatchObject({
      scavengeId,
      nodeEndpoint: `127.0.0.1:${port}`,
      result: 'Interrupted',
      error: 'The node was restarted.',
    });
    const followed = await http('GET', `/admin/scavenge/${scavengeId}?format=json`);
    expect(followed.json()).toMatchObject({ scavengeId, scavengeResult: 'Interrupted' });
    expect(typeof completed?.data['spaceSaved']).toBe('number');
    expect(typeof completed?.data['maxChunkScavenged']).toBe('number');
    const links = await readLinks(http);
    expect(links.at(-1)).toBe(`${completed?.eventNumber}@${stream}`);
    expect(links).toContain(`0@${stream}`);

    // `last` is in memory only; the next scavenge resumes the interrupted one and finishes.
    expect(await lastScavenge(http)).toEqual({
      scavengeId: EMPTY_GUID, scavengeLink: '', scavengeResult: 'Unknown',
    });
    const resumed = await startScavenge(http);
    expect(await waitForResult(http, resumed, 120_000)).toBe('Success');
    const again = await readHistory(http, stream);
    expect(again.filter((e) => e.eventType === '$scavengeCompleted')).toHaveLength(1);

    // The resumed run removed the events hidden by $maxCount: its detail events say so.
    const resumedEvents = await readHistory(http, `$scavenges-${resumed}`);
    expectHistoryShape(resumedEvents, resumed, `127.0.0.1:${port}`);
    const chunks = resumedEvents.filter((e) => e.eventType === '$scavengeChunksCompleted');
    expect(chunks.length).toBeGreaterThan(0);
    for (const chunk of chunks) {
      expect(Object.keys(chunk.data)).toEqual([
        'scavengeId', 'chunkStartNumber', 'chunkEndNumber', 'timeTaken', 'wasScavenged',
        'spaceSaved', 'nodeEndpoint', 'errorMessage',
      ]);
    }
    const spaceSaved = resumedEvents.at(-1)?.data['spaceSaved'];
    expect(spaceSaved).toBeGreaterThan(0);
  });

  it('records Stopped, not Interrupted, for a run cut by a graceful shutdown', async () => {
    await writeRemovableEvents(http, 20);
    const scavengeId = await startScavenge(http, '?throttlePercent=1');
    const stream = `$scavenges-${scavengeId}`;
    await waitForScavengeStarted(http, stream);
    expect((await currentScavenge(http)).scavengeId).toBe(scavengeId);
    expect(await node.stop('SIGTERM')).toBe(0);

    node = await startNode({ memDb: false, args: [...nodeArgs, '--http-port', String(port)] });
    const events = await readHistory(http, stream);
    expectHistoryShape(events, scavengeId, `127.0.0.1:${port}`);
    expect(events.at(-1)?.data).toMatchObject({ result: 'Stopped' });
  });
});

/**
 * Every projections endpoint of the spec and of EventStoreDB's ProjectionsController against a
 * real node (--run-projections All, system projections not started): status codes, reason
 * phrases, bodies, statistics shape, status strings, policies, and that a faulting projection
 * (an exception, an endless loop, unbounded allocation) stops with its reason while the node
 * goes on serving.
 */
import { describe, expect, it, beforeAll } from 'vitest';
import { basic } from '../support/credentials.js';
import { appendEvents, newEvent, uniqueStream } from '../support/http-client.js';
import { createProjection, statistics, waitFor } from '../support/projection-helpers.js';
import { useNode } from '../support/use-node.js';

const running = useNode({ args: ['--run-projections', 'All', '--projection-execution-timeout', '200', '--projection-memory-limit', '32'] });
const http = running.http;
const BOB = { authorization: basic('bob', 'bobpass') };
const JS = { 'content-type': 'application/javascript' };

const COUNTER = (stream: string): string => `fromStream('${stream}').when({
  $init: function () { return { count: 0 }; },
  Counted: function (s, e) { s.count += e.body.by; }
})`;

async function waitStatus(name: string, match: (status: string) => boolean): Promise<string> {
  return waitFor(`${name} status`, async () => {
    const s = await statistics(http, name);
    return match(s.status) ? s.status : undefined;
  });
}

beforeAll(async () => {
  const res = await http('POST', '/users/', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ LoginName: 'bob', FullName: 'Bob', Groups: [], Password: 'bobpass' }),
  });
  expect(res.status).toBe(201);
});

describe('listing', () => {
  it('lists the system projections, stopped, with the statistics fields in order', async () => {
    const res = await http('GET', '/projections/any');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const { projections } = res.json<{ projections: Array<Record<string, unknown>> }>();
    const names = projections.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['$streams', '$stream_by_category', '$by_category', '$by_event_type', '$by_correlation_id']));
    const byCategory = projections.find((p) => p.name === '$by_category') as Record<string, unknown>;
    expect(Object.keys(byCategory)).toEqual([
      'coreProcessingTime', 'version', 'epoch', 'effectiveName', 'writesInProgress', 'readsInProgress', 'partitionsCached',
      'status', 'stateReason', 'name', 'mode', 'position', 'progress', 'lastCheckpoint', 'eventsProcessedAfterRestart',
      'statusUrl', 'stateUrl', 'resultUrl', 'queryUrl', 'enableCommandUrl', 'disableCommandUrl', 'checkpointStatus',
      'bufferedEvents', 'writePendingEventsBeforeCheckpoint', 'writePendingEventsAfterCheckpoint',
    ]);
    expect(byCategory).toMatchObject({ status: 'Stopped', mode: 'Continuous', epoch: -1, version: -1, statusUrl: `${running.node.baseUrl}/projection/$by_category` });
    expect(byCategory.queryUrl).toBe(`${running.node.baseUrl}/projection/$by_category/query?config=yes`);
  });

  it('filters by mode and redirects /projections to the web page', async () => {
    await createProjection(http, 'onetime', uniqueStream('q'), "fromAll().when({ $any: function (s, e) {} })");
    await createProjection(http, 'transient', uniqueStream('t'), "fromAll().when({ $any: function (s, e) {} })");
    const modes = async (path: string): Promise<string[]> =>
      [...new Set((await http('GET', path)).json<{ projections: Array<{ mode: string }> }>().projections.map((p) => p.mode))].sort();
    expect(await modes('/projections/onetime')).toEqual(['OneTime']);
    expect(await modes('/projections/transient')).toEqual(['Transient']);
    expect(await modes('/projections/continuous')).toEqual(['Continuous']);
    expect(await modes('/projections/all-non-transient')).toEqual(['Continuous', 'OneTime']);
    expect(await modes('/projections/any')).toEqual(['Continuous', 'OneTime', 'Transient']);
    const redirect = await http('GET', '/projections');
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe(`${running.node.baseUrl}/web/projections.htm`);
  });

  it('answers 401 without credentials and 406 when JSON is not acceptable', async () => {
    expect((await http('GET', '/projections/any', { auth: false })).status).toBe(401);
    expect((await http('GET', '/projections/any', { headers: { authorization: basic('admin', 'nope') } })).status).toBe(401);
    expect((await http('GET', '/projections/any', { headers: { accept: 'text/xml' } })).status).toBe(406);
  });
});

describe('a continuous projection', () => {
  const name = uniqueStream('counter');
  const stream = uniqueStream('counted');

  it('is created (201, Location), refused twice (409) and without a Content-Type (415)', async () => {
    const res = await http('POST', `/projections/continuous?name=${name}&type=JS&enabled=yes&emit=no`, { headers: JS, body: COUNTER(stream) });
    expect(res.status).toBe(201);
    expect(res.statusText).toBe('Created');
    expect(res.headers.get('location')).toBe(`${running.node.baseUrl}/projection/${name}`);
    expect(res.json()).toEqual({ name });
    const again = await http('POST', `/projections/continuous?name=${name}`, { headers: JS, body: COUNTER(stream) });
    expect(again.status).toBe(409);
    expect(again.statusText).toBe('Conflict');
    expect(again.text).toBe(`Duplicate projection names : ${name}`);
    // A byte body: fetch adds no Content-Type (it would for a string).
    const bare = await http('POST', `/projections/continuous?name=${uniqueStream('x')}`, { body: Buffer.from(COUNTER(stream)) });
    expect(bare.status).toBe(415);
    expect(bare.text).toBe('Invalid or missing Content-Type');
  });

  it('runs and serves state, result (with ES-Position), statistics and its query', async () => {
    await appendEvents(http, stream, [newEvent('Counted', { by: 2 }), newEvent('Counted', { by: 3 }), newEvent('Other', {})]);
    const state = await waitFor('the state', async () => {
      const res = await http('GET', `/projection/${name}/state`);
      return res.text === '{"count":5}' ? res : undefined;
    });
    expect(state.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(JSON.parse(state.headers.get('es-position') ?? '')).toMatchObject({ $s: { [stream]: 2 } });
    expect((await http('GET', `/projection/${name}/result`)).text).toBe('{"count":5}');
    const stats = await http('GET', `/projection/${name}/statistics`);
    expect(stats.status).toBe(200);
    expect(stats.json().projections[0]).toMatchObject({ name, status: 'Running', mode: 'Continuous', position: `${stream}: 2`, progress: 100, eventsProcessedAfterRestart: 2 });
    const one = await http('GET', `/projection/${name}`);
    expect(one.json()).toMatchObject({ name, effectiveName: name, stateReason: '' });
    const query = await http('GET', `/projection/${name}/query`);
    expect(query.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(query.text).toBe(COUNTER(stream));
    const config = await http('GET', `/projection/${name}/query?config=yes`);
    expect(config.json()).toMatchObject({
      name, query: COUNTER(stream), emitEnabled: false, checkpointsEnabled: true, type: 'JS',
      definition: { allStreams: false, streams: [stream], events: ['Counted'], options: { definesFold: true } },
      outputConfig: { resultStreamName: `$projections-${name}-result` },
    });
  });

  it('is disabled, re-enabled, updated, reset and aborted with 200 and the original status strings', async () => {
    const command = async (c: string): Promise<void> => {
      const res = await http('POST', `/projection/${name}/command/${c}`);
      expect(res.status, c).toBe(200);
      expect(res.json()).toEqual({ name });
    };
    await command('disable');
    expect(await waitStatus(name, (s) => s === 'Stopped')).toBe('Stopped');
    await command('enable');
    expect(await waitStatus(name, (s) => s === 'Running')).toBe('Running');
    const updated = await http('PUT', `/projection/${name}/query?emit=no`, {
      headers: JS,
      body: COUNTER(stream).replace('s.count += e.body.by', 's.count += 10 * e.body.by'),
    });
    expect(updated.status).toBe(200);
    // The update continues from the checkpoint: only new events count ten times.
    await appendEvents(http, stream, [newEvent('Counted', { by: 1 })]);
    await waitFor('the updated handler', async () => ((await http('GET', `/projection/${name}/state`)).text === '{"count":15}' ? true : undefined));
    await command('reset');
    await waitFor('the reset state', async () => ((await http('GET', `/projection/${name}/state`)).text === '{"count":60}' ? true : undefined));
    await command('abort');
    expect(await waitStatus(name, (s) => s.startsWith('Aborted'))).toBe('Aborted/Stopped');
  });

  it('guards its config: ops/admins only, stopped only, positive timeout, JSON only', async () => {
    const get = await http('GET', `/projection/${name}/config`);
    expect(get.status).toBe(200);
    expect(get.json()).toEqual({
      msgTypeId: 331, emitEnabled: false, trackEmittedStreams: false, checkpointAfterMs: 0, checkpointHandledThreshold: 4000,
      checkpointUnhandledBytesThreshold: 10000000, pendingEventsThreshold: 5000, maxWriteBatchLength: 500,
      maxAllowedWritesInFlight: 0, projectionExecutionTimeout: null,
    });
    expect((await http('GET', `/projection/${name}/config`, { headers: BOB })).status).toBe(401);
    const put = (body: string, contentType = 'application/json') =>
      http('PUT', `/projection/${name}/config`, { headers: { 'content-type': contentType }, body });
    const negative = await put(JSON.stringify({ projectionExecutionTimeout: 0 }));
    expect(negative.status).toBe(400);
    expect(negative.text).toBe('projectionExecutionTimeout should be positive. Found : 0');
    expect((await put('{nope')).status).toBe(400);
    expect((await put('{}', 'text/plain')).status).toBe(415);
    const ok = await put(JSON.stringify({ checkpointHandledThreshold: 10, projectionExecutionTimeout: 400 }));
    expect(ok.status).toBe(200);
    expect((await http('GET', `/projection/${name}/config`)).json()).toMatchObject({ checkpointHandledThreshold: 10, projectionExecutionTimeout: 400 });
    await http('POST', `/projection/${name}/command/enable`);
    await waitStatus(name, (s) => s === 'Running');
    const running = await put(JSON.stringify({ checkpointHandledThreshold: 20 }));
    expect(running.status).toBe(500);
    expect(running.statusText).toBe('Failed');
    expect(running.text).toBe("Cannot update the config of a projection that hasn't been stopped or faulted.");
  });

  it('is deleted only when stopped, with its streams, and is then not found', async () => {
    const running = await http('DELETE', `/projection/${name}`);
    expect(running.status).toBe(500);
    expect(running.text).toBe("Cannot delete a projection that hasn't been stopped or faulted.");
    await http('POST', `/projection/${name}/command/disable`);
    await waitStatus(name, (s) => s === 'Stopped');
    expect((await http('DELETE', `/projection/${name}`, { headers: BOB })).status).toBe(401);
    const deleted = await http('DELETE', `/projection/${name}?deleteCheckpointStream=yes&deleteStateStream=yes`);
    expect(deleted.status).toBe(200);
    expect(deleted.json()).toEqual({ name });
    expect((await http('GET', `/streams/%24projections-${name}-checkpoint`, { headers: { accept: 'application/json' } })).status).toBe(404);
    for (const path of [`/projection/${name}`, `/projection/${name}/state`, `/projection/${name}/result`, `/projection/${name}/query`, `/projection/${name}/statistics`]) {
      const res = await http('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.text).toBe('Not Found');
    }
    expect((await http('POST', `/projection/${name}/command/enable`)).status).toBe(404);
    expect((await http('DELETE', '/projection/%24by_category')).status).toBe(500);
  });
});

describe('queries and permissions', () => {
  it('runs a one-time query to completion with a result, named by a GUID when unnamed', async () => {
    const stream = uniqueStream('sales');
    await appendEvents(http, stream, [newEvent('Sale', { amount: 5 }), newEvent('Sale', { amount: 7 })]);
    const res = await http('POST', '/projections/onetime?type=JS', {
      headers: JS,
      body: `fromStream('${stream}').when({ $init: function () { return { total: 0 }; }, Sale: function (s, e) { s.total += e.body.amount; } }).transformBy(function (s) { return { sum: s.total }; })`,
    });
    expect(res.status).toBe(201);
    const name = res.json<{ name: string }>().name;
    expect(name).toMatch(/^[0-9a-f-]{36}$/);
    expect(await waitStatus(name, (s) => s === 'Completed')).toBe('Completed');
    expect((await http('GET', `/projection/${name}/result`)).text).toBe('{"sum":12}');
    expect((await http('GET', `/projection/${name}/state`)).text).toBe('{"total":12}');
    expect((await statistics(http, name)).mode).toBe('OneTime');
  });

  it('lets any user run a transient query but only $ops/$admins change persistent projections', async () => {
    const denied = await http('POST', `/projections/continuous?name=${uniqueStream('bob')}`, { headers: { ...JS, ...BOB }, body: COUNTER('x') });
    expect(denied.status).toBe(401);
    expect(denied.statusText).toBe('Not Authorized');
    expect(denied.text).toBe('Not authorized');
    const bobQuery = uniqueStream('bobq');
    const transient = await http('POST', `/projections/transient?name=${bobQuery}`, { headers: { ...JS, ...BOB }, body: COUNTER('x') });
    expect(transient.status).toBe(201);
    expect(await waitStatus(bobQuery, (s) => s === 'Completed')).toBe('Completed');
    // A query reads as its user: bob may not read $users (system streams are $admins' by default).
    const bobUsers = uniqueStream('bobusers');
    expect((await http('POST', `/projections/transient?name=${bobUsers}`, { headers: { ...JS, ...BOB }, body: "fromStream('$users').when({ $any: function () {} })" })).status).toBe(201);
    expect(await waitStatus(bobUsers, (s) => s.startsWith('Faulted'))).toBe('Faulted (Enabled)');
    expect((await statistics(http, bobUsers)).stateReason).toBe('Not authorized: bob may not read $users');
    expect((await http('POST', '/projection/%24by_category/command/enable', { headers: BOB })).status).toBe(401);
    expect((await http('POST', '/projections/restart', { headers: BOB })).status).toBe(401);
  });

  it('reads events as a projection would (read-events)', async () => {
    const stream = uniqueStream('readme');
    await appendEvents(http, stream, [newEvent('A', { n: 1 }), newEvent('B', { n: 2 }), newEvent('A', { n: 3 })]);
    const res = await http('POST', '/projections/read-events', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: { streams: [stream], allEvents: false, events: ['A'] }, position: { $s: { [stream]: -1 } }, maxEvents: 10 }),
    });
    expect(res.status).toBe(200);
    const page = res.json<{ correlationId: string; readerPosition: unknown; events: Array<Record<string, unknown>> }>();
    expect(page.events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 3 }]);
    expect(page.events[1]).toMatchObject({ eventStreamId: stream, eventNumber: 2, eventType: 'A', isJson: true, readerPosition: { $s: { [stream]: 2 } } });
    expect(page.readerPosition).toEqual({ $s: { [stream]: 2 } });
    const bad = await http('POST', '/projections/read-events', { headers: { 'content-type': 'application/json' }, body: '{"query": 1}' });
    expect(bad.status).toBe(400);
    // Read as the requesting user: bob may not read the system stream $users.
    const denied = await http('POST', '/projections/read-events', {
      headers: { 'content-type': 'application/json', ...BOB },
      body: JSON.stringify({ query: { streams: ['$users'], allEvents: true } }),
    });
    expect(denied.status).toBe(401);
  });

  it('restarts the subsystem', async () => {
    const res = await http('POST', '/projections/restart');
    expect(res.status).toBe(200);
    expect(res.json()).toBe('Restarting');
    expect((await http('GET', '/projections/any')).status).toBe(200);
  });
});

describe('emitted streams', () => {
  it('tracks the streams a projection emits to and deletes them with it', async () => {
    const source = uniqueStream('src');
    const name = uniqueStream('emitter');
    await createProjection(
      http,
      'continuous',
      name,
      `fromStream('${source}').when({ Copy: function (s, e) { emit('copied-' + e.body.to, 'Copied', e.body); } })`,
      { emit: 'yes', trackemittedstreams: 'yes' },
    );
    await appendEvents(http, source, [newEvent('Copy', { to: `${name}-a` }), newEvent('Copy', { to: `${name}-b` }), newEvent('Copy', { to: `${name}-a` })]);
    await waitFor('the copies', async () => ((await http('GET', `/streams/copied-${name}-b/0`, { headers: { accept: 'application/json' } })).status === 200 ? true : undefined));
    const tracked = await http('GET', `/streams/%24projections-${name}-emittedstreams/0/forward/10?embed=tryharder`, { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    expect(tracked.json<{ entries: Array<{ eventType: string; data: string }> }>().entries.map((e) => [e.eventType, e.data]).sort()).toEqual([
      ['$StreamTracked', `copied-${name}-a`],
      ['$StreamTracked', `copied-${name}-b`],
    ]);
    await http('POST', `/projection/${name}/command/disable`);
    await waitStatus(name, (s) => s === 'Stopped');
    expect((await http('DELETE', `/projection/${name}?deleteEmittedStreams=yes`)).status).toBe(200);
    for (const stream of [`copied-${name}-a`, `copied-${name}-b`, `%24projections-${name}-emittedstreams`])
      expect((await http('GET', `/streams/${stream}`, { headers: { accept: 'application/json' } })).status, stream).toBe(404);
  });

  it("refuses emit when the projection's emit is not enabled", async () => {
    const source = uniqueStream('noemit');
    const name = uniqueStream('noemit');
    await createProjection(http, 'continuous', name, `fromStream('${source}').when({ Go: function () { emit('x-${name}', 'Y', {}); } })`);
    await appendEvents(http, source, [newEvent('Go', {})]);
    await waitStatus(name, (s) => s.startsWith('Faulted'));
    expect((await statistics(http, name)).stateReason).toBe("'emit' is not allowed by the projection/configuration/mode");
  });
});

describe('faults', () => {
  it.each([
    ['a handler that throws', `fromStream('$S').when({ Go: function () { throw new Error('no way'); } })`, /The .* projection failed to process an event\.\r\nHandler: .*\r\nEvent Position: .*: 0\r\n\r\nMessage:\r\n\r\nno way/],
    ['a handler that never returns', `fromStream('$S').when({ Go: function () { for (;;) {} } })`, /Projection script took too long to execute \(took: 00:00:00\.\d+, allowed: 00:00:00\.2000000\)/],
    ['a handler that allocates without bound', `fromStream('$S').when({ Go: function () { var a = []; for (;;) a.push(new Array(100000).fill(1)); } })`, /Projection exceeded its memory limit of 32 MB/],
    ['a definition that cannot run', `fromStream('$S').when({ Go: function () {} }); emit('x', 'y', {});`, /emit is not defined/],
  ])('stops %s with the reason in stateReason, and the node serves on', async (_what, template, reason) => {
    const stream = uniqueStream('fault');
    const name = uniqueStream('faulty');
    await createProjection(http, 'continuous', name, template.replace('$S', stream), { enabled: 'no' });
    if (!template.includes('for (;;) {}')) {
      // Only the endless loop is meant to meet the execution timeout; the rest may take their time.
      const config = await http('PUT', `/projection/${name}/config`, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectionExecutionTimeout: 60_000 }) });
      expect(config.status).toBe(200);
    }
    expect((await http('POST', `/projection/${name}/command/enable`)).status).toBe(200);
    await appendEvents(http, stream, [newEvent('Go', {})]);
    const status = await waitStatus(name, (s) => s.startsWith('Faulted'));
    expect(status).toBe('Faulted (Enabled)');
    const stats = await statistics(http, name);
    expect(stats.stateReason).toMatch(reason);
    // The node is fine: it still appends and serves.
    expect((await appendEvents(http, uniqueStream('after'), [newEvent('Fine', {})])).status).toBe(201);
    expect((await http('GET', '/projections/any')).status).toBe(200);
    // A faulted projection can be deleted.
    expect((await http('DELETE', `/projection/${name}`)).status).toBe(200);
  });
});

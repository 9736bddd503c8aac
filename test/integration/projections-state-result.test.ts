/**
 * Issue 29, item 9: `GET /projection/{name}/state` answers the projection's state and
 * `/result` the output of `transformBy`, kept apart as the original keeps them, also for a
 * stopped projection read from its checkpoint after a restart (before the fix, `result` then
 * answered the state); `GET /projection/{name}/config` answers the original's fields, its
 * message type id among them.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appendEvents, httpClient, newEvent, uniqueStream, type Http } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { createProjection, statistics, waitFor } from '../support/projection-helpers.js';

const dir = tempDir('edb-proj-state-result-');
let node: NodeProcess | undefined;
let http: Http;

async function start(): Promise<void> {
  node = await startNode({
    memDb: false,
    args: ['--db', path.join(dir.path, 'db'), '--index', path.join(dir.path, 'index'), '--run-projections', 'All'],
  });
  http = httpClient(node.baseUrl);
}

afterAll(async () => {
  if (node !== undefined) expect(await node.stop()).toBe(0);
  dir.remove();
});

const stream = uniqueStream('tally');
const SOURCE = `fromAll()
  .when({
    $init: function () { return { count: 0 }; },
    Tallied: function (s, e) { if (e.streamId === '${stream}') s.count += 1; return s; }
  })
  .transformBy(function (s) { return { data: 321 }; })`;

async function answers(): Promise<{ state: string; result: string }> {
  const state = await http('GET', '/projection/tally/state');
  const result = await http('GET', '/projection/tally/result');
  expect(state.status).toBe(200);
  expect(result.status).toBe(200);
  return { state: state.text, result: result.text };
}

describe('projection state and result', () => {
  it('answers the state and the transformBy result apart while running', async () => {
    await start();
    await appendEvents(http, stream, [newEvent('Tallied', {}), newEvent('Tallied', {})]);
    await createProjection(http, 'continuous', 'tally', SOURCE);
    await waitFor('the state', async () => ((await answers()).state === '{"count":2}' ? true : undefined));
    expect(await answers()).toEqual({ state: '{"count":2}', result: '{"data":321}' });
  });

  it('keeps them apart for a stopped projection after a restart', async () => {
    expect((await http('POST', '/projection/tally/command/disable')).status).toBe(200);
    await waitFor('the stop', async () => ((await statistics(http, 'tally')).status.startsWith('Stopped') ? true : undefined));
    expect(await node?.stop()).toBe(0);
    await start();
    expect((await statistics(http, 'tally')).status).toMatch(/^Stopped/);
    expect(await answers()).toEqual({ state: '{"count":2}', result: '{"data":321}' });
  });

  it('answers the config with the original fields, msgTypeId first', async () => {
    const config = await http('GET', '/projection/tally/config');
    expect(config.status).toBe(200);
    expect(Object.keys(config.json<Record<string, unknown>>())).toEqual([
      'msgTypeId', 'emitEnabled', 'trackEmittedStreams', 'checkpointAfterMs', 'checkpointHandledThreshold',
      'checkpointUnhandledBytesThreshold', 'pendingEventsThreshold', 'maxWriteBatchLength', 'maxAllowedWritesInFlight',
      'projectionExecutionTimeout',
    ]);
    expect(typeof config.json<{ msgTypeId: unknown }>().msgTypeId).toBe('number');
    // What GET answers, PUT takes back unchanged.
    const put = await http('PUT', '/projection/tally/config', { headers: { 'content-type': 'application/json' }, body: config.text });
    expect(put.status).toBe(200);
    expect((await http('GET', '/projection/tally/config')).text).toBe(config.text);
  });
});

/**
 * Admin and cluster endpoints against a real node: gossip (this member, alive, checkpoints that
 * advance), ping, health, index merge, and shutdown (401 for non-ops, then a clean exit).
 */
import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { httpClient, type Http } from '../support/http-client.js';
import { startNode, type NodeProcess } from '../support/node-process.js';
import { basic } from '../support/credentials.js';

const OPS = basic('ops', 'changeit');
let node: NodeProcess;
let http: Http;

beforeAll(async () => {
  node = await startNode();
  http = httpClient(node.baseUrl);
  await http('POST', '/users/', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ LoginName: 'worker', Password: 'worker-pw' }),
  });
});
afterAll(async () => {
  await node.stop();
});

describe('cluster endpoints', () => {
  it('GET /gossip: one alive leader with advancing checkpoints, anonymous', async () => {
    const first = await http('GET', '/gossip', { auth: false, headers: { accept: 'application/json' } });
    expect(first.status).toBe(200);
    const gossip = first.json();
    expect(gossip).toMatchObject({ serverIp: '127.0.0.1', serverPort: node.port });
    expect(gossip.members).toHaveLength(1);
    const member = gossip.members[0];
    expect(member).toMatchObject({ state: 'Leader', isAlive: true, httpEndPointIp: '127.0.0.1', httpEndPointPort: node.port, isReadOnlyReplica: false });
    for (const key of ['instanceId', 'timeStamp', 'epochId', 'esVersion']) expect(typeof member[key]).toBe('string');
    for (const key of ['writerCheckpoint', 'chaserCheckpoint', 'lastCommitPosition', 'epochNumber', 'nodePriority']) expect(typeof member[key]).toBe('number');
    await http('POST', '/streams/gossip-test', {
      headers: { 'content-type': 'application/vnd.eventstore.events+json' },
      body: JSON.stringify([{ eventId: randomUUID(), eventType: 't', data: { a: 1 } }]),
    });
    const later = (await http('GET', '/gossip', { auth: false })).json().members[0];
    expect(later.writerCheckpoint).toBeGreaterThan(member.writerCheckpoint);
    expect(later.instanceId).toBe(member.instanceId);
  });

  it('GET /ping and GET /health/live', async () => {
    expect((await http('GET', '/ping', { auth: false, headers: { accept: 'application/json' } })).json()).toEqual({ text: 'Ping request successfully handled' });
    expect((await http('GET', '/health/live', { auth: false })).status).toBe(204);
    expect((await http('POST', '/health/live', { auth: false })).status).toBe(405);
  });
});

describe('admin endpoints', () => {
  it('POST /admin/mergeindexes: 401 unless ops or admins, then an id', async () => {
    expect((await http('POST', '/admin/mergeindexes', { auth: false })).status).toBe(401);
    expect((await http('POST', '/admin/mergeindexes', { headers: { authorization: basic('worker', 'worker-pw') } })).status).toBe(401);
    const merged = await http('POST', '/admin/mergeindexes', { headers: { authorization: OPS } });
    expect(merged.status).toBe(200);
    expect(merged.json().mergeIndexesId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await http('POST', '/admin/mergeindexes')).status).toBe(200);
  });

  it('POST /admin/shutdown: 401 unless ops or admins, then 200 and a clean exit', async () => {
    expect((await http('POST', '/admin/shutdown', { auth: false })).status).toBe(401);
    expect((await http('POST', '/admin/shutdown', { headers: { authorization: basic('worker', 'worker-pw') } })).status).toBe(401);
    expect((await http('POST', '/admin/shutdown', { headers: { authorization: basic('ops', 'wrong') } })).status).toBe(401);
    const shutdown = await http('POST', '/admin/shutdown', { headers: { authorization: OPS } });
    expect(shutdown.status).toBe(200);
    expect(await node.exited()).toBe(0);
  });
});

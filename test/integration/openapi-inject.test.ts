/**
 * All security-owned registrars on one bare fastify instance (inject, in-memory engine):
 * the OpenAPI document lists every route with the zod-derived schemas, and info, gossip,
 * ping, health, admin and stats answer with the expected shapes and status codes.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { loadConfig } from '../../node/src/config/load.js';
import { registerOpenApi } from '../../node/src/api/openapi.js';
import { registerAdminRoutes } from '../../node/src/api/routes/admin.js';
import { registerClusterRoutes } from '../../node/src/api/routes/cluster.js';
import { registerInfoRoutes } from '../../node/src/api/routes/info.js';
import { registerStatsRoutes } from '../../node/src/api/routes/stats.js';
import { registerUserRoutes } from '../../node/src/api/routes/users.js';
import { createSecurity, type Security } from '../../node/src/api/security/security.js';
import { openMemEngine } from '../support/engine-fixture.js';
import type { Engine } from '../../node/src/storage/event-db.js';
import { basic } from '../support/credentials.js';

const ADMIN = { authorization: basic('admin', 'changeit') };
const OPS = { authorization: basic('ops', 'changeit') };

describe('security-owned routes (inject)', () => {
  let app: FastifyInstance;
  let security: Security;
  let db: Engine;
  let shutdowns = 0;

  beforeAll(async () => {
    db = await openMemEngine();
    const log = pino({ level: 'silent' });
    security = await createSecurity({ db, log, defaultAdminPassword: 'changeit' });
    const loaded = loadConfig({ argv: ['--default-ops-password', 'opsecret', '--http-port', '2200'], env: {}, readFile: () => '' });
    app = Fastify();
    registerOpenApi(app, { version: '1.2.3' });
    registerUserRoutes(app, { security });
    registerInfoRoutes(app, { security, loaded, version: '1.2.3' });
    registerStatsRoutes(app, { security, db, dataPath: process.cwd() });
    registerClusterRoutes(app, { db, version: '1.2.3' });
    registerAdminRoutes(app, { security, db, log, requestShutdown: () => (shutdowns += 1) });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    security.close();
    await db.close();
  });

  it('serves an OpenAPI document listing the routes with their zod schemas', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of ['/users', '/users/{login}', '/users/{login}/command/reset-password', '/info', '/info/options', '/stats', '/gossip', '/ping', '/admin/shutdown', '/admin/mergeindexes']) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    const create = doc.paths['/users'].post;
    expect(create.requestBody.content['application/json'].schema.properties).toHaveProperty('LoginName');
    expect(doc.paths['/users/{login}'].get.parameters[0].name).toBe('login');
  });

  it('GET /info is anonymous; /info/options needs ops or admins and masks secrets', async () => {
    const info = await app.inject({ method: 'GET', url: '/info' });
    expect(info.json()).toMatchObject({ esVersion: '1.2.3', state: 'leader', authentication: { type: 'internal' } });
    expect((await app.inject({ method: 'GET', url: '/info/options' })).statusCode).toBe(401);
    const options = await app.inject({ method: 'GET', url: '/info/options', headers: OPS });
    expect(options.statusCode).toBe(200);
    const list = options.json() as Array<{ name: string; value: string; configurationSource: string }>;
    expect(list.find((o) => o.name === 'NodePort')).toMatchObject({ value: '2200', configurationSource: 'Command Line' });
    expect(list.find((o) => o.name === 'DefaultOpsPassword')).toMatchObject({ value: '****' });
    expect(options.body).not.toContain('opsecret');
    expect(options.body).not.toContain('changeit');
  });

  it('gossip, ping and health', async () => {
    const gossip = (await app.inject({ method: 'GET', url: '/gossip' })).json();
    expect(gossip.members).toHaveLength(1);
    expect(gossip.members[0]).toMatchObject({ state: 'Leader', isAlive: true, esVersion: '1.2.3' });
    expect((await app.inject({ method: 'POST', url: '/gossip', payload: {} })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/ping' })).json()).toEqual({ text: 'Ping request successfully handled' });
    expect((await app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: '/health/live?liveCode=200' })).statusCode).toBe(200);
    // Only final codes: a 1xx answer would leave the client waiting for a final one.
    for (const liveCode of [100, 101, 199]) {
      const informational = await app.inject({ method: 'GET', url: `/health/live?liveCode=${liveCode}` });
      expect([informational.statusCode, informational.body]).toEqual([400, 'Bad Request: /liveCode Too small: expected number to be >=200']);
    }
    expect((await app.inject({ method: 'POST', url: '/health/live' })).statusCode).toBe(405);
  });

  it('admin commands need ops or admins', async () => {
    expect((await app.inject({ method: 'POST', url: '/admin/mergeindexes' })).statusCode).toBe(401);
    const mergeIndexes = vi.spyOn(db, 'mergeIndexes');
    const merge = await app.inject({ method: 'POST', url: '/admin/mergeindexes', headers: OPS });
    expect(merge.json().mergeIndexesId).toMatch(/^[0-9a-f-]{36}$/);
    expect(mergeIndexes).toHaveBeenCalledTimes(1);
    await security.createUser({ loginName: 'carol', fullName: '', groups: [], password: 'pw' });
    expect((await app.inject({ method: 'POST', url: '/admin/shutdown', headers: { authorization: basic('carol', 'pw') } })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/admin/shutdown', headers: ADMIN })).statusCode).toBe(200);
    expect(shutdowns).toBe(1);
  });

  it('stats: groups, sub-paths, XML, 404 for leaves and unknown paths', async () => {
    expect((await app.inject({ method: 'GET', url: '/stats' })).statusCode).toBe(401);
    const stats = (await app.inject({ method: 'GET', url: '/stats', headers: ADMIN })).json();
    expect(Object.keys(stats)).toEqual(['proc', 'sys', 'svc']);
    expect(stats.proc.id).toBe(process.pid);
    expect(typeof stats.proc.gc.totalBytesInHeaps).toBe('number');
    expect(stats.svc.queue.queueName).toBe('MainQueue');
    const gc = await app.inject({ method: 'GET', url: '/stats/proc/gc', headers: ADMIN });
    expect(gc.json()).toHaveProperty('gen0ItemsCount');
    expect((await app.inject({ method: 'GET', url: '/stats/PROC/GC', headers: ADMIN })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/stats/proc/mem', headers: ADMIN })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/stats/nope', headers: ADMIN })).statusCode).toBe(404);
    const xml = await app.inject({ method: 'GET', url: '/stats', headers: { ...ADMIN, accept: 'text/xml' } });
    expect(xml.headers['content-type']).toMatch(/xml/);
    expect(xml.body).toMatch(/^<\?xml[^>]*>\n<Stats><proc>/);
    const flat = (await app.inject({ method: 'GET', url: '/stats?group=false', headers: ADMIN })).json();
    expect(flat).toHaveProperty('proc-gc-gen0Size');
    expect((await app.inject({ method: 'GET', url: '/stats/proc?group=false', headers: ADMIN })).statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: '/stats?format=yaml', headers: ADMIN })).statusCode).toBe(400);
  });
});

/**
 * An EventDbError keeps its status in the zod-scoped routes (issue 28: a node not ready answered
 * `POST /admin/node/resign` with 500): the admin routes over a fastify instance whose
 * authenticator throws what a cluster member throws while it is not ready.
 */
import Fastify from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

import { EventDbError } from '../../errors.js';
import type { Authorizer } from '../auth-types.js';
import type { EventDb } from '../../storage/event-db-types.js';
import { registerErrorHandler } from '../error-handler.js';
import { registerAdminRoutes } from './admin.js';

function serverThrowing(error: Error) {
  const app = Fastify();
  registerErrorHandler(app);
  const security: Authorizer = {
    authenticate: () => Promise.reject(error),
    canAccessStream: () => Promise.resolve(false),
    isAdmin: () => true,
  };
  registerAdminRoutes(app, {
    security, db: {} as EventDb, log: pino({ level: 'silent' }), requestShutdown: () => undefined,
    node: { resign: () => ({ accepted: true, message: 'resigning' }), setPriority: () => undefined },
  });
  return app;
}

describe('errors in the zod-scoped routes', () => {
  let app: ReturnType<typeof serverThrowing> | undefined;
  afterEach(async () => app?.close());

  it('a not-ready node answers 503 with Retry-After and its message, not 500', async () => {
    app = serverThrowing(new EventDbError('EDB_NOT_READY', 'Server Is Not Ready: the default users have not reached this node yet', {
      httpStatus: 503, details: { reason: 'Server Is Not Ready' },
    }));
    const response = await app.inject({ method: 'POST', url: '/admin/node/resign' });
    expect(response.statusCode).toBe(503);
    expect(response.statusMessage).toBe('Server Is Not Ready');
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toBe('Server Is Not Ready: the default users have not reached this node yet');
  });

  it('a node that is not the leader answers 503; a bad request 400; each keeps its code\'s status', async () => {
    app = serverThrowing(new EventDbError('EDB_NOT_LEADER', 'this node is not the leader', { httpStatus: 503 }));
    expect((await app.inject({ method: 'POST', url: '/admin/node/priority/3' })).statusCode).toBe(503);
    await app.close();
    app = serverThrowing(new EventDbError('EDB_BAD_REQUEST', 'no', { httpStatus: 400 }));
    const bad = await app.inject({ method: 'POST', url: '/admin/mergeindexes' });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['retry-after']).toBeUndefined();
  });

  it('an unexpected error is still 500 with a fixed text', async () => {
    app = serverThrowing(new Error('boom'));
    const response = await app.inject({ method: 'POST', url: '/admin/node/resign' });
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('Internal Server Error');
  });
});

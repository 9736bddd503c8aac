/**
 * Users API against an in-memory engine through fastify inject(): every endpoint, its policy
 * and status codes, and that no response ever carries a password or its hash.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { registerUserRoutes } from '../../node/src/api/routes/users.js';
import { createSecurity, type Security } from '../../node/src/api/security/security.js';
import { openMemEngine } from '../support/engine-fixture.js';
import { basic } from '../support/credentials.js';

const ADMIN = basic('admin', 'changeit');
const OPS = basic('ops', 'changeit');

describe('users routes (inject)', () => {
  let app: FastifyInstance;
  let security: Security;
  const responses: string[] = [];

  beforeAll(async () => {
    const db = await openMemEngine();
    security = await createSecurity({ db, log: pino({ level: 'silent' }) });
    app = Fastify();
    registerUserRoutes(app, { security });
    app.addHook('onSend', async (_req, _reply, payload) => {
      if (typeof payload === 'string') responses.push(payload);
      return payload;
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    security.close();
  });

  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    auth?: string,
    body?: unknown,
  ) =>
    app.inject({
      method,
      url,
      headers: auth === undefined ? {} : { authorization: auth },
      ...(body === undefined ? {} : { payload: body as object }),
    });

  it('lists the default users for admins only', async () => {
    const list = await call('GET', '/users/', ADMIN);
    expect(list.statusCode).toBe(200);
    const body = list.json();
    expect(body.success).toBe(true);
    expect(body.data.map((u: { loginName: string }) => u.loginName)).toEqual(['admin', 'ops']);
    expect((await call('GET', '/users', OPS)).statusCode).toBe(401);
    const anon = await call('GET', '/users');
    expect(anon.statusCode).toBe(401);
    expect(anon.headers['www-authenticate']).toBe('X-Basic realm="ESDB"');
    expect((await call('GET', '/users', basic('admin', 'wrong'))).statusCode).toBe(401);
  });

  it('creates, reads, updates, disables, enables, resets and deletes a user', async () => {
    const created = await call('POST', '/users/', ADMIN, {
      loginName: 'bob',
      fullName: 'Bob',
      groups: ['devs'],
      password: 'pw1',
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({ loginName: 'bob', success: true, error: 'Success' });
    expect(created.headers.location).toMatch(/\/users\/bob$/);
    expect(
      (await call('POST', '/users/', ADMIN, { LoginName: 'bob', Password: 'x' })).statusCode,
    ).toBe(409);
    expect((await call('POST', '/users/', ADMIN, { LoginName: 'nopw' })).statusCode).toBe(400);
    expect((await call('POST', '/users/', ADMIN, { LoginName: 5 })).statusCode).toBe(400);
    expect(
      (await call('POST', '/users/', ADMIN, { LoginName: '$admins', Password: 'x' })).statusCode,
    ).toBe(400);
    expect((await call('POST', '/users/', ADMIN)).statusCode).toBe(400);

    const self = await call('GET', '/users/bob', basic('bob', 'pw1'));
    expect(self.statusCode).toBe(200);
    expect(self.json().data).toMatchObject({
      loginName: 'bob',
      fullName: 'Bob',
      groups: ['devs'],
      disabled: false,
    });
    expect((await call('GET', '/users/$current', basic('bob', 'pw1'))).json().data.loginName).toBe(
      'bob',
    );
    expect((await call('GET', '/users/admin', basic('bob', 'pw1'))).statusCode).toBe(401);
    expect((await call('GET', '/users/nobody', ADMIN)).statusCode).toBe(404);

    expect((await call('PUT', '/users/bob', ADMIN, { FullName: 'Robert' })).statusCode).toBe(200);
    expect((await call('GET', '/users/bob', ADMIN)).json().data.fullName).toBe('Robert');
    expect((await call('PUT', '/users/nobody', ADMIN, { FullName: 'x' })).statusCode).toBe(404);

    expect((await call('PUT', '/users/bob/command/disable', ADMIN)).statusCode).toBe(200);
    expect((await call('GET', '/users/bob', basic('bob', 'pw1'))).statusCode).toBe(401);
    expect((await call('POST', '/users/bob/command/enable', ADMIN)).statusCode).toBe(200);
    expect((await call('GET', '/users/bob', basic('bob', 'pw1'))).statusCode).toBe(200);
    expect((await call('PUT', '/users/nobody/command/enable', ADMIN)).statusCode).toBe(404);

    expect((await call('POST', '/users/bob/command/reset-password', ADMIN, {})).statusCode).toBe(
      400,
    );
    expect(
      (await call('POST', '/users/bob/command/reset-password', ADMIN, { NewPassword: 'pw2' }))
        .statusCode,
    ).toBe(200);
    expect((await call('GET', '/users/bob', basic('bob', 'pw1'))).statusCode).toBe(401);
    expect((await call('GET', '/users/bob', basic('bob', 'pw2'))).statusCode).toBe(200);

    const bob2 = basic('bob', 'pw2');
    expect(
      (
        await call('POST', '/users/bob/command/change-password', bob2, {
          CurrentPassword: 'bad',
          NewPassword: 'pw3',
        })
      ).statusCode,
    ).toBe(401);
    expect(
      (await call('POST', '/users/bob/command/change-password', bob2, { NewPassword: 'pw3' }))
        .statusCode,
    ).toBe(400);
    expect(
      (
        await call('POST', '/users/bob/command/change-password', ADMIN, {
          CurrentPassword: 'pw2',
          NewPassword: 'pw3',
        })
      ).statusCode,
    ).toBe(401);
    expect(
      (
        await call('POST', '/users/bob/command/change-password', bob2, {
          CurrentPassword: 'pw2',
          NewPassword: 'pw3',
        })
      ).statusCode,
    ).toBe(200);
    expect((await call('GET', '/users/bob', basic('bob', 'pw3'))).statusCode).toBe(200);

    expect((await call('DELETE', '/users/bob', OPS)).statusCode).toBe(401);
    expect((await call('DELETE', '/users/bob', ADMIN)).statusCode).toBe(204);
    expect((await call('GET', '/users/bob', basic('bob', 'pw3'))).statusCode).toBe(401);
    expect((await call('GET', '/users/bob', ADMIN)).statusCode).toBe(404);
    expect((await call('DELETE', '/users/bob', ADMIN)).statusCode).toBe(404);
    expect(
      (await call('POST', '/users', ADMIN, { LoginName: 'bob', Password: 'again' })).statusCode,
    ).toBe(201);
    expect(
      (await call('GET', '/users', ADMIN))
        .json()
        .data.map((u: { loginName: string }) => u.loginName),
    ).toEqual(['admin', 'ops', 'bob']);
  });

  it('never returns passwords or hashes', () => {
    const all = responses.join('\n');
    for (const secret of ['pw1', 'pw2', 'pw3', 'changeit', 'passwordHash', 'salt'])
      expect(all).not.toContain(secret);
  });
});

/**
 * Every Users endpoint of the spec against a real node process on disk: status codes, envelopes,
 * policies, that users are durable events (they survive a restart, `$users` and `$user-<login>`
 * exist), that default passwords come from the options, and that no response carries a secret.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { httpClient, type Http, type HttpResponse } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { basic } from '../support/credentials.js';

const ADMIN_PASSWORD = 'Adm1n-Override';
const ADMIN = basic('admin', ADMIN_PASSWORD);
const OPS = basic('ops', 'changeit');
const JSON_TYPE = { 'content-type': 'application/json' };

const dir = tempDir('eventdb-users-');
let node: NodeProcess;
let http: Http;
const bodies: string[] = [];

async function startOnDisk(): Promise<void> {
  node = await startNode({
    memDb: false,
    args: ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`, '--default-admin-password', ADMIN_PASSWORD],
  });
  http = httpClient(node.baseUrl);
}

beforeAll(startOnDisk);
afterAll(async () => {
  expect(await node.stop()).toBe(0);
  dir.remove();
});

async function call(method: string, path: string, authorization?: string, body?: unknown): Promise<HttpResponse> {
  const response = await http(method, path, {
    auth: authorization !== undefined,
    headers: { ...(authorization === undefined ? {} : { authorization }), ...(body === undefined ? {} : JSON_TYPE) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  bodies.push(response.text);
  return response;
}

describe('Users API (real node)', () => {
  it('creates the default users with the configured admin password', async () => {
    expect((await call('GET', '/users/', basic('admin', 'changeit'))).status).toBe(401);
    const list = await call('GET', '/users/', ADMIN);
    expect(list.status).toBe(200);
    expect(list.json()).toMatchObject({ success: true, error: 'Success' });
    const users = list.json().data as Array<{ loginName: string; groups: string[] }>;
    expect(users.map((u) => [u.loginName, u.groups])).toEqual([
      ['admin', ['$admins']],
      ['ops', ['$ops']],
    ]);
    expect((await call('GET', '/users', OPS)).status).toBe(401);
    expect((await call('GET', '/users')).status).toBe(401);
  });

  it('POST /users/: 201 with Location, 400 on invalid input, 409 on a duplicate, 401 for non-admins', async () => {
    const created = await call('POST', '/users/', ADMIN, { LoginName: 'dave', FullName: 'Dave', Groups: ['g1'], Password: 'dave-pw-1' });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`${node.baseUrl}/users/dave`);
    expect(created.json()).toEqual({ loginName: 'dave', success: true, error: 'Success' });
    expect((await call('POST', '/users/', ADMIN, { LoginName: 'dave', Password: 'x' })).status).toBe(409);
    expect((await call('POST', '/users/', ADMIN, { LoginName: 'nopassword' })).status).toBe(400);
    expect((await call('POST', '/users/', ADMIN, { Password: 'nologin' })).status).toBe(400);
    expect((await call('POST', '/users/', ADMIN, { LoginName: 'x', Password: 'y', Groups: 'not-an-array' })).status).toBe(400);
    expect((await call('POST', '/users/', ADMIN, '{not json')).status).toBe(400);
    expect((await call('POST', '/users/', ADMIN, '[]')).status).toBe(400);
    expect((await call('POST', '/users/', OPS, { LoginName: 'eve', Password: 'x' })).status).toBe(401);
    expect((await call('POST', '/users/', undefined, { LoginName: 'eve', Password: 'x' })).status).toBe(401);
  });

  it('GET /users/{login}: admin or self; $current; 404 for unknown users', async () => {
    const dave = basic('dave', 'dave-pw-1');
    const own = await call('GET', '/users/dave', dave);
    expect(own.status).toBe(200);
    expect(own.json().data).toMatchObject({ loginName: 'dave', fullName: 'Dave', groups: ['g1'], disabled: false });
    expect(own.json().data.links.map((l: { rel: string }) => l.rel)).toEqual(['reset-password', 'change-password', 'edit', 'delete', 'disable']);
    expect((await call('GET', '/users/$current', dave)).json().data.loginName).toBe('dave');
    expect((await call('GET', '/users/ops', dave)).status).toBe(401);
    expect((await call('GET', '/users/dave', ADMIN)).status).toBe(200);
    expect((await call('GET', '/users/ghost', ADMIN)).status).toBe(404);
    expect((await call('GET', '/users/dave')).status).toBe(401);
  });

  it('PUT /users/{login}: 200, 404 unknown, 400 invalid, 401 non-admin', async () => {
    expect((await call('PUT', '/users/dave', ADMIN, { FullName: 'David', Groups: ['g1', 'g2'] })).status).toBe(200);
    expect((await call('GET', '/users/dave', ADMIN)).json().data).toMatchObject({ fullName: 'David', groups: ['g1', 'g2'] });
    expect((await call('PUT', '/users/ghost', ADMIN, { FullName: 'x' })).status).toBe(404);
    expect((await call('PUT', '/users/dave', ADMIN, { Groups: [1] })).status).toBe(400);
    expect((await call('PUT', '/users/dave', basic('dave', 'dave-pw-1'), { FullName: 'Me' })).status).toBe(401);
  });

  it('enable and disable: 200, 404 unknown, 401 non-admin; a disabled user cannot authenticate', async () => {
    expect((await call('PUT', '/users/dave/command/disable', ADMIN)).status).toBe(200);
    expect((await call('GET', '/users/dave', ADMIN)).json().data.disabled).toBe(true);
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-1'))).status).toBe(401);
    expect((await call('PUT', '/users/dave/command/enable', ADMIN)).status).toBe(200);
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-1'))).status).toBe(200);
    expect((await call('POST', '/users/dave/command/disable', ADMIN)).status).toBe(200);
    expect((await call('POST', '/users/dave/command/enable', ADMIN)).status).toBe(200);
    expect((await call('PUT', '/users/ghost/command/enable', ADMIN)).status).toBe(404);
    expect((await call('PUT', '/users/dave/command/disable', OPS)).status).toBe(401);
  });

  it('reset-password: 200, 400 without a body, 404 unknown, 401 non-admin', async () => {
    expect((await call('POST', '/users/dave/command/reset-password', ADMIN, { NewPassword: 'dave-pw-2' })).status).toBe(200);
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-1'))).status).toBe(401);
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-2'))).status).toBe(200);
    expect((await call('POST', '/users/dave/command/reset-password', ADMIN)).status).toBe(400);
    expect((await call('POST', '/users/dave/command/reset-password', ADMIN, {})).status).toBe(400);
    expect((await call('POST', '/users/ghost/command/reset-password', ADMIN, { NewPassword: 'x' })).status).toBe(404);
    expect((await call('POST', '/users/dave/command/reset-password', OPS, { NewPassword: 'x' })).status).toBe(401);
  });

  it('change-password: self only, 400 on a bad body, 401 on a wrong current password', async () => {
    const dave = basic('dave', 'dave-pw-2');
    const path = '/users/dave/command/change-password';
    expect((await call('POST', path, dave, { CurrentPassword: 'nope', NewPassword: 'dave-pw-3' })).status).toBe(401);
    expect((await call('POST', path, dave, { currentPassword: 'dave-pw-2' })).status).toBe(400);
    expect((await call('POST', path, dave)).status).toBe(400);
    expect((await call('POST', path, ADMIN, { CurrentPassword: 'dave-pw-2', NewPassword: 'x' })).status).toBe(401);
    const changed = await call('POST', path, dave, { currentPassword: 'dave-pw-2', newPassword: 'dave-pw-3' });
    expect(changed.status).toBe(200);
    expect(changed.json()).toEqual({ loginName: 'dave', success: true, error: 'Success' });
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-3'))).status).toBe(200);
  });

  it('keeps users as durable events across a restart', async () => {
    expect(await node.stop()).toBe(0);
    await startOnDisk();
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-3'))).json().data).toMatchObject({ fullName: 'David' });
    const accept = 'application/vnd.eventstore.atom+json';
    const index = await http('GET', '/streams/$users/0/forward/20', { headers: { authorization: ADMIN, accept } });
    expect(index.status).toBe(200);
    expect(index.json().entries).toHaveLength(3);
    const own = await http('GET', '/streams/$user-dave', { headers: { authorization: basic('dave', 'dave-pw-3'), accept } });
    expect(own.status).toBe(401);
  });

  it('DELETE /users/{login}: 204, then 404; 401 for non-admins; the login can be created again', async () => {
    expect((await call('DELETE', '/users/dave', OPS)).status).toBe(401);
    expect((await call('DELETE', '/users/dave', ADMIN)).status).toBe(204);
    expect((await call('GET', '/users/$current', basic('dave', 'dave-pw-3'))).status).toBe(401);
    expect((await call('GET', '/users/dave', ADMIN)).status).toBe(404);
    expect((await call('DELETE', '/users/dave', ADMIN)).status).toBe(404);
    expect((await call('POST', '/users', ADMIN, { LoginName: 'dave', Password: 'fresh' })).status).toBe(201);
    const names = (await call('GET', '/users', ADMIN)).json().data.map((u: { loginName: string }) => u.loginName);
    expect(names).toEqual(['admin', 'ops', 'dave']);
  });

  it('never returns or logs a password or its hash', () => {
    const everything = [...bodies, ...node.output].join('\n');
    for (const secret of [ADMIN_PASSWORD, 'dave-pw-1', 'dave-pw-2', 'dave-pw-3', 'passwordHash', '"salt"']) {
      expect(everything).not.toContain(secret);
    }
  });
});

/**
 * Issue 29, item 2 against a real node: the last enabled `$admins` member can be neither
 * deleted, nor disabled, nor taken out of `$admins` (409 with a message, nothing changed), also
 * when two deletes race; and user creation, changes, password resets and deletions are logged at
 * info (who, whom, outcome), never with a password or hash.
 */
import { describe, expect, it } from 'vitest';

import { basic } from '../support/credentials.js';
import type { HttpResponse } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode({ args: ['--log-level', 'info'] });
const JSON_TYPE = { 'content-type': 'application/json' };
const ROOT = basic('root', 'root-pw-29');
const A2 = basic('a2', 'a2-pw-29');

function call(method: string, path: string, authorization?: string, body?: unknown): Promise<HttpResponse> {
  return running.http(method, path, {
    headers: { ...(authorization === undefined ? {} : { authorization }), ...(body === undefined ? {} : JSON_TYPE) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

function logLines(message: RegExp): Array<Record<string, unknown>> {
  return running.node.output
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => typeof entry.msg === 'string' && message.test(entry.msg));
}

describe('the last enabled admin', () => {
  it('cannot be deleted, disabled or removed from $admins: 409 with a message, and admin still works', async () => {
    const deleted = await call('DELETE', '/users/admin');
    expect(deleted.status).toBe(409);
    expect(deleted.json()).toMatchObject({ loginName: 'admin', success: false });
    expect(deleted.json().error).toMatch(/'admin' is the last enabled member of \$admins and cannot be deleted/);
    const disabled = await call('POST', '/users/admin/command/disable');
    expect(disabled.status).toBe(409);
    expect(disabled.json().error).toMatch(/cannot be disabled/);
    const demoted = await call('PUT', '/users/admin', undefined, { FullName: 'x', Groups: ['$ops'] });
    expect(demoted.status).toBe(409);
    expect(demoted.json().error).toMatch(/cannot be removed from \$admins/);
    const user = await call('GET', '/users/admin');
    expect(user.status).toBe(200);
    expect(user.json().data).toMatchObject({ loginName: 'admin', groups: ['$admins'], disabled: false });
    expect(logLines(/^user deleted: refused$/)).toEqual([expect.objectContaining({ level: 30, loginName: 'admin', by: 'admin', result: 'last-admin' })]);
  });

  it('can go once another enabled admin exists; then that one is the last', async () => {
    expect((await call('POST', '/users/', undefined, { LoginName: 'root', FullName: 'Root', Groups: ['$admins'], Password: 'root-pw-29' })).status).toBe(201);
    expect((await call('POST', '/users/admin/command/disable')).status).toBe(200);
    expect((await call('DELETE', '/users/admin', ROOT)).status).toBe(204);
    expect((await call('GET', '/users/', ROOT)).status).toBe(200);
    expect((await call('DELETE', '/users/root', ROOT)).status).toBe(409);
    expect((await call('GET', '/users/', ROOT)).status).toBe(200);
  });

  it('two deletes racing for the last two admins: exactly one succeeds', async () => {
    expect((await call('POST', '/users/', ROOT, { LoginName: 'a2', FullName: 'A2', Groups: ['$admins'], Password: 'a2-pw-29' })).status).toBe(201);
    const [first, second] = await Promise.all([call('DELETE', '/users/root', A2), call('DELETE', '/users/a2', ROOT)]);
    expect([first.status, second.status].sort()).toEqual([204, 409]);
    const survivor = first.status === 409 ? ROOT : A2;
    const list = await call('GET', '/users/', survivor);
    expect(list.status).toBe(200);
    const admins = (list.json().data as Array<{ loginName: string; groups: string[]; disabled: boolean }>).filter(
      (u) => u.groups.includes('$admins') && !u.disabled,
    );
    expect(admins).toHaveLength(1);
  });

  it('user creation, changes, password resets and deletions are logged at info, without secrets', async () => {
    const survivor = (await call('GET', '/users/', ROOT)).status === 200 ? ROOT : A2;
    expect((await call('POST', '/users/ops/command/reset-password', survivor, { NewPassword: 'ops-new-pw-29' })).status).toBe(200);
    expect(logLines(/^user created$/).map((l) => [l.loginName, l.by, l.level])).toEqual(
      expect.arrayContaining([['root', 'admin', 30], ['a2', 'root', 30]]),
    );
    expect(logLines(/^user disabled$/).map((l) => [l.loginName, l.by])).toEqual([['admin', 'admin']]);
    expect(logLines(/^user deleted$/).map((l) => l.loginName)).toEqual(expect.arrayContaining(['admin']));
    expect(logLines(/^user password reset$/).map((l) => [l.loginName, l.level])).toEqual([['ops', 30]]);
    const everything = running.node.output.join('\n');
    for (const secret of ['root-pw-29', 'a2-pw-29', 'ops-new-pw-29', 'passwordHash']) expect(everything).not.toContain(secret);
  });
});

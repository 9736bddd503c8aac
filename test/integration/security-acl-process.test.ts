/**
 * The ACL matrix against a real node process: admin, ops, an ordinary user and anonymous ×
 * read / write / delete / metadata read / metadata write, on a user stream without `$acl`, a
 * user stream with `$acl`, a system stream, and `$all`. Also: wrong and disabled credentials
 * are 401, and no credential ever appears in a response or in the node's log (debug level).
 */
import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { httpClient, type Http } from '../support/http-client.js';
import { startNode, type NodeProcess } from '../support/node-process.js';
import { basic } from '../support/credentials.js';

const EVENTS_JSON = 'application/vnd.eventstore.events+json';
const ALICE_PASSWORD = 'alice-Secret-42';
const PRINCIPALS = {
  admin: basic('admin', 'changeit'),
  ops: basic('ops', 'changeit'),
  alice: basic('alice', ALICE_PASSWORD),
  anonymous: undefined,
} as const;
type PrincipalName = keyof typeof PRINCIPALS;
type Access = 'r' | 'w' | 'd' | 'mr' | 'mw';
const ACCESSES: Access[] = ['r', 'w', 'd', 'mr', 'mw'];
const RESTRICTED_ACL = { $r: 'alice', $w: '$ops', $d: '$admins', $mr: ['alice'], $mw: [] };

let node: NodeProcess;
let http: Http;
const bodies: string[] = [];

beforeAll(async () => {
  node = await startNode({ args: ['--log-level', 'debug'] });
  http = httpClient(node.baseUrl);
  const created = await http('POST', '/users/', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ LoginName: 'alice', FullName: 'Alice', Groups: ['devs'], Password: ALICE_PASSWORD }),
  });
  expect(created.status).toBe(201);
});

afterAll(async () => {
  expect(await node.stop()).toBe(0);
});

function as(principal: PrincipalName) {
  const authorization = PRINCIPALS[principal];
  return async (method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}) => {
    const response = await http(method, path, {
      ...init,
      auth: authorization !== undefined,
      headers: { ...init.headers, ...(authorization === undefined ? {} : { authorization }) },
    });
    bodies.push(response.text);
    return response;
  };
}

const eventsBody = (eventType: string, data: unknown): string =>
  JSON.stringify([{ eventId: randomUUID(), eventType, data }]);

/** A fresh stream with one event and, optionally, an ACL, created by admin. */
async function freshStream(prefix: string, acl?: object): Promise<string> {
  const stream = `${prefix}-${randomUUID().slice(0, 8)}`;
  const admin = as('admin');
  const appended = await admin('POST', `/streams/${encodeURIComponent(stream)}`, {
    headers: { 'content-type': EVENTS_JSON },
    body: eventsBody('seed', { n: 1 }),
  });
  expect(appended.status).toBe(201);
  if (acl !== undefined) {
    const meta = await admin('POST', `/streams/${encodeURIComponent(stream)}/metadata`, {
      headers: { 'content-type': EVENTS_JSON },
      body: eventsBody('$metadata', { $acl: acl }),
    });
    expect(meta.status).toBe(201);
  }
  return stream;
}

/** Performs `access` as `principal`; true when allowed (2xx), false on 401, throws otherwise. */
async function attempt(principal: PrincipalName, stream: string, access: Access): Promise<boolean> {
  const call = as(principal);
  const path = `/streams/${encodeURIComponent(stream)}`;
  const json = { accept: 'application/vnd.eventstore.atom+json' };
  const write = { 'content-type': EVENTS_JSON };
  const response =
    access === 'r'
      ? await call('GET', path, { headers: json })
      : access === 'w'
        ? await call('POST', path, { headers: write, body: eventsBody('more', { n: 2 }) })
        : access === 'd'
          ? await call('DELETE', path)
          : access === 'mr'
            ? await call('GET', `${path}/metadata`, { headers: { accept: 'application/json' } })
            : await call('POST', `${path}/metadata`, { headers: write, body: eventsBody('$metadata', { $acl: RESTRICTED_ACL }) });
  if (response.status === 401) return false;
  if (response.status >= 200 && response.status < 300) return true;
  throw new Error(`${principal} ${access} ${stream}: unexpected ${response.status} ${response.text}`);
}

async function allowedAccesses(principal: PrincipalName, prefix: string, acl?: object): Promise<string> {
  const allowed: Access[] = [];
  for (const access of ACCESSES) {
    if (await attempt(principal, await freshStream(prefix, acl), access)) allowed.push(access);
  }
  return allowed.join(',');
}

describe('stream ACLs over HTTP', () => {
  it('user stream without $acl: every authenticated user, never anonymous', async () => {
    expect(await allowedAccesses('admin', 'open')).toBe('r,w,d,mr,mw');
    expect(await allowedAccesses('ops', 'open')).toBe('r,w,d,mr,mw');
    expect(await allowedAccesses('alice', 'open')).toBe('r,w,d,mr,mw');
    expect(await allowedAccesses('anonymous', 'open')).toBe('');
  });

  it('user stream with $acl: roles per action, admins always', async () => {
    expect(await allowedAccesses('admin', 'locked', RESTRICTED_ACL)).toBe('r,w,d,mr,mw');
    expect(await allowedAccesses('ops', 'locked', RESTRICTED_ACL)).toBe('w');
    expect(await allowedAccesses('alice', 'locked', RESTRICTED_ACL)).toBe('r,mr');
    expect(await allowedAccesses('anonymous', 'locked', RESTRICTED_ACL)).toBe('');
  });

  it('system stream: admins only', async () => {
    expect(await allowedAccesses('admin', '$sys')).toBe('r,w,d,mr,mw');
    expect(await allowedAccesses('ops', '$sys')).toBe('');
    expect(await allowedAccesses('alice', '$sys')).toBe('');
    expect(await allowedAccesses('anonymous', '$sys')).toBe('');
  });

  it('$all: read by every authenticated user, never anonymously; nobody writes or deletes it', async () => {
    for (const principal of Object.keys(PRINCIPALS) as PrincipalName[]) {
      const read = await as(principal)('GET', '/streams/$all', { headers: { accept: 'application/vnd.eventstore.atom+json' } });
      expect(read.status, `${principal} read $all`).toBe(principal === 'anonymous' ? 401 : 200);
      const deleted = await as(principal)('DELETE', '/streams/$all');
      expect(deleted.status, `${principal} delete $all`).toBe(401);
    }
  });

  it('an ACL change takes effect on the next request', async () => {
    const stream = await freshStream('changing');
    expect(await attempt('alice', stream, 'r')).toBe(true);
    const locked = await as('admin')('POST', `/streams/${stream}/metadata`, {
      headers: { 'content-type': EVENTS_JSON },
      body: eventsBody('$metadata', { $acl: { $r: '$admins' } }),
    });
    expect(locked.status).toBe(201);
    expect(await attempt('alice', stream, 'r')).toBe(false);
  });

  it('wrong passwords, unknown users and disabled users get 401 with the X-Basic challenge', async () => {
    const stream = await freshStream('creds');
    for (const authorization of [basic('alice', 'wrong'), basic('nobody', 'x'), 'Basic !!!']) {
      const response = await http('GET', `/streams/${stream}`, { headers: { authorization, accept: 'application/json' } });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('X-Basic realm="ESDB"');
    }
    expect((await as('admin')('PUT', '/users/alice/command/disable')).status).toBe(200);
    expect(await attempt('alice', stream, 'r')).toBe(false);
    expect((await as('admin')('PUT', '/users/alice/command/enable')).status).toBe(200);
    expect(await attempt('alice', stream, 'r')).toBe(true);
  });

  it('never echoes a password or hash in responses or logs', () => {
    const everything = [...bodies, ...node.output].join('\n');
    for (const secret of [ALICE_PASSWORD, 'changeit', 'passwordHash', PRINCIPALS.alice, PRINCIPALS.admin]) {
      expect(everything).not.toContain(secret);
    }
  });
});

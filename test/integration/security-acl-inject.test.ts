/**
 * ACL evaluation through the Security service over an in-memory engine: defaults, per-stream
 * `$acl`, `$settings` defaults, metastreams, `$all`, and cache invalidation on changes.
 */
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';

import type { Principal, StreamAccess } from '../../node/src/api/auth-types.js';
import { createSecurity, type Security } from '../../node/src/api/security/security.js';
import { openMemEngine } from '../support/engine-fixture.js';
import type { Engine } from '../../node/src/storage/event-db.js';

const admin: Principal = { login: 'admin', groups: ['$admins'] };
const ops: Principal = { login: 'ops', groups: ['$ops'] };
const user: Principal = { login: 'alice', groups: ['devs'] };
const ACCESS: StreamAccess[] = ['r', 'w', 'd', 'mr', 'mw'];

describe('stream ACLs', () => {
  let db: Engine;
  let security: Security;

  beforeAll(async () => {
    db = await openMemEngine();
    security = await createSecurity({ db, log: pino({ level: 'silent' }) });
  });

  const matrix = async (p: Principal | undefined, stream: string): Promise<string> => {
    const allowed = await Promise.all(ACCESS.map((a) => security.canAccessStream(p, stream, a)));
    return ACCESS.filter((_, i) => allowed[i]).join(',');
  };

  it('defaults: user streams open to authenticated users, system streams to admins', async () => {
    expect(await matrix(user, 'orders')).toBe('r,w,d,mr,mw');
    expect(await matrix(ops, 'orders')).toBe('r,w,d,mr,mw');
    expect(await matrix(undefined, 'orders')).toBe('');
    expect(await matrix(admin, '$system')).toBe('r,w,d,mr,mw');
    expect(await matrix(ops, '$system')).toBe('');
    expect(await matrix(user, '$system')).toBe('');
  });

  it('$all: readable by every authenticated user, its metadata by admins; never writable or deletable', async () => {
    expect(await matrix(admin, '$all')).toBe('r,mr,mw');
    expect(await matrix(ops, '$all')).toBe('r');
    expect(await matrix(user, '$all')).toBe('r');
    expect(await matrix(undefined, '$all')).toBe('');
  });

  it('a stream $acl overrides the defaults per entry and takes effect at once', async () => {
    await db.setStreamMetadata('secret', -2, { $acl: { $r: 'alice', $w: ['$ops'], $mr: [] } });
    expect(await matrix(user, 'secret')).toBe('r,d,mw');
    expect(await matrix(ops, 'secret')).toBe('w,d,mw');
    expect(await matrix(admin, 'secret')).toBe('r,w,d,mr,mw');
    expect(await security.canAccessStream(user, '$$secret', 'r')).toBe(false);
    expect(await security.canAccessStream(user, '$$secret', 'w')).toBe(true);
    await db.setStreamMetadata('secret', -2, {});
    expect(await matrix(user, 'secret')).toBe('r,w,d,mr,mw');
  });

  it('$settings changes the server-wide defaults', async () => {
    await db.append('$settings', -2, [
      {
        eventId: crypto.randomUUID(),
        eventType: 'update-default-acl',
        data: Buffer.from(JSON.stringify({ $userStreamAcl: { $r: '$all', $w: 'devs' }, $systemStreamAcl: { $r: ['$ops'] } })),
        metadata: new Uint8Array(0),
        isJson: true,
      },
    ]);
    expect(await matrix(user, 'orders')).toBe('r,w,d,mr,mw');
    expect(await matrix(ops, 'orders')).toBe('r,d,mr,mw');
    expect(await matrix(ops, '$system')).toBe('r');
  });

  it('anonymous access follows $all only when enabled', async () => {
    const open = await createSecurity({ db, log: pino({ level: 'silent' }), allowAnonymousStreamAccess: true });
    expect(await open.canAccessStream(undefined, 'orders', 'r')).toBe(true);
    expect(await open.canAccessStream(undefined, 'orders', 'w')).toBe(false);
    open.close();
  });

  it('isAdmin distinguishes admins and ops', () => {
    expect(security.isAdmin(admin, false)).toBe(true);
    expect(security.isAdmin(ops, false)).toBe(false);
    expect(security.isAdmin(ops, true)).toBe(true);
    expect(security.isAdmin(user, true)).toBe(false);
    expect(security.isAdmin(undefined, true)).toBe(false);
  });
});

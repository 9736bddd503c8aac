/**
 * The Users and Operations gRPC services against a real TLS node, called through the stubs the
 * official Node client bundles (@kurrent/kurrentdb-client's generated grpc-js code, unchanged;
 * the client has no API of its own for them). Users created, read, updated, disabled and
 * enabled, passwords changed and reset; a scavenge started and stopped; the ACLs of the HTTP
 * twins (a non-admin is refused, nothing changes); bad input answered INVALID_ARGUMENT.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KurrentDBClient, jsonEvent } from '@kurrent/kurrentdb-client';

import { httpsRequest } from '../support/https-client.js';
import { startTlsNode } from '../support/tls-node.js';
import { tempDir, type NodeProcess } from '../support/node-process.js';

const require = createRequire(import.meta.url);
/* eslint-disable @typescript-eslint/no-explicit-any */
const grpc = require('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
const GENERATED = '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1';
const usersGrpc = require(`${GENERATED}/usermanagement_grpc_pb.js`) as any;
const usersPb = require(`${GENERATED}/usermanagement_pb.js`) as any;
const opsGrpc = require(`${GENERATED}/operations_grpc_pb.js`) as any;
const opsPb = require(`${GENERATED}/operations_pb.js`) as any;
const sharedPb = require(`${GENERATED}/shared_pb.js`) as any;
// The client bundles no monitoring stubs: a method definition written from the wire's facts
// (StatsReq: use_metadata = 1 bool, refresh_time_period_in_ms = 4 uint64; StatsResp: stats = 1 map<string,string>).
function encodeStatsReq(refreshMs: number): Buffer {
  const bytes: number[] = [];
  if (refreshMs > 0) {
    bytes.push(0x20);
    let value = refreshMs;
    while (value > 0x7f) { bytes.push((value & 0x7f) | 0x80); value = Math.floor(value / 128); }
    bytes.push(value);
  }
  return Buffer.from(bytes);
}
function decodeStatsResp(buffer: Buffer): Record<string, string> {
  let offset = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = buffer[offset++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
    }
  };
  const out: Record<string, string> = {};
  while (offset < buffer.length) {
    const tag = varint();
    const length = varint();
    const end = offset + length;
    if (tag === 0x0a) {
      let key = '';
      let value = '';
      while (offset < end) {
        const innerTag = varint();
        const innerLength = varint();
        const text = buffer.subarray(offset, offset + innerLength).toString('utf8');
        offset += innerLength;
        if (innerTag === 0x0a) key = text;
        else if (innerTag === 0x12) value = text;
      }
      out[key] = value;
    }
    offset = end;
  }
  return out;
}
const MonitoringClient = grpc.makeGenericClientConstructor({
  stats: {
    path: '/event_store.client.monitoring.Monitoring/Stats',
    requestStream: false,
    responseStream: true,
    requestSerialize: (refreshMs: number) => encodeStatsReq(refreshMs),
    requestDeserialize: (buffer: Buffer) => buffer,
    responseSerialize: (value: Buffer) => value,
    responseDeserialize: (buffer: Buffer) => decodeStatsResp(buffer),
  },
}, 'Monitoring');

interface CallError { code: number; details: string; metadata: import('@grpc/grpc-js').Metadata }

function metadataFor(user: string, password: string): import('@grpc/grpc-js').Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`);
  return metadata;
}

function unary<T>(client: any, method: string, request: unknown, metadata: import('@grpc/grpc-js').Metadata): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, { deadline: Date.now() + 20_000 }, (err: CallError | null, response: T) => (err ? reject(err) : resolve(response)));
  });
}

function streamed<T>(client: any, method: string, request: unknown, metadata: import('@grpc/grpc-js').Metadata): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const out: T[] = [];
    const call = client[method](request, metadata, { deadline: Date.now() + 20_000 });
    call.on('data', (message: T) => out.push(message));
    call.on('error', reject);
    call.on('end', () => resolve(out));
  });
}

async function failure(promise: Promise<unknown>): Promise<CallError> {
  try {
    await promise;
  } catch (err) {
    return err as CallError;
  }
  throw new Error('expected the call to fail');
}

function userOptions<T>(Req: any, fill: (options: any) => void): T {
  const request = new Req();
  const options = new Req.Options();
  fill(options);
  request.setOptions(options);
  return request as T;
}

describe('TLS node: Users and Operations over gRPC', () => {
  const dir = tempDir('eventdb-grpc-admin-');
  let node: NodeProcess;
  let caPem: string;
  let caPath: string;
  let users: any;
  let ops: any;
  const admin = (): import('@grpc/grpc-js').Metadata => metadataFor('admin', 'changeit');
  beforeAll(async () => {
    const tls = await startTlsNode(dir.path, { memDb: false, args: ['--db', join(dir.path, 'db'), '--index', join(dir.path, 'index'), '--chunk-size', '16384'] });
    node = tls.node;
    const ca = tls.ca;
    caPem = ca.certPem;
    caPath = ca.certPath;
    const credentials = grpc.credentials.createSsl(readFileSync(ca.certPath));
    users = new usersGrpc.UsersClient(`localhost:${node.port}`, credentials);
    ops = new opsGrpc.OperationsClient(`localhost:${node.port}`, credentials);
  });
  afterAll(async () => {
    users?.close();
    ops?.close();
    await node?.stop();
    dir.remove();
  });

  const details = async (login: string, metadata = admin()): Promise<any[]> =>
    (await streamed<any>(users, 'details', userOptions(usersPb.DetailsReq, (o) => o.setLoginName(login)), metadata)).map((m) => m.getUserDetails().toObject());

  it('creates, reads, updates, disables, enables and deletes a user; passwords are changed and reset', async () => {
    const login = `alice-${randomUUID().slice(0, 8)}`;
    await unary(users, 'create', userOptions(usersPb.CreateReq, (o) => {
      o.setLoginName(login); o.setPassword('first'); o.setFullName('Alice A'); o.setGroupsList(['team']);
    }), admin());
    const [created] = await details(login);
    expect(created).toMatchObject({ loginName: login, fullName: 'Alice A', groupsList: ['team'], disabled: false });
    expect(Math.abs(Number(BigInt(created.lastUpdated.ticksSinceEpoch) / 10_000n) - Date.now())).toBeLessThan(60_000);
    const everyone = (await details('')).map((u) => u.loginName);
    expect(everyone).toEqual(expect.arrayContaining(['admin', 'ops', login]));
    // The same user over HTTP.
    const overHttp = await httpsRequest(`https://localhost:${node.port}/users/${login}`, { ca: caPem });
    expect(overHttp.json()).toMatchObject({ data: { loginName: login, fullName: 'Alice A' } });

    await unary(users, 'update', userOptions(usersPb.UpdateReq, (o) => { o.setLoginName(login); o.setFullName('Alice B'); o.setGroupsList(['team', 'leads']); }), admin());
    expect((await details(login))[0]).toMatchObject({ fullName: 'Alice B', groupsList: ['team', 'leads'] });

    // She reads herself; another user's details are refused.
    expect((await details(login, metadataFor(login, 'first')))[0].loginName).toBe(login);
    expect((await failure(details('admin', metadataFor(login, 'first')))).code).toBe(grpc.status.PERMISSION_DENIED);

    await unary(users, 'disable', userOptions(usersPb.DisableReq, (o) => o.setLoginName(login)), admin());
    expect((await details(login))[0].disabled).toBe(true);
    expect((await failure(details(login, metadataFor(login, 'first')))).code).toBe(grpc.status.UNAUTHENTICATED);
    await unary(users, 'enable', userOptions(usersPb.EnableReq, (o) => o.setLoginName(login)), admin());
    expect((await details(login, metadataFor(login, 'first')))[0].disabled).toBe(false);

    // Her own password change needs the current one; afterwards only the new one works.
    const wrongCurrent = await failure(unary(users, 'changePassword', userOptions(usersPb.ChangePasswordReq, (o) => {
      o.setLoginName(login); o.setCurrentPassword('nope'); o.setNewPassword('second');
    }), metadataFor(login, 'first')));
    expect(wrongCurrent.code).toBe(grpc.status.PERMISSION_DENIED);
    await unary(users, 'changePassword', userOptions(usersPb.ChangePasswordReq, (o) => {
      o.setLoginName(login); o.setCurrentPassword('first'); o.setNewPassword('second');
    }), metadataFor(login, 'first'));
    expect((await failure(details(login, metadataFor(login, 'first')))).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await details(login, metadataFor(login, 'second')))[0].loginName).toBe(login);
    await unary(users, 'resetPassword', userOptions(usersPb.ResetPasswordReq, (o) => { o.setLoginName(login); o.setNewPassword('third'); }), admin());
    expect((await details(login, metadataFor(login, 'third')))[0].loginName).toBe(login);

    await unary(users, 'delete', userOptions(usersPb.DeleteReq, (o) => o.setLoginName(login)), admin());
    const gone = await failure(details(login));
    expect(gone.code).toBe(grpc.status.NOT_FOUND);
    expect(gone.metadata.get('exception')).toEqual(['user-not-found']);
    expect(gone.metadata.get('login-name')).toEqual([login]);
  });

  it('refuses a non-admin and bad input with a clear status, changing nothing', async () => {
    const login = `bob-${randomUUID().slice(0, 8)}`;
    const byOps = await failure(unary(users, 'create', userOptions(usersPb.CreateReq, (o) => { o.setLoginName(login); o.setPassword('pw'); }), metadataFor('ops', 'changeit')));
    expect(byOps.code).toBe(grpc.status.PERMISSION_DENIED);
    const anonymous = await failure(unary(users, 'create', userOptions(usersPb.CreateReq, (o) => { o.setLoginName(login); o.setPassword('pw'); }), new grpc.Metadata()));
    expect(anonymous.code).toBe(grpc.status.PERMISSION_DENIED);
    const noPassword = await failure(unary(users, 'create', userOptions(usersPb.CreateReq, (o) => o.setLoginName(login)), admin()));
    expect([noPassword.code, noPassword.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'password is required']);
    const badName = await failure(unary(users, 'create', userOptions(usersPb.CreateReq, (o) => { o.setLoginName('$admins'); o.setPassword('pw'); }), admin()));
    expect(badName.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(badName.details).toMatch(/login_name/);
    expect((await failure(details(login))).code).toBe(grpc.status.NOT_FOUND);
    // ops may not disable admin; admin stays enabled.
    expect((await failure(unary(users, 'disable', userOptions(usersPb.DisableReq, (o) => o.setLoginName('admin')), metadataFor('ops', 'changeit')))).code)
      .toBe(grpc.status.PERMISSION_DENIED);
    expect((await details('admin'))[0].disabled).toBe(false);
    // A duplicate is a conflict.
    const dup = await failure(unary(users, 'create', userOptions(usersPb.CreateReq, (o) => { o.setLoginName('ops'); o.setPassword('pw'); }), admin()));
    expect(dup.metadata.get('exception')).toEqual(['user-conflict']);
    // Operations need $admins or $ops: a plain user is refused.
    const carol = `carol-${randomUUID().slice(0, 8)}`;
    await unary(users, 'create', userOptions(usersPb.CreateReq, (o) => { o.setLoginName(carol); o.setPassword('pw'); }), admin());
    const stop = new opsPb.StopScavengeReq();
    const stopOptions = new opsPb.StopScavengeReq.Options();
    stopOptions.setScavengeId('current');
    stop.setOptions(stopOptions);
    expect((await failure(unary(ops, 'startScavenge', new opsPb.StartScavengeReq(), metadataFor(carol, 'pw')))).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await failure(unary(ops, 'shutdown', new sharedPb.Empty(), metadataFor(carol, 'pw')))).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await failure(unary(ops, 'stopScavenge', stop, metadataFor(carol, 'pw')))).code).toBe(grpc.status.PERMISSION_DENIED);
    const current = await httpsRequest(`https://localhost:${node.port}/admin/scavenge/current`, { ca: caPem, headers: { accept: 'application/json' } });
    expect(current.json()).toMatchObject({ scavengeId: '' });
    // A node alone cannot resign; bad scavenge parameters are refused before anything starts.
    expect((await failure(unary(ops, 'resignNode', new sharedPb.Empty(), admin()))).code).toBe(grpc.status.FAILED_PRECONDITION);
    const badStart = new opsPb.StartScavengeReq();
    const badStartOptions = new opsPb.StartScavengeReq.Options();
    badStartOptions.setThreadCount(-1);
    badStart.setOptions(badStartOptions);
    const badThreads = await failure(unary(ops, 'startScavenge', badStart, admin()));
    expect([badThreads.code, badThreads.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'threads must be a 1 or above']);
  });

  it('starts and stops a scavenge; a second start while one runs answers InProgress; merge indexes and restarting subscriptions work', async () => {
    // Removable data over a few dozen small chunks, and a throttled run (HTTP only has the throttle) to stop.
    const client = KurrentDBClient.connectionString(`kurrentdb://admin:changeit@localhost:${node.port}?tls=true&tlsCAFile=${encodeURIComponent(caPath)}`);
    try {
      for (let s = 0; s < 20; s++) {
        const stream = `scavenge-load-${randomUUID().slice(0, 8)}`;
        await client.setStreamMetadata(stream, { maxCount: 1 });
        // Batches well under a chunk (a write never straddles chunks).
        for (let batch = 0; batch < 4; batch++) {
          await client.appendToStream(stream, Array.from({ length: 5 }, () => jsonEvent({ type: 'load', data: { padding: 'x'.repeat(800) } })));
        }
      }
    } finally {
      await client.dispose();
    }
    const started = await httpsRequest(`https://localhost:${node.port}/admin/scavenge?throttlePercent=1`, { ca: caPem, method: 'POST', headers: { accept: 'application/json' } });
    const runningId = started.json<{ scavengeId: string }>().scavengeId;
    const again = await unary<any>(ops, 'startScavenge', new opsPb.StartScavengeReq(), admin());
    expect([again.getScavengeId(), again.getScavengeResult()]).toEqual([runningId, opsPb.ScavengeResp.ScavengeResult.INPROGRESS]);

    const unknown = new opsPb.StopScavengeReq();
    const unknownOptions = new opsPb.StopScavengeReq.Options();
    unknownOptions.setScavengeId(randomUUID());
    unknown.setOptions(unknownOptions);
    const notFound = await failure(unary(ops, 'stopScavenge', unknown, admin()));
    expect([notFound.code, notFound.metadata.get('exception')]).toEqual([grpc.status.NOT_FOUND, ['scavenge-not-found']]);

    const stop = new opsPb.StopScavengeReq();
    const stopOptions = new opsPb.StopScavengeReq.Options();
    stopOptions.setScavengeId(runningId);
    stop.setOptions(stopOptions);
    const stopped = await unary<any>(ops, 'stopScavenge', stop, metadataFor('ops', 'changeit'));
    expect([stopped.getScavengeId(), stopped.getScavengeResult()]).toEqual([runningId, opsPb.ScavengeResp.ScavengeResult.STOPPED]);
    const record = await httpsRequest(`https://localhost:${node.port}/admin/scavenge/${runningId}`, { ca: caPem, headers: { accept: 'application/json' } });
    expect(record.json()).toMatchObject({ scavengeResult: 'Stopped' });

    // A run started over gRPC is the node's current or last scavenge.
    const fresh = await unary<any>(ops, 'startScavenge', new opsPb.StartScavengeReq(), admin());
    expect(fresh.getScavengeResult()).toBe(opsPb.ScavengeResp.ScavengeResult.STARTED);
    expect(fresh.getScavengeId()).not.toBe(runningId);
    const freshRecord = await httpsRequest(`https://localhost:${node.port}/admin/scavenge/${fresh.getScavengeId()}`, { ca: caPem, headers: { accept: 'application/json' } });
    expect(freshRecord.status).toBe(200);

    await unary(ops, 'mergeIndexes', new sharedPb.Empty(), admin());
    await unary(ops, 'restartPersistentSubscriptions', new sharedPb.Empty(), metadataFor('ops', 'changeit'));
    const priority = new opsPb.SetNodePriorityReq();
    priority.setPriority(5);
    await unary(ops, 'setNodePriority', priority, admin());
  });

  it('streams the statistics to an authenticated user, once or every refresh period; anonymous is refused', async () => {
    const monitoring = new MonitoringClient(`localhost:${node.port}`, grpc.credentials.createSsl(readFileSync(caPath))) as any;
    try {
      const once = await streamed<Record<string, string>>(monitoring, 'stats', 0, metadataFor('ops', 'changeit'));
      expect(once).toHaveLength(1);
      expect(Number(once[0]!['proc-cpu'])).toBeGreaterThanOrEqual(0);
      expect(Object.keys(once[0]!).some((key) => key.startsWith('sys-'))).toBe(true);
      const periodic: Record<string, string>[] = [];
      const call = monitoring.stats(200, admin());
      call.on('data', (stats: Record<string, string>) => periodic.push(stats));
      call.on('error', () => undefined);
      const deadline = Date.now() + 10_000;
      while (periodic.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      call.cancel();
      expect(periodic.length).toBeGreaterThanOrEqual(3);
      const anonymous = await failure(streamed(monitoring, 'stats', 0, new grpc.Metadata()));
      expect(anonymous.code).toBe(grpc.status.PERMISSION_DENIED);
    } finally {
      monitoring.close();
    }
  });

  it('shuts the node down on request (last: the node exits 0)', async () => {
    await unary(ops, 'shutdown', new sharedPb.Empty(), metadataFor('ops', 'changeit'));
    const code = await node.exited();
    expect(code).toBe(0);
  });
});

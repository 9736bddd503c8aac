/**
 * The official Node client (@kurrent/kurrentdb-client, from npm, unchanged) against real node
 * processes over gRPC on the node's HTTP port: it writes through grpc-js (BatchAppend without
 * per-call credentials, Append with them) and reads through its native Rust bridge (its own
 * HTTP/2 stack). Insecure (h2c by the connection preface) and TLS (ALPN `h2`); HTTP/1.1 and
 * HTTP/2 requests to the HTTP API keep working on the same port.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import tls from 'node:tls';
import { X509Certificate, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BACKWARDS, END, FORWARDS, KurrentDBClient, binaryEvent, NO_STREAM, STREAM_EXISTS, ANY, START, jsonEvent, streamNameFilter,
  type ResolvedEvent,
} from '@kurrent/kurrentdb-client';

import { createCa, issueNodeCertificate } from '../support/certificates.js';
import { httpsRequest } from '../support/https-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const CALL_TIMEOUT_MS = 20_000;

async function collect(iterable: AsyncIterable<ResolvedEvent>): Promise<ResolvedEvent[]> {
  const out: ResolvedEvent[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}

async function errorOf(action: () => Promise<unknown>): Promise<{ type?: string } & Record<string, unknown>> {
  try {
    await action();
  } catch (err) {
    return err as { type?: string } & Record<string, unknown>;
  }
  throw new Error('expected the call to fail');
}

function types(events: readonly ResolvedEvent[]): string[] {
  return events.map((e) => e.event?.type ?? '?');
}

/** Resolves once `predicate` holds, polling; fails after `timeoutMs`. */
async function until(predicate: () => boolean, timeoutMs = CALL_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('insecure node (h2c): the official Node client', () => {
  let node: NodeProcess;
  let client: KurrentDBClient;
  beforeAll(async () => {
    node = await startNode();
    client = KurrentDBClient.connectionString(`kurrentdb://127.0.0.1:${node.port}?tls=false`);
  });
  afterAll(async () => {
    await client?.dispose();
    await node?.stop();
  });

  it('appends single and batched events and reads them forwards and backwards, with counts', async () => {
    const first = await client.appendToStream('orders-1', jsonEvent({ type: 'OrderPlaced', data: { id: 1 } }));
    expect(first).toMatchObject({ success: true, nextExpectedRevision: 0n });
    const batch = Array.from({ length: 100 }, (_, i) => jsonEvent({ type: `Line${i}`, data: { i } }));
    const second = await client.appendToStream('orders-1', batch, { streamState: 0n });
    expect(second.nextExpectedRevision).toBe(100n);
    expect(second.position!.commit).toBeGreaterThan(first.position!.commit);

    const forwards = await collect(client.readStream('orders-1', { direction: FORWARDS, fromRevision: START }));
    expect(forwards).toHaveLength(101);
    expect(forwards[0]!.event).toMatchObject({ type: 'OrderPlaced', revision: 0n, streamId: 'orders-1', data: { id: 1 }, isJson: true });
    expect(forwards[100]!.event).toMatchObject({ type: 'Line99', revision: 100n });
    const backwards = await collect(client.readStream('orders-1', { direction: BACKWARDS, fromRevision: END, maxCount: 3 }));
    expect(backwards.map((e) => e.event?.revision)).toEqual([100n, 99n, 98n]);
    const middle = await collect(client.readStream('orders-1', { direction: FORWARDS, fromRevision: 50n, maxCount: 2 }));
    expect(types(middle)).toEqual(['Line49', 'Line50']);
    const created = forwards[0]!.event!.created;
    expect(Math.abs(new Date(created).getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('applies every expected-revision case and reports wrong ones as WrongExpectedVersion', async () => {
    const e = (): ReturnType<typeof jsonEvent> => jsonEvent({ type: 'E', data: {} });
    await expect(client.appendToStream('rev-1', e(), { streamState: NO_STREAM })).resolves.toMatchObject({ nextExpectedRevision: 0n });
    const noStream = await errorOf(() => client.appendToStream('rev-1', e(), { streamState: NO_STREAM }));
    expect(noStream).toMatchObject({ type: 'wrong-expected-version', expectedState: NO_STREAM, actualState: 0n });
    await expect(client.appendToStream('rev-1', e(), { streamState: STREAM_EXISTS })).resolves.toMatchObject({ nextExpectedRevision: 1n });
    const exists = await errorOf(() => client.appendToStream('rev-missing', e(), { streamState: STREAM_EXISTS }));
    expect(exists).toMatchObject({ type: 'wrong-expected-version', actualState: NO_STREAM });
    const wrong = await errorOf(() => client.appendToStream('rev-1', e(), { streamState: 7n }));
    expect(wrong).toMatchObject({ type: 'wrong-expected-version', expectedState: 7n, actualState: 1n });
    await expect(client.appendToStream('rev-1', e(), { streamState: 1n })).resolves.toMatchObject({ nextExpectedRevision: 2n });
    await expect(client.appendToStream('rev-1', e(), { streamState: ANY })).resolves.toMatchObject({ nextExpectedRevision: 3n });
    // The same through Append (the client's path with per-call credentials; insecure ignores them).
    const viaAppend = await errorOf(() => client.appendToStream('rev-1', e(), { streamState: 0n, credentials: { username: 'admin', password: 'changeit' } }));
    expect(viaAppend).toMatchObject({ type: 'wrong-expected-version', expectedState: 0n, actualState: 3n });
    const events = await collect(client.readStream('rev-1'));
    expect(events).toHaveLength(4);
  });

  it('reads $all both directions and reports a missing stream as StreamNotFound', async () => {
    await client.appendToStream('all-1', [jsonEvent({ type: 'AllA', data: {} }), jsonEvent({ type: 'AllB', data: {} })]);
    const forwards = await collect(client.readAll({ direction: FORWARDS, fromPosition: START, maxCount: 10_000 }));
    const mine = forwards.filter((e) => e.event?.streamId === 'all-1');
    expect(types(mine)).toEqual(['AllA', 'AllB']);
    const positions = forwards.map((e) => e.event!.position!.commit);
    expect([...positions].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(positions);
    const backwards = await collect(client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 2 }));
    expect(types(backwards)).toEqual(['AllB', 'AllA']);
    const missing = await errorOf(() => collect(client.readStream('no-such-stream')));
    expect(missing.type).toBe('stream-not-found');
  });

  it('a catch-up subscription to a stream gets the history, caught-up, then live events', async () => {
    await client.appendToStream('sub-1', [jsonEvent({ type: 'Old1', data: {} }), jsonEvent({ type: 'Old2', data: {} })]);
    const subscription = client.subscribeToStream('sub-1', { fromRevision: START });
    const seen: string[] = [];
    let caughtUp = false;
    subscription.on('data', (e: ResolvedEvent) => seen.push(e.event!.type));
    subscription.on('caughtUp', () => { caughtUp = true; });
    try {
      await until(() => caughtUp && seen.length === 2);
      expect(seen).toEqual(['Old1', 'Old2']);
      await client.appendToStream('sub-1', jsonEvent({ type: 'Live1', data: {} }));
      await client.appendToStream('other-stream', jsonEvent({ type: 'NotMine', data: {} }));
      await client.appendToStream('sub-1', jsonEvent({ type: 'Live2', data: {} }));
      await until(() => seen.length === 4);
      expect(seen).toEqual(['Old1', 'Old2', 'Live1', 'Live2']);
    } finally {
      await subscription.unsubscribe();
    }
  });

  it('a filtered $all subscription gets only matching events, live ones too, and checkpoints', async () => {
    const checkpoints: bigint[] = [];
    const seen: string[] = [];
    const subscription = client.subscribeToAll({
      fromPosition: START,
      filter: streamNameFilter({ prefixes: ['filt-'], checkpointInterval: 1, checkpointReached: (_s, position) => { checkpoints.push(position.commit); } }),
    });
    subscription.on('data', (e: ResolvedEvent) => seen.push(`${e.event!.streamId}/${e.event!.type}`));
    try {
      await client.appendToStream('filt-a', jsonEvent({ type: 'F1', data: {} }));
      await client.appendToStream('unfiltered', jsonEvent({ type: 'U1', data: {} }));
      await client.appendToStream('filt-b', jsonEvent({ type: 'F2', data: {} }));
      await until(() => seen.length === 2 && checkpoints.length > 0);
      expect(seen).toEqual(['filt-a/F1', 'filt-b/F2']);
      expect(checkpoints.length).toBeGreaterThan(0);
    } finally {
      await subscription.unsubscribe();
    }
  });

  it('deletes, tombstones, and sets and reads stream metadata through $$stream', async () => {
    await client.appendToStream('del-1', jsonEvent({ type: 'D', data: {} }));
    await client.deleteStream('del-1');
    const afterDelete = await errorOf(() => collect(client.readStream('del-1')));
    expect(afterDelete.type).toBe('stream-not-found');
    // A soft-deleted stream can be written again.
    await expect(client.appendToStream('del-1', jsonEvent({ type: 'Again', data: {} }))).resolves.toMatchObject({ success: true });

    await client.appendToStream('tomb-1', jsonEvent({ type: 'T', data: {} }));
    await client.tombstoneStream('tomb-1');
    const append = await errorOf(() => client.appendToStream('tomb-1', jsonEvent({ type: 'T', data: {} })));
    expect(append).toMatchObject({ type: 'stream-deleted', streamName: 'tomb-1' });
    const read = await errorOf(() => collect(client.readStream('tomb-1')));
    expect(read.type).toBe('stream-deleted');

    await client.appendToStream('meta-1', [1, 2, 3].map((n) => jsonEvent({ type: 'M', data: { n } })));
    await client.setStreamMetadata('meta-1', { maxCount: 2, custom: 'kept' });
    const { metadata, streamName } = await client.getStreamMetadata('meta-1');
    expect(streamName).toBe('meta-1');
    expect(metadata).toMatchObject({ maxCount: 2, custom: 'kept' });
    const kept = await collect(client.readStream('meta-1'));
    expect(kept.map((e) => (e.event!.data as { n: number }).n)).toEqual([2, 3]);
  });

  it('serves the HTTP API on the same port over HTTP/1.1 and over h2c', async () => {
    const h1 = await fetch(`${node.baseUrl}/health/live`);
    expect(h1.status).toBe(204);
    const h2 = execFileSync('curl', ['-s', '--http2-prior-knowledge', '-o', '/dev/null', '-w', '%{http_code} %{http_version}', `${node.baseUrl}/health/live`], { encoding: 'utf8' });
    expect(h2).toBe('204 2');
  });
});

describe('TLS node (ALPN h2): credentials and ACLs', () => {
  const dir = tempDir('eventdb-grpc-tls-');
  let node: NodeProcess;
  let caPath: string;
  let caPem: string;
  let ca: ReturnType<typeof createCa>;
  let cert: ReturnType<typeof issueNodeCertificate>;
  const connect = (user: string): KurrentDBClient =>
    KurrentDBClient.connectionString(`kurrentdb://${user}@localhost:${node.port}?tls=true&tlsCAFile=${encodeURIComponent(caPath)}`);
  beforeAll(async () => {
    ca = createCa(join(dir.path, 'ca'), 'ca', 'EventDB Test CA');
    cert = issueNodeCertificate(join(dir.path, 'node'), 'node', ca);
    const roots = join(dir.path, 'roots');
    mkdirSync(roots);
    copyFileSync(ca.certPath, join(roots, 'ca.crt'));
    caPath = ca.certPath;
    caPem = ca.certPem;
    node = await startNode({
      insecure: false,
      args: ['--certificate-file', cert.certPath, '--certificate-private-key-file', cert.keyPath, '--trusted-root-certificates-path', roots],
    });
  });
  afterAll(async () => {
    await node?.stop();
    dir.remove();
  });

  it('admin appends and reads; HTTP/1.1 and HTTP/2 clients of the HTTP API share the port', async () => {
    const admin = connect('admin:changeit');
    try {
      await admin.appendToStream('tls-1', [jsonEvent({ type: 'S1', data: {} }), jsonEvent({ type: 'S2', data: {} })]);
      expect(types(await collect(admin.readStream('tls-1')))).toEqual(['S1', 'S2']);
      const all = await collect(admin.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 2 }));
      expect(types(all)).toEqual(['S2', 'S1']);
    } finally {
      await admin.dispose();
    }
    const h1 = await httpsRequest(`https://localhost:${node.port}/health/live`, { ca: caPem, auth: false });
    expect(h1.status).toBe(204);
    const h2 = execFileSync('curl', ['-s', '--http2', '--cacert', caPath, '-o', '/dev/null', '-w', '%{http_code} %{http_version}', `https://localhost:${node.port}/gossip`], { encoding: 'utf8' });
    expect(h2).toBe('200 2');
  });

  it('wrong credentials are refused on writes and reads, and change nothing', async () => {
    const wrong = connect('admin:wrong-password');
    try {
      const append = await errorOf(() => wrong.appendToStream('tls-wrong', jsonEvent({ type: 'X', data: {} })));
      expect(append.type).toBe('access-denied');
      const read = await errorOf(() => collect(wrong.readStream('tls-1')));
      expect(read.type).toBe('access-denied');
    } finally {
      await wrong.dispose();
    }
    const admin = connect('admin:changeit');
    try {
      expect((await errorOf(() => collect(admin.readStream('tls-wrong')))).type).toBe('stream-not-found');
    } finally {
      await admin.dispose();
    }
  });

  it('a stream ACL denies another user reads and writes, through Append and BatchAppend alike, and hides its events in $all', async () => {
    const admin = connect('admin:changeit');
    const ops = connect('ops:changeit');
    // Names of their own per attempt (the integration tier retries a failed test once).
    const secret = `secret-${randomUUID()}`;
    const links = `open-links-${randomUUID()}`;
    try {
      await admin.appendToStream(secret, jsonEvent({ type: 'Secret', data: { s: 1 } }));
      await admin.setStreamMetadata(secret, { acl: { readRoles: ['$admins'], writeRoles: ['$admins'], metaReadRoles: ['$admins'] } });
      const read = await errorOf(() => collect(ops.readStream(secret)));
      expect(read.type).toBe('access-denied');
      const batch = await errorOf(() => ops.appendToStream(secret, jsonEvent({ type: 'Intruder', data: {} })));
      expect(batch.type).toBe('access-denied');
      const append = await errorOf(() => ops.appendToStream(secret, jsonEvent({ type: 'Intruder', data: {} }), { credentials: { username: 'ops', password: 'changeit' } }));
      expect(append.type).toBe('access-denied');
      const meta = await errorOf(() => ops.getStreamMetadata(secret));
      expect(meta.type).toBe('access-denied');
      expect(types(await collect(admin.readStream(secret)))).toEqual(['Secret']);
      // A link to the protected event, in a stream ops may read: resolving it shows ops no target.
      await admin.appendToStream(links, binaryEvent({ type: '$>', data: Buffer.from(`0@${secret}`) }));
      const viaOps = await collect(ops.readStream(links, { resolveLinkTos: true }));
      expect(viaOps).toHaveLength(1);
      expect(viaOps[0]!.event).toBeUndefined();
      expect(viaOps[0]!.link).toMatchObject({ type: '$>', streamId: links });
      const viaAdmin = await collect(admin.readStream(links, { resolveLinkTos: true }));
      expect(viaAdmin[0]!.event?.type).toBe('Secret');
      // $all: ops (any authenticated user may read it) sees no event of the protected stream and
      // no user record; admin sees both.
      const allAsOps = await collect(ops.readAll({ direction: FORWARDS, fromPosition: START, maxCount: 100_000 }));
      expect(allAsOps.length).toBeGreaterThan(0);
      expect(allAsOps.some((r) => r.event?.streamId === secret)).toBe(false);
      expect(allAsOps.some((r) => (r.event?.streamId ?? '').startsWith('$user-'))).toBe(false);
      expect(allAsOps.some((r) => r.event?.streamId === links)).toBe(true);
      const allAsAdmin = await collect(admin.readAll({ direction: FORWARDS, fromPosition: START, maxCount: 100_000 }));
      expect(allAsAdmin.some((r) => r.event?.streamId === secret)).toBe(true);
      expect(allAsAdmin.some((r) => (r.event?.streamId ?? '').startsWith('$user-'))).toBe(true);
    } finally {
      await ops.dispose();
      await admin.dispose();
    }
  });

  it('a certificate reload (SIGHUP) covers new HTTP/2 connections: gRPC clients get the new certificate', async () => {
    const h2Fingerprint = (): Promise<string> => new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: node.port, servername: 'localhost', ca: caPem, ALPNProtocols: ['h2'] }, () => {
        const fingerprint = socket.alpnProtocol === 'h2' ? socket.getPeerCertificate().fingerprint256 : `alpn ${String(socket.alpnProtocol)}`;
        socket.destroy();
        resolve(fingerprint);
      });
      socket.once('error', reject);
    });
    const before = await h2Fingerprint();
    const renewed = issueNodeCertificate(join(dir.path, 'node-renewed'), 'node', ca);
    copyFileSync(renewed.certPath, cert.certPath);
    copyFileSync(renewed.keyPath, cert.keyPath);
    const mark = node.output.length;
    node.child.kill('SIGHUP');
    await until(() => node.output.slice(mark).some((line) => line.includes('certificates reloaded')));
    const after = await h2Fingerprint();
    expect(after).not.toBe(before);
    expect(after).toBe(new X509Certificate(renewed.certPem).fingerprint256);
    const admin = connect('admin:changeit');
    try {
      await expect(admin.appendToStream('tls-after-reload', jsonEvent({ type: 'R', data: {} }))).resolves.toMatchObject({ success: true });
    } finally {
      await admin.dispose();
    }
  });
});

describe('stopping a node with gRPC clients connected', () => {
  it('exits 0 promptly on SIGTERM while a live subscription is open', async () => {
    const node = await startNode();
    const client = KurrentDBClient.connectionString(`kurrentdb://127.0.0.1:${node.port}?tls=false`);
    try {
      await client.appendToStream('stop-1', jsonEvent({ type: 'S', data: {} }));
      const subscription = client.subscribeToStream('stop-1', { fromRevision: START });
      let caughtUp = false;
      subscription.on('caughtUp', () => { caughtUp = true; });
      subscription.on('error', () => {});
      await until(() => caughtUp);
      const startedMs = Date.now();
      expect(await node.stop()).toBe(0);
      expect(Date.now() - startedMs).toBeLessThan(15_000);
    } finally {
      await client.dispose();
      await node.stop();
    }
  });
});

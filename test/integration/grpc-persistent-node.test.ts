/**
 * Persistent subscriptions over gRPC with the official Node client (@kurrent/kurrentdb-client,
 * unchanged) against real node processes: competing consumers, acks, nacks with every action,
 * parked messages replayed, group management, groups shared with the HTTP API both ways, bad
 * input that changes nothing, and the ACLs of the HTTP twins (TLS node with credentials).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KurrentDBClient, START, jsonEvent, persistentSubscriptionToStreamSettingsFromDefaults,
  persistentSubscriptionToAllSettingsFromDefaults,
  type PersistentSubscriptionToStream, type PersistentSubscriptionToStreamResolvedEvent,
} from '@kurrent/kurrentdb-client';

import { startTlsNode } from '../support/tls-node.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const WAIT_MS = 15_000;

async function errorOf(action: () => Promise<unknown>): Promise<{ type?: string; message?: string } & Record<string, unknown>> {
  try {
    await action();
  } catch (err) {
    return err as { type?: string } & Record<string, unknown>;
  }
  throw new Error('expected the call to fail');
}

/** Resolves once `predicate` holds, polling; fails after `timeoutMs`. */
async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Events received by one consumer, with a handler deciding how to answer each. */
function consume(
  subscription: PersistentSubscriptionToStream,
  answer: (event: PersistentSubscriptionToStreamResolvedEvent) => Promise<void>,
): { received: PersistentSubscriptionToStreamResolvedEvent[]; errors: unknown[]; ended: () => boolean } {
  const received: PersistentSubscriptionToStreamResolvedEvent[] = [];
  const errors: unknown[] = [];
  let ended = false;
  subscription.on('data', (event: PersistentSubscriptionToStreamResolvedEvent) => {
    received.push(event);
    answer(event).catch((err: unknown) => errors.push(err));
  });
  subscription.on('error', (err: unknown) => errors.push(err));
  subscription.on('end', () => (ended = true));
  subscription.on('close', () => (ended = true));
  return { received, errors, ended: () => ended };
}

const typeOf = (e: PersistentSubscriptionToStreamResolvedEvent): string => e.event?.type ?? '?';

describe('insecure node: persistent subscriptions over gRPC', () => {
  let node: NodeProcess;
  let client: KurrentDBClient;
  const base = (): string => `http://127.0.0.1:${node.port}`;
  const adminAuth = `Basic ${Buffer.from('admin:changeit').toString('base64')}`;
  beforeAll(async () => {
    node = await startNode();
    client = KurrentDBClient.connectionString(`kurrentdb://127.0.0.1:${node.port}?tls=false`);
  });
  afterAll(async () => {
    await client?.dispose();
    await node?.stop();
  });

  it('two consumers compete over a group created over gRPC: each event goes to one of them, all are acked', async () => {
    const stream = `compete-${randomUUID()}`;
    await client.createPersistentSubscriptionToStream(stream, 'workers', persistentSubscriptionToStreamSettingsFromDefaults({ startFrom: START }));
    const first = client.subscribeToPersistentSubscriptionToStream(stream, 'workers');
    const second = client.subscribeToPersistentSubscriptionToStream(stream, 'workers');
    try {
      const a = consume(first, (e) => first.ack(e));
      const b = consume(second, (e) => second.ack(e));
      // Both consumers wait in the group before the work arrives, so neither can take it all alone.
      await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'workers')).connections.length === 2);
      await client.appendToStream(stream, Array.from({ length: 40 }, (_, i) => jsonEvent({ type: `Job${i}`, data: { i } })));
      await until(() => a.received.length + b.received.length >= 40);
      const all = [...a.received, ...b.received].map(typeOf);
      expect(new Set(all).size).toBe(40);
      expect(all).toHaveLength(40);
      expect(a.received.length).toBeGreaterThan(0);
      expect(b.received.length).toBeGreaterThan(0);
      expect(a.received[0]!.retryCount).toBe(0);
      expect(a.received[0]!.event).toMatchObject({ streamId: stream, isJson: true });
      // Both consumers are connections of the group; everything was acknowledged.
      await until(async () => {
        const info = await client.getPersistentSubscriptionToStreamInfo(stream, 'workers');
        return info.connections.length === 2 && info.stats.totalInFlightMessages === 0 && info.stats.totalItems === 40n;
      });
      expect([...a.errors, ...b.errors]).toEqual([]);
    } finally {
      await first.unsubscribe();
      await second.unsubscribe();
    }
    await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'workers')).connections.length === 0);
  });

  it('nacks with every action: retry redelivers, skip drops, park parks until replayed, stop hands the message to another consumer', async () => {
    const stream = `nacks-${randomUUID()}`;
    await client.createPersistentSubscriptionToStream(stream, 'g', persistentSubscriptionToStreamSettingsFromDefaults({ startFrom: START, messageTimeout: 60_000 }));
    await client.appendToStream(stream, ['Retry', 'Skip', 'Park', 'Ok'].map((type) => jsonEvent({ type, data: {} })));
    const sub = client.subscribeToPersistentSubscriptionToStream(stream, 'g');
    let parkedOnce = false;
    try {
      const seen = consume(sub, async (e) => {
        const type = typeOf(e);
        const parkNow = type === 'Park' && !parkedOnce;
        if (parkNow) parkedOnce = true;
        if (type === 'Retry' && e.retryCount === 0) await sub.nack('retry', 'try again', e);
        else if (type === 'Skip') await sub.nack('skip', 'not for us', e);
        else if (parkNow) await sub.nack('park', 'poison', e);
        else await sub.ack(e);
      });
      await until(() => seen.received.some((e) => typeOf(e) === 'Retry' && e.retryCount === 1) && seen.received.some((e) => typeOf(e) === 'Ok'));
      await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'g')).stats.parkedMessageCount === 1n);
      const before = seen.received.map((e) => `${typeOf(e)}:${e.retryCount}`);
      expect(before.filter((t) => t.startsWith('Skip'))).toEqual(['Skip:0']);
      expect(before.filter((t) => t.startsWith('Park'))).toEqual(['Park:0']);

      // The parked message comes back when replayed (and is acked this time).
      await client.replayParkedMessagesToStream(stream, 'g');
      await until(() => seen.received.filter((e) => typeOf(e) === 'Park').length === 2);
      await until(async () => {
        const info = await client.getPersistentSubscriptionToStreamInfo(stream, 'g');
        return info.stats.parkedMessageCount === 0n && info.stats.totalInFlightMessages === 0;
      });
      expect(seen.received.filter((e) => typeOf(e) === 'Skip')).toHaveLength(1);
      expect(seen.errors).toEqual([]);

      // Stop: the consumer that nacks leaves; the message goes to the one still connected.
      const stopper = client.subscribeToPersistentSubscriptionToStream(stream, 'g');
      let stoppedType: string | undefined;
      const stopped = consume(stopper, async (e) => {
        stoppedType = typeOf(e);
        await stopper.nack('stop', 'shutting down', e);
      });
      await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'g')).connections.length === 2);
      await sub.unsubscribe();
      await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'g')).connections.length === 1);
      await client.appendToStream(stream, jsonEvent({ type: 'Late', data: {} }));
      await until(() => stoppedType === 'Late');
      const taker = client.subscribeToPersistentSubscriptionToStream(stream, 'g');
      try {
        const took = consume(taker, (e) => taker.ack(e));
        await until(() => took.received.some((e) => typeOf(e) === 'Late'));
        expect(took.received.find((e) => typeOf(e) === 'Late')!.retryCount).toBe(1);
        // The stopped consumer got nothing more, and left the group: one connection remains.
        expect(stopped.received.map(typeOf)).toEqual(['Late']);
        await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'g')).connections.length === 1);
      } finally {
        await taker.unsubscribe();
        await stopper.unsubscribe();
      }
    } finally {
      await sub.unsubscribe();
    }
  });

  it('a group created over HTTP is consumed over gRPC, and one created over gRPC is seen over HTTP', async () => {
    const stream = `shared-${randomUUID()}`;
    await client.appendToStream(stream, [jsonEvent({ type: 'H1', data: {} }), jsonEvent({ type: 'H2', data: {} })]);
    const put = await fetch(`${base()}/subscriptions/${stream}/from-http`, {
      method: 'PUT', headers: { 'content-type': 'application/json', authorization: adminAuth }, body: JSON.stringify({ startFrom: 0 }),
    });
    expect(put.status).toBe(201);
    const sub = client.subscribeToPersistentSubscriptionToStream(stream, 'from-http');
    try {
      const seen = consume(sub, (e) => sub.ack(e));
      await until(() => seen.received.length === 2);
      expect(seen.received.map(typeOf)).toEqual(['H1', 'H2']);
    } finally {
      await sub.unsubscribe();
    }

    await client.createPersistentSubscriptionToStream(stream, 'from-grpc', persistentSubscriptionToStreamSettingsFromDefaults({ startFrom: START, maxRetryCount: 3, historyBufferSize: 64, readBatchSize: 8 }));
    const info = await fetch(`${base()}/subscriptions/${stream}/from-grpc/info`, { headers: { accept: 'application/json', authorization: adminAuth } });
    expect(info.status).toBe(200);
    expect(await info.json()).toMatchObject({ groupName: 'from-grpc', eventStreamId: stream, config: { maxRetryCount: 3, bufferSize: 64, readBatchSize: 8, startFrom: 0 } });
    const listed = await client.listPersistentSubscriptionsToStream(stream);
    expect(listed.map((g) => g.groupName).sort()).toEqual(['from-grpc', 'from-http']);
    const everything = await client.listAllPersistentSubscriptions();
    expect(everything.filter((g) => g.eventSource === stream)).toHaveLength(2);
  });

  it('updates, restarts and deletes groups; existing and missing groups are reported as the client expects', async () => {
    const stream = `manage-${randomUUID()}`;
    await client.createPersistentSubscriptionToStream(stream, 'm', persistentSubscriptionToStreamSettingsFromDefaults());
    const again = await errorOf(() => client.createPersistentSubscriptionToStream(stream, 'm', persistentSubscriptionToStreamSettingsFromDefaults()));
    expect(again).toMatchObject({ type: 'persistent-subscription-exists', streamName: stream, groupName: 'm' });
    await client.updatePersistentSubscriptionToStream(stream, 'm', persistentSubscriptionToStreamSettingsFromDefaults({ maxRetryCount: 7, messageTimeout: 5_000 }));
    const info = await client.getPersistentSubscriptionToStreamInfo(stream, 'm');
    expect(info.settings).toMatchObject({ maxRetryCount: 7, messageTimeout: 5_000 });
    await client.restartPersistentSubscriptionSubsystem();
    // The group comes back from the stored configuration, with its updated settings.
    await until(async () => (await client.getPersistentSubscriptionToStreamInfo(stream, 'm').catch(() => undefined))?.settings.maxRetryCount === 7);
    await client.deletePersistentSubscriptionToStream(stream, 'm');
    const gone = await errorOf(() => client.getPersistentSubscriptionToStreamInfo(stream, 'm'));
    expect(gone.type).toBe('persistent-subscription-does-not-exist');
    const deleteMissing = await errorOf(() => client.deletePersistentSubscriptionToStream(stream, 'm'));
    expect(deleteMissing).toMatchObject({ type: 'persistent-subscription-does-not-exist', groupName: 'm' });
    const updateMissing = await errorOf(() => client.updatePersistentSubscriptionToStream(stream, 'm', persistentSubscriptionToStreamSettingsFromDefaults()));
    expect(updateMissing.type).toBe('persistent-subscription-does-not-exist');
    // Subscribing to a missing group fails the subscription.
    const sub = client.subscribeToPersistentSubscriptionToStream(stream, 'missing');
    const seen = consume(sub, (e) => sub.ack(e));
    await until(() => seen.errors.length > 0);
    expect(seen.errors[0]).toMatchObject({ type: 'persistent-subscription-does-not-exist' });
  });

  it('bad settings and names are refused with a message naming the problem, and create nothing', async () => {
    const stream = `bad-${randomUUID()}`;
    const sizes = await errorOf(() => client.createPersistentSubscriptionToStream(stream, 'b', persistentSubscriptionToStreamSettingsFromDefaults({ historyBufferSize: 10, readBatchSize: 20 })));
    expect(String(sizes.message)).toMatch(/BufferSize \(10\) must be larger than ReadBatchSize \(20\)/);
    const negative = await errorOf(() => client.createPersistentSubscriptionToStream(stream, 'b', persistentSubscriptionToStreamSettingsFromDefaults({ maxRetryCount: -1 })));
    expect(String(negative.message)).toMatch(/maxRetryCount/);
    expect((await errorOf(() => client.getPersistentSubscriptionToStreamInfo(stream, 'b'))).type).toBe('persistent-subscription-does-not-exist');
    const badGroup = await errorOf(() => client.createPersistentSubscriptionToStream(stream, '', persistentSubscriptionToStreamSettingsFromDefaults()));
    expect(String(badGroup.message)).toMatch(/group_name is required/);
    // $all groups are not advertised: the client refuses them itself.
    const all = await errorOf(() => client.createPersistentSubscriptionToAll('a', persistentSubscriptionToAllSettingsFromDefaults()));
    expect(all.type).toBe('unsupported');
  });
});

describe('TLS node: persistent subscription ACLs over gRPC are those of HTTP', () => {
  const dir = tempDir('eventdb-grpc-ps-tls-');
  let node: NodeProcess;
  let caPath: string;
  const connect = (user: string): KurrentDBClient =>
    KurrentDBClient.connectionString(`kurrentdb://${user}@localhost:${node.port}?tls=true&tlsCAFile=${encodeURIComponent(caPath)}`);
  beforeAll(async () => {
    const tls = await startTlsNode(dir.path);
    node = tls.node;
    caPath = tls.ca.certPath;
  });
  afterAll(async () => {
    await node?.stop();
    dir.remove();
  });

  it('a non-admin cannot create or delete groups (nothing changes); an admin can; both may consume', async () => {
    const admin = connect('admin:changeit');
    const ops = connect('ops:changeit');
    const wrong = connect('admin:wrong');
    const stream = `acl-${randomUUID()}`;
    try {
      const denied = await errorOf(() => ops.createPersistentSubscriptionToStream(stream, 'g', persistentSubscriptionToStreamSettingsFromDefaults({ startFrom: START })));
      expect(denied.type).toBe('access-denied');
      expect((await errorOf(() => admin.getPersistentSubscriptionToStreamInfo(stream, 'g'))).type).toBe('persistent-subscription-does-not-exist');
      const badLogin = await errorOf(() => wrong.getPersistentSubscriptionToStreamInfo(stream, 'g'));
      expect(badLogin.type).toBe('access-denied');

      await admin.createPersistentSubscriptionToStream(stream, 'g', persistentSubscriptionToStreamSettingsFromDefaults({ startFrom: START }));
      expect((await errorOf(() => ops.deletePersistentSubscriptionToStream(stream, 'g'))).type).toBe('access-denied');
      await admin.appendToStream(stream, jsonEvent({ type: 'Work', data: {} }));
      const sub = ops.subscribeToPersistentSubscriptionToStream(stream, 'g');
      try {
        const seen = consume(sub, (e) => sub.ack(e));
        await until(() => seen.received.length === 1);
        expect(typeOf(seen.received[0]!)).toBe('Work');
      } finally {
        await sub.unsubscribe();
      }
      // $ops may replay parked messages, as over HTTP.
      await ops.replayParkedMessagesToStream(stream, 'g');
      // A stream the user may not read cannot be consumed.
      const secret = `secret-${randomUUID()}`;
      await admin.appendToStream(secret, jsonEvent({ type: 'Secret', data: {} }));
      await admin.setStreamMetadata(secret, { acl: { readRoles: ['$admins'] } });
      await admin.createPersistentSubscriptionToStream(secret, 'g', persistentSubscriptionToStreamSettingsFromDefaults({ startFrom: START }));
      const hidden = ops.subscribeToPersistentSubscriptionToStream(secret, 'g');
      const attempt = consume(hidden, (e) => hidden.ack(e));
      await until(() => attempt.errors.length > 0);
      expect(attempt.errors[0]).toMatchObject({ type: 'access-denied' });
      expect(attempt.received).toEqual([]);
      await admin.deletePersistentSubscriptionToStream(stream, 'g');
    } finally {
      await admin.dispose();
      await ops.dispose();
      await wrong.dispose();
    }
  });
});

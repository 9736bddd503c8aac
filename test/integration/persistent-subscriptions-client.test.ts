/**
 * geteventstore-promise's persistent-subscription calls, unchanged, against a real node:
 * assert (create, then update when it exists), getEvents with the feed's ack/nack links,
 * the three info calls, and remove.
 */
import { randomUUID } from 'node:crypto';

import { EventFactory } from 'geteventstore-promise';
import { describe, expect, it } from 'vitest';

import { useGetEventStoreClient } from '../support/geteventstore-client.js';

const es = useGetEventStoreClient();
const factory = new EventFactory();

/** The shapes geteventstore-promise builds from a competing feed (not in its typings). */
interface ClientEntry {
  event: { title: string; eventNumber: number; eventType: string; data: { n: number }; retryCount: number };
  ack(): Promise<{ status: number }>;
  nack(): Promise<{ status: number }>;
}
interface ClientFeed {
  entries: ClientEntry[];
  ackAll?: () => Promise<{ status: number }>;
  nackAll?: () => Promise<{ status: number }>;
}

describe('geteventstore-promise persistent subscriptions', () => {
  it('creates, updates, reads, acknowledges, reports and removes a group', async () => {
    const stream = `client-ps-${randomUUID().slice(0, 8)}`;
    const group = 'workers';
    const created = await es.client.persistentSubscriptions.assert(group, stream, {
      messageTimeoutMilliseconds: 1000,
      maxRetryCount: 3,
    } as never);
    expect(created).toMatchObject({ result: 'Success' });
    // Asserting again finds it (409) and updates it instead.
    const updated = await es.client.persistentSubscriptions.assert(group, stream, {
      messageTimeoutMilliseconds: 1500,
      maxRetryCount: 3,
      namedConsumerStrategy: 'RoundRobin',
    } as never);
    expect(updated).toMatchObject({ result: 'Success' });

    await es.client.writeEvents(
      stream,
      Array.from({ length: 5 }, (_, n) => factory.newEvent('Numbered', { n })),
    );
    const first = (await es.client.persistentSubscriptions.getEvents(group, stream, 2, 'body')) as ClientFeed;
    expect(first.entries.map((e) => e.event.data.n)).toEqual([1, 0]);
    expect(first.entries.map((e) => e.event.eventType)).toEqual(['Numbered', 'Numbered']);
    expect(first.entries.every((e) => e.event.retryCount === 0)).toBe(true);
    expect((await first.entries[1]!.ack()).status).toBe(202);
    expect((await first.entries[0]!.nack()).status).toBe(202); // no action: retried
    const second = (await es.client.persistentSubscriptions.getEvents(group, stream, 10, 'body')) as ClientFeed;
    expect(second.entries.map((e) => [e.event.data.n, e.event.retryCount])).toEqual([
      [4, 0],
      [3, 0],
      [2, 0],
      [1, 1],
    ]);
    expect((await second.ackAll!()).status).toBe(202);
    const none = (await es.client.persistentSubscriptions.getEvents(group, stream)) as ClientFeed;
    expect(none.entries).toEqual([]);

    const info = (await es.client.persistentSubscriptions.getSubscriptionInfo(group, stream)) as Record<string, any>;
    expect(info).toMatchObject({
      eventStreamId: stream,
      groupName: group,
      totalItemsProcessed: 6,
      outstandingMessagesCount: 0,
      config: { messageTimeoutMilliseconds: 1500, maxRetryCount: 3, namedConsumerStrategy: 'RoundRobin' },
    });
    const forStream = (await es.client.persistentSubscriptions.getStreamSubscriptionsInfo(stream)) as Record<string, any>[];
    expect(forStream.map((s) => s.groupName)).toEqual([group]);
    const all = (await es.client.persistentSubscriptions.getAllSubscriptionsInfo()) as Record<string, any>[];
    expect(all.some((s) => s.eventStreamId === stream && s.groupName === group)).toBe(true);

    const removed = await es.client.persistentSubscriptions.remove(group, stream);
    expect(removed).toMatchObject({ result: 'Success' });
    await expect(es.client.persistentSubscriptions.getSubscriptionInfo(group, stream)).rejects.toMatchObject({
      response: { status: 404 },
    });
    await expect(es.client.persistentSubscriptions.getEvents(group, stream)).rejects.toMatchObject({
      response: { status: 404 },
    });
  });

  it('is refused with 401 for a user who is not an admin', async () => {
    await es.client.writeEvent('client-ps-acl', 'T', { a: 1 });
    const created = await fetch(`http://127.0.0.1:${es.node.port}/users`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('admin:changeit').toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ LoginName: 'worker', FullName: 'W', Groups: [], Password: 'worker-pw' }),
    });
    expect(created.status).toBe(201);
    const worker = es.clientAs('worker', 'worker-pw');
    await expect(worker.persistentSubscriptions.assert('g', 'client-ps-acl')).rejects.toMatchObject({
      response: { status: 401 },
    });
  });
});

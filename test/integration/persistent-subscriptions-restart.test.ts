/**
 * Persistent subscriptions across a clean restart of a real node on disk: the groups' settings
 * come back from `$persistentSubscriptionConfig`, each group resumes after its checkpoint
 * (written on shutdown for what was done), messages that were in flight come again, and parked
 * messages stay parked.
 */
import { afterAll, describe, expect, it } from 'vitest';

import {
  appendNumbered,
  CompetingConsumer,
  createGroup,
  groupInfo,
} from '../support/competing-consumer.js';
import { httpClient } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const dir = tempDir('eventdb-ps-restart-');
const args = ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`];
let node: NodeProcess | undefined;

afterAll(async () => {
  if (node !== undefined && node.child.exitCode === null) await node.stop();
  dir.remove();
});

describe('persistent subscriptions across a restart', () => {
  it('keep their settings, resume after their checkpoints, keep parked messages', async () => {
    node = await startNode({ memDb: false, args });
    const settings = {
      resolveLinkTos: true,
      startFrom: 2,
      messageTimeoutMilliseconds: 4321,
      extraStatistics: true,
      maxRetryCount: 7,
      liveBufferSize: 300,
      bufferSize: 200,
      readBatchSize: 30,
      checkPointAfterMilliseconds: 600_000,
      minCheckPointCount: 1000,
      maxCheckPointCount: 5000,
      maxSubscriberCount: 3,
      namedConsumerStrategy: 'Pinned',
    };
    await appendNumbered(node.baseUrl, 'orders', 50);
    await createGroup(node.baseUrl, 'orders', 'billing', settings);
    await createGroup(node.baseUrl, 'orders', 'shipping', { minCheckPointCount: 1000, maxCheckPointCount: 5000 });
    const before = (await groupInfo(node.baseUrl, 'orders', 'billing')).config;

    const worker = new CompetingConsumer(node.baseUrl, 'orders', 'shipping');
    const done = await worker.pull(20);
    await worker.ackAll(done); // 0..19
    const inFlight = await worker.pull(6); // 20..25, never acknowledged
    expect(inFlight.entries.map((e) => e.eventNumber)).toEqual([20, 21, 22, 23, 24, 25]);
    expect(await worker.nack(inFlight.entries.slice(5), 'park')).toBe(202); // 25 parked
    await worker.close();
    // The checkpoint thresholds are not reached: only the clean shutdown writes one.
    expect((await groupInfo(node.baseUrl, 'orders', 'shipping')).lastCheckpointedEventPosition).toBeUndefined();

    expect(await node.stop()).toBe(0);
    node = await startNode({ memDb: false, args });
    const http = httpClient(node.baseUrl);

    const billing = await groupInfo(node.baseUrl, 'orders', 'billing');
    expect(billing.config).toEqual(before);
    expect(billing.config).toMatchObject({ namedConsumerStrategy: 'Pinned', maxRetryCount: 7, startFrom: 2 });
    const shipping = await groupInfo(node.baseUrl, 'orders', 'shipping');
    expect(shipping.lastCheckpointedEventPosition).toBe('19');
    expect(shipping.parkedMessageCount).toBe(1);

    const again = new CompetingConsumer(node.baseUrl, 'orders', 'shipping');
    const resumed = await again.pull(100);
    // Everything after the checkpoint comes again, the parked 25 too (at least once: the
    // checkpoint could not pass 20..24, which were still in flight).
    expect(resumed.entries.map((e) => e.eventNumber)).toEqual(Array.from({ length: 30 }, (_, i) => 20 + i));
    expect(resumed.entries.every((e) => e.retryCount === 0)).toBe(true);
    await again.ackAll(resumed);
    await again.close();

    const config = await http('GET', '/streams/%24persistentSubscriptionConfig/head', {
      headers: { accept: 'application/vnd.eventstore.atom+json' },
    });
    expect(config.status).toBe(200);
    expect(config.json().summary).toBe('$PersistentConfig');
    const stored = await http('GET', '/streams/%24persistentSubscriptionConfig/head', {
      headers: { accept: 'application/json' },
    });
    const document = stored.json();
    expect(document).toMatchObject({ version: '2', updatedBy: 'admin' });
    expect(document.entries.map((e: { group: string }) => e.group)).toEqual(['billing', 'shipping']);
    expect(document.entries[0]).toMatchObject({
      stream: 'orders',
      group: 'billing',
      resolveLinkTos: true,
      messageTimeout: 4321,
      startFrom: 2,
      historyBufferSize: 200,
      checkPointAfter: 600_000,
      namedConsumerStrategy: 'Pinned',
    });
    const metadata = await http('GET', '/streams/%24persistentSubscriptionConfig/metadata', {
      headers: { accept: 'application/json' },
    });
    expect(metadata.json()).toMatchObject({ $maxCount: 2 });
    expect(await node.stop()).toBe(0);
  });
});

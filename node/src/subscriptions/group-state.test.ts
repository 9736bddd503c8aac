import { describe, expect, it } from 'vitest';

import { recordedEvent } from '../../../test/support/recorded-event.js';
import {
  GroupState,
  latencySummary,
  PARK_REASON_NACK,
  type ConsumerIdentity,
  type GroupEffect,
} from './group-state.js';
import type { ResolvedEvent } from './resolved-event.js';
import { DEFAULT_SETTINGS, type SubscriptionSettings } from './settings.js';

function event(n: number, stream = 's'): ResolvedEvent {
  return { event: recordedEvent(stream, n, { eventId: `id-${stream}-${n}` }), link: undefined };
}

function consumer(id: string): ConsumerIdentity {
  return { id, username: 'admin', from: `127.0.0.1:${id}`, connectionName: '' };
}

function group(
  settings: Partial<SubscriptionSettings> = {},
  start: { readFrom?: number; checkpoint?: number } = {},
): GroupState {
  return new GroupState({
    settings: { ...DEFAULT_SETTINGS, ...settings },
    readFrom: start.readFrom ?? 0,
    checkpoint: start.checkpoint,
    nowMs: 0,
  });
}

/** Feeds `count` events from `from` as one read. */
function feed(state: GroupState, from: number, count: number, last = from + count - 1): void {
  const next = state.nextRead();
  expect(next?.fromEventNumber).toBe(from);
  state.readStarted();
  state.readCompleted(
    Array.from({ length: count }, (_, i) => event(from + i)),
    from + count,
    last,
  );
}

const numbers = (deliveries: readonly { message: { position: number | undefined } }[]) =>
  deliveries.map((d) => d.message.position);

const checkpoints = (effects: GroupEffect[]) =>
  effects.filter((e) => e.kind === 'checkpoint').map((e) => (e.kind === 'checkpoint' ? e.position : -1));

describe('GroupState reading and delivery', () => {
  it('reads in batches while the buffer has room, and delivers in stream order', () => {
    const state = group({ bufferSize: 50, readBatchSize: 20 });
    feed(state, 0, 20, 99);
    feed(state, 20, 20, 99);
    expect(state.nextRead()).toBeUndefined(); // 40 buffered: no room for another 20 below 50
    state.connect(consumer('a'), 0);
    expect(numbers(state.take('a', 5, 0))).toEqual([0, 1, 2, 3, 4]);
    expect(state.nextRead()).toBeUndefined(); // 35 buffered: still no room
    expect(numbers(state.take('a', 10, 0))).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(state.nextRead()).toEqual({ fromEventNumber: 40, count: 20 });
  });

  it('stops reading at the known end and resumes on a commit notification', () => {
    const state = group();
    feed(state, 0, 3, 2);
    expect(state.nextRead()).toBeUndefined();
    expect(state.status()).toBe('Live');
    state.notifyCommitted(5);
    expect(state.status()).toBe('Behind');
    expect(state.nextRead()).toEqual({ fromEventNumber: 3, count: 20 });
    state.readStarted();
    expect(state.status()).toBe('Behind, OutstandingPageRequest');
  });

  it('a missing stream read does not hide a write notified meanwhile', () => {
    const state = group();
    state.readStarted();
    state.notifyCommitted(0);
    state.readCompleted([], 0, undefined);
    expect(state.nextRead()).toEqual({ fromEventNumber: 0, count: 20 });
    state.readStarted();
    state.readCompleted([], 0, undefined);
    expect(state.nextRead()).toBeUndefined();
  });

  it("limits a consumer to its free slots (bufferSize in flight)", () => {
    const state = group({ bufferSize: 30, readBatchSize: 10 });
    feed(state, 0, 10, 100);
    feed(state, 10, 10, 100);
    state.connect(consumer('a'), 0);
    expect(state.take('a', 100, 0)).toHaveLength(20);
    feed(state, 20, 10, 100);
    expect(state.take('a', 100, 0)).toHaveLength(10);
    expect(state.take('a', 100, 0)).toHaveLength(0); // 30 in flight = bufferSize
    state.ack(['id-s-0'], 0);
    feed(state, 30, 10, 100);
    expect(state.take('a', 100, 0)).toHaveLength(1);
  });

  it('refuses consumers beyond maxSubscriberCount until one leaves', () => {
    const state = group({ maxSubscriberCount: 1 });
    expect(state.connect(consumer('a'), 0)).toBe('ok');
    expect(state.connect(consumer('a'), 0)).toBe('ok');
    expect(state.connect(consumer('b'), 0)).toBe('max-subscribers');
    state.disconnect('a');
    expect(state.connect(consumer('b'), 0)).toBe('ok');
  });

  it('drops a consumer that idles longer than the message timeout, not one in a long poll', () => {
    const state = group({ messageTimeoutMs: 2_000 });
    state.connect(consumer('a'), 0);
    state.connect(consumer('b'), 0);
    state.requestStarted('b', 0);
    state.tick(2_500);
    expect(state.hasConsumer('a')).toBe(false);
    expect(state.hasConsumer('b')).toBe(true);
  });
});

describe('GroupState retries and parking', () => {
  it('retries a timed-out message with retryCount + 1, first among what is left', () => {
    const state = group({ messageTimeoutMs: 1_000 });
    feed(state, 0, 5, 4);
    state.connect(consumer('a'), 0);
    state.connect(consumer('b'), 0);
    expect(numbers(state.take('a', 2, 0))).toEqual([0, 1]);
    state.tick(999);
    expect(numbers(state.take('b', 1, 999))).toEqual([2]);
    state.tick(1_000);
    const redelivered = state.take('b', 3, 1_000);
    expect(numbers(redelivered)).toEqual([0, 1, 3]);
    expect(redelivered.map((d) => d.retryCount)).toEqual([1, 1, 0]);
  });

  it('parks after maxRetryCount retries with the reason, and the park completing finishes it', () => {
    const state = group({ messageTimeoutMs: 100, maxRetryCount: 2 });
    feed(state, 0, 1, 0);
    state.connect(consumer('a'), 0);
    let now = 0;
    for (let attempt = 0; attempt <= 2; attempt++) {
      const [delivery] = state.take('a', 1, now);
      expect(delivery?.retryCount).toBe(attempt);
      now += 100;
      state.tick(now);
    }
    const parks = state.drainEffects().filter((e) => e.kind === 'park');
    expect(parks).toHaveLength(1);
    expect(parks[0]).toMatchObject({ reason: 'Reached retry count of 2' });
    expect(state.take('a', 1, now)).toHaveLength(0);
    expect(state.stats(now).outstandingMessagesCount).toBe(1); // parking
    state.parkCompleted('id-s-0', true, now);
    expect(state.stats(now).outstandingMessagesCount).toBe(0);
  });

  it('a failed park puts the message back for delivery', () => {
    const state = group();
    feed(state, 0, 1, 0);
    state.connect(consumer('a'), 0);
    state.take('a', 1, 0);
    state.nack(['id-s-0'], 'park', 'a', 0);
    expect(state.drainEffects()).toMatchObject([{ kind: 'park', reason: PARK_REASON_NACK }]);
    state.parkCompleted('id-s-0', false, 0);
    expect(numbers(state.take('a', 1, 0))).toEqual([0]);
  });

  it('nack actions: Retry retries, Skip drops, Stop retries and drops the consumer', () => {
    const state = group({ maxRetryCount: 1 });
    feed(state, 0, 3, 2);
    state.connect(consumer('a'), 0);
    state.take('a', 3, 0);
    state.nack(['id-s-0'], 'retry', 'a', 0);
    state.nack(['id-s-1'], 'skip', 'a', 0);
    const retried = state.take('a', 5, 0);
    expect(numbers(retried)).toEqual([0]);
    expect(retried[0]?.retryCount).toBe(1);
    // Retrying beyond maxRetryCount parks.
    state.nack(['id-s-0'], 'unknown', 'a', 0);
    expect(state.drainEffects().filter((e) => e.kind === 'park')).toHaveLength(1);
    state.nack(['id-s-2'], 'stop', 'a', 0);
    expect(state.hasConsumer('a')).toBe(false);
    state.connect(consumer('b'), 0);
    expect(numbers(state.take('b', 5, 0))).toEqual([2]);
  });

  it('an ack arriving after the timeout, before redelivery, finishes the message', () => {
    const state = group({ messageTimeoutMs: 100 });
    feed(state, 0, 2, 1);
    state.connect(consumer('a'), 0);
    state.take('a', 2, 0);
    state.tick(100);
    state.ack(['id-s-0'], 100);
    expect(numbers(state.take('a', 5, 100))).toEqual([1]);
  });

  it('replayed parked messages come after retries in stream order, with retryCount 0', () => {
    const state = group({ messageTimeoutMs: 100 });
    feed(state, 0, 2, 1);
    state.connect(consumer('a'), 0);
    state.take('a', 1, 0);
    state.tick(100);
    state.addReplayed([{ event: event(9, 'other').event, link: event(3, 'parked').event }]);
    const deliveries = state.take('a', 5, 100);
    expect(deliveries.map((d) => [d.message.id, d.retryCount])).toEqual([
      ['id-s-0', 1],
      ['id-parked-3', 0],
      ['id-s-1', 0],
    ]);
  });
});

describe('GroupState checkpoints', () => {
  it('checkpoints on a tick once checkPointAfter passed and minCheckPointCount are done', () => {
    const state = group({ checkPointAfterMs: 1_000, minCheckPointCount: 3, maxCheckPointCount: 100 });
    feed(state, 0, 10, 9);
    state.connect(consumer('a'), 0);
    state.take('a', 10, 0);
    state.ack(['id-s-0', 'id-s-1'], 0);
    state.tick(0); // first check may happen at once (no checkpoint yet)...
    expect(checkpoints(state.drainEffects())).toEqual([]); // ...but only 2 are done
    state.ack(['id-s-2', 'id-s-4'], 10);
    state.tick(20);
    expect(checkpoints(state.drainEffects())).toEqual([2]); // 4 is done but 3 is not
    state.ack(['id-s-3', 'id-s-5', 'id-s-6'], 30);
    state.tick(500);
    expect(checkpoints(state.drainEffects())).toEqual([]); // not 1 s since the last
    state.tick(1_020);
    expect(checkpoints(state.drainEffects())).toEqual([6]);
  });

  it('forces a checkpoint at maxCheckPointCount without waiting for a tick', () => {
    const state = group({ checkPointAfterMs: 60_000, minCheckPointCount: 1, maxCheckPointCount: 5 });
    feed(state, 0, 10, 9);
    state.connect(consumer('a'), 0);
    state.take('a', 10, 0);
    state.ack(['id-s-0', 'id-s-1', 'id-s-2', 'id-s-3'], 0);
    expect(checkpoints(state.drainEffects())).toEqual([]);
    state.ack(['id-s-4'], 1);
    expect(checkpoints(state.drainEffects())).toEqual([4]);
    expect(state.checkpointPosition).toBe(4);
  });

  it('never passes a message left in the buffer by the strategy (Pinned)', () => {
    const state = group({ namedConsumerStrategy: 'Pinned', minCheckPointCount: 1, checkPointAfterMs: 1 });
    state.readStarted();
    // Alternate two source streams so that each consumer owns one of them.
    state.readCompleted(
      Array.from({ length: 10 }, (_, i) => event(i, i % 2 === 0 ? 'even' : 'odd')).map((e, i) => ({
        event: { ...e.event!, eventNumber: i },
        link: undefined,
      })),
      10,
      9,
    );
    state.connect(consumer('a'), 0);
    state.connect(consumer('b'), 0);
    const a = state.take('a', 10, 0);
    expect(a.length).toBeGreaterThan(0);
    expect(a.length).toBeLessThan(10);
    state.ack(a.map((d) => d.message.id), 0);
    state.tick(10);
    const [position] = checkpoints(state.drainEffects());
    // Whatever a took, the checkpoint stops before the first message b still has to take.
    const firstLeft = Math.min(...[...Array(10).keys()].filter((n) => !a.some((d) => d.message.position === n)));
    expect(position ?? -1).toBeLessThan(firstLeft);
  });

  it('resumes after a loaded checkpoint: counts from it, never before it', () => {
    const state = group({ minCheckPointCount: 2, checkPointAfterMs: 1 }, { readFrom: 6, checkpoint: 5 });
    expect(state.stats(0).lastCheckpointedEventPosition).toBe(5);
    feed(state, 6, 4, 9);
    state.connect(consumer('a'), 0);
    expect(numbers(state.take('a', 10, 0))).toEqual([6, 7, 8, 9]);
    state.ack(['id-s-6'], 0);
    state.tick(5);
    expect(checkpoints(state.drainEffects())).toEqual([]); // one done since the checkpoint
    state.ack(['id-s-7'], 5);
    state.tick(10);
    expect(checkpoints(state.drainEffects())).toEqual([7]);
  });

  it('flushCheckpoint writes whatever is done, whatever the counts', () => {
    const state = group({ minCheckPointCount: 100, checkPointAfterMs: 60_000 });
    feed(state, 0, 3, 2);
    state.connect(consumer('a'), 0);
    state.take('a', 3, 0);
    state.ack(['id-s-0', 'id-s-1'], 0);
    state.flushCheckpoint(1);
    expect(checkpoints(state.drainEffects())).toEqual([1]);
    state.flushCheckpoint(2);
    expect(checkpoints(state.drainEffects())).toEqual([]);
  });
});

describe('statistics', () => {
  it('reports consumers, in-flight counts and a rate per measurement', () => {
    const state = group({ extraStatistics: true });
    feed(state, 0, 10, 9);
    state.connect(consumer('a'), 0);
    state.take('a', 4, 0);
    state.ack(['id-s-0'], 50);
    const stats = state.stats(2_000);
    expect(stats).toMatchObject({
      totalItemsProcessed: 4,
      countSinceLastMeasurement: 4,
      averageItemsPerSecond: 2,
      readBufferCount: 6,
      totalInFlightMessages: 3,
      outstandingMessagesCount: 3,
    });
    expect(stats.connections[0]).toMatchObject({ inFlightMessages: 3, availableSlots: 497 });
    expect(stats.connections[0]?.extraStatistics[0]).toEqual({ key: 'Mean', value: 50 });
    expect(state.stats(3_000).countSinceLastMeasurement).toBe(0);
  });

  it('summarizes latencies as the original measurements', () => {
    const summary = latencySummary(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(summary.map((m) => m.key)).toEqual([
      'Mean', 'Median', 'Fastest', 'Quintile 1', 'Quintile 2', 'Quintile 3', 'Quintile 4',
      'Quintile 5', '90%', '95%', '99%', '99.5%', '99.9%', 'Highest',
    ]);
    expect(summary.find((m) => m.key === 'Highest')?.value).toBe(100);
    expect(summary.find((m) => m.key === '99%')?.value).toBe(100);
  });
});

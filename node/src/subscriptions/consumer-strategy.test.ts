import { describe, expect, it } from 'vitest';

import { recordedEvent } from '../../../test/support/recorded-event.js';
import type { RecordedEvent } from '../storage/event-db-types.js';
import {
  bucketOf,
  correlationIdOf,
  createConsumerStrategy,
  sourceStreamOf,
  type ConsumerSlots,
} from './consumer-strategy.js';
import type { ResolvedEvent } from './resolved-event.js';

const plain = (stream: string, n = 0, extra: Partial<RecordedEvent> = {}): ResolvedEvent => ({
  event: recordedEvent(stream, n, extra),
  link: undefined,
});

function slots(...entries: [string, number, number][]): ConsumerSlots[] {
  return entries.map(([id, inFlight, maxInFlight]) => ({ id, inFlight, maxInFlight }));
}

describe('consumer strategies', () => {
  it('RoundRobin lets any consumer with room take the next message', () => {
    const strategy = createConsumerStrategy('RoundRobin');
    const consumers = slots(['a', 0, 10], ['b', 0, 10]);
    expect(strategy.mayTake(plain('s'), 'a', consumers)).toBe(true);
    expect(strategy.mayTake(plain('s'), 'b', consumers)).toBe(true);
  });

  it('DispatchToSingle gives everything to the first consumer with room', () => {
    const strategy = createConsumerStrategy('DispatchToSingle');
    expect(strategy.mayTake(plain('s'), 'a', slots(['a', 3, 10], ['b', 0, 10]))).toBe(true);
    expect(strategy.mayTake(plain('s'), 'b', slots(['a', 3, 10], ['b', 0, 10]))).toBe(false);
    // The first is full: the next in join order takes over.
    expect(strategy.mayTake(plain('s'), 'b', slots(['a', 10, 10], ['b', 0, 10]))).toBe(true);
  });

  it('Pinned keeps each source stream on one consumer and balances buckets', () => {
    const strategy = createConsumerStrategy('Pinned');
    strategy.added('a');
    strategy.added('b');
    const consumers = slots(['a', 0, 100], ['b', 0, 100]);
    const owners = new Map<string, string>();
    for (let i = 0; i < 200; i++) {
      const source = `src-${i}`;
      const mayA = strategy.mayTake(plain(source), 'a', consumers);
      const mayB = strategy.mayTake(plain(source), 'b', consumers);
      expect(mayA !== mayB, source).toBe(true);
      owners.set(source, mayA ? 'a' : 'b');
    }
    const aCount = [...owners.values()].filter((o) => o === 'a').length;
    expect(aCount).toBeGreaterThan(60);
    expect(aCount).toBeLessThan(140);
    // Asking again gives the same owners.
    for (const [source, owner] of owners) {
      expect(strategy.mayTake(plain(source), owner, consumers)).toBe(true);
    }
    // A third consumer takes over some buckets; those of a leaving consumer are reassigned.
    strategy.added('c');
    const three = slots(['a', 0, 100], ['b', 0, 100], ['c', 0, 100]);
    const moved = [...owners.keys()].filter((s) => strategy.mayTake(plain(s), 'c', three));
    expect(moved.length).toBeGreaterThan(0);
    strategy.removed('a');
    const two = slots(['b', 0, 100], ['c', 0, 100]);
    for (const source of owners.keys()) {
      expect(strategy.mayTake(plain(source), 'a', two)).toBe(false);
      const b = strategy.mayTake(plain(source), 'b', two);
      const c = strategy.mayTake(plain(source), 'c', two);
      expect(b !== c).toBe(true);
    }
  });

  it('Pinned hashes an unresolved link by the stream named in its data, a resolved one by its target', () => {
    const link = recordedEvent('$ce-order', 3, { eventType: '$>', data: Buffer.from('7@order-42') });
    expect(sourceStreamOf({ event: link, link: undefined })).toBe('order-42');
    expect(sourceStreamOf({ event: recordedEvent('order-9', 0), link })).toBe('order-9');
    expect(sourceStreamOf({ event: undefined, link })).toBe('order-42');
  });

  it('PinnedByCorrelation keys on $correlationId, else the source stream', () => {
    const withCorrelation = plain('s', 0, { metadata: Buffer.from('{"$correlationId":"c-1"}') });
    expect(correlationIdOf(withCorrelation)).toBe('c-1');
    expect(correlationIdOf(plain('s', 0, { metadata: Buffer.from('{"$correlationId":5}') }))).toBeUndefined();
    expect(correlationIdOf(plain('s', 0, { metadata: Buffer.from('not json') }))).toBeUndefined();
    const strategy = createConsumerStrategy('PinnedByCorrelation');
    strategy.added('a');
    strategy.added('b');
    const consumers = slots(['a', 0, 100], ['b', 0, 100]);
    const ownerOf = (event: ResolvedEvent): string =>
      strategy.mayTake(event, 'a', consumers) ? 'a' : 'b';
    const first = ownerOf(plain('stream-1', 0, { metadata: Buffer.from('{"$correlationId":"x"}') }));
    // Same correlation id from another stream: same consumer.
    expect(ownerOf(plain('stream-2', 5, { metadata: Buffer.from('{"$correlationId":"x"}') }))).toBe(first);
  });

  it('spreads keys over the 1024 buckets', () => {
    const buckets = new Set(Array.from({ length: 5000 }, (_, i) => bucketOf(`stream-${i}`)));
    expect(buckets.size).toBeGreaterThan(900);
    for (const bucket of buckets) expect(bucket).toBeLessThan(1024);
  });
});

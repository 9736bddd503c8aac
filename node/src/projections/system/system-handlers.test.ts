import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../storage/event-db-types.js';
import { categoryExtractor, createNativeHandler, deletedStreamOf, SYSTEM_PROJECTION_DEFINITIONS } from './system-handlers.js';

function event(stream: string, eventNumber: number, eventType = 'Happened', options: { data?: string; metadata?: string } = {}): RecordedEvent {
  return {
    stream, eventNumber, eventId: randomUUID(), eventType,
    data: Buffer.from(options.data ?? '{}'), metadata: Buffer.from(options.metadata ?? ''), isJson: true,
    createdMs: Date.UTC(2024, 0, 2, 3, 4, 5, 678), logPosition: 100, commitPosition: 100,
  };
}

function handler(name: string) {
  const definition = SYSTEM_PROJECTION_DEFINITIONS.find((d) => d.name === name);
  if (definition === undefined) throw new Error(name);
  return createNativeHandler(definition.handlerType, definition.query);
}

describe('categories', () => {
  it('split before the first or last separator; $ streams and names without one have none', () => {
    const first = categoryExtractor('first\r\n-');
    expect(first('shoppingCart-54')).toBe('shoppingCart');
    expect(first('shoppingCart-v1-54')).toBe('shoppingCart');
    expect(first('shoppingCart')).toBeUndefined();
    expect(first('-x')).toBeUndefined();
    expect(first('$ce-x')).toBeUndefined();
    expect(categoryExtractor('last\n-')('shoppingCart-v1-54')).toBe('shoppingCart-v1');
    expect(categoryExtractor('_')('a_b_c')).toBe('a_b');
    expect(() => categoryExtractor('middle\n-')).toThrow("Expected 'first' or 'last'");
    expect(() => categoryExtractor('first\n--')).toThrow('Single separator expected');
    expect(() => categoryExtractor('')).toThrow('One symbol separator or configuration must be supplied');
  });

  it('recognise deleted streams: tombstones and metadata truncating everything', () => {
    expect(deletedStreamOf(event('a-1', Number.MAX_SAFE_INTEGER, '$streamDeleted'))).toBe('a-1');
    expect(deletedStreamOf(event('$$a-1', 3, '$metadata', { data: '{"$tb":9223372036854775807}' }))).toBe('a-1');
    expect(deletedStreamOf(event('$$a-1', 3, '$metadata', { data: '{"$tb":4}' }))).toBeUndefined();
    expect(deletedStreamOf(event('a-1', 0))).toBeUndefined();
  });
});

describe('system projection handlers', () => {
  it('$streams links the first event of every stream', () => {
    const h = handler('$streams');
    expect(h.process({ event: event('a-1', 0) })).toEqual({ stream: '$streams', eventType: '$>', data: '0@a-1', isJson: false, extra: null });
    expect(h.process({ event: event('a-1', 1) })).toBeUndefined();
  });

  it('$stream_by_category references each new stream in $category-', () => {
    const h = handler('$stream_by_category');
    expect(h.process({ event: event('order-9', 0) })).toEqual({ stream: '$category-order', eventType: '$@', data: 'order-9', isJson: false, extra: null });
    expect(h.process({ event: event('nocategory', 0) })).toBeUndefined();
  });

  it('$by_category links every event, and links again what a link points to', () => {
    const h = handler('$by_category');
    expect(h.process({ event: event('order-9', 4) })).toEqual({ stream: '$ce-order', eventType: '$>', data: '4@order-9', isJson: false, extra: { $o: '"order-9"' } });
    expect(h.process({ event: { ...event('order-links', 0, '$>'), data: Buffer.from('7@elsewhere') } })?.data).toBe('7@elsewhere');
    expect(h.process({ event: event('$$order-9', 2, '$metadata', { data: '{"$tb":9223372036854775807}' }) })).toEqual({
      stream: '$ce-order', eventType: '$>', data: '2@$$order-9', isJson: false, extra: { $o: '"order-9"', $deleted: '-1' },
    });
  });

  it('$by_event_type links every event but links, deletions into $et-$deleted, and checkpoints into $et', () => {
    const h = handler('$by_event_type');
    expect(h.process({ event: event('a-1', 2, 'Shipped') })).toEqual({ stream: '$et-Shipped', eventType: '$>', data: '2@a-1', isJson: false, extra: null });
    expect(h.process({ event: event('a-1', 0, '$>') })).toBeUndefined();
    expect(h.process({ event: event('a-1', Number.MAX_SAFE_INTEGER, '$streamDeleted') })).toEqual({
      stream: '$et-$deleted', eventType: '$>', data: `${Number.MAX_SAFE_INTEGER}@a-1`, isJson: false, extra: { $deleted: '-1' },
    });
    expect(h.checkpointEvents?.('{"$c":1,"$p":1}')).toEqual([{ stream: '$et', eventType: '$Checkpoint', data: '{"$c":1,"$p":1}', isJson: true, extra: null }]);
  });

  it('$by_correlation_id links events by the configured metadata property', () => {
    const h = handler('$by_correlation_id');
    expect(h.process({ event: event('a-1', 5, 'X', { metadata: '{"$correlationId":"c-42"}' }) })).toEqual({
      stream: '$bc-c-42', eventType: '$>', data: '5@a-1', isJson: false, extra: { $eventTimestamp: '"2024-01-02T03:04:05.678000Z"' },
    });
    expect(h.process({ event: event('a-1', 5, 'X', { metadata: '{"other":1}' }) })).toBeUndefined();
    expect(h.process({ event: event('a-1', 5, 'X', { metadata: 'not json' }) })).toBeUndefined();
    const custom = createNativeHandler('native:EventStore.Projections.Core.Standard.ByCorrelationId', '{"correlationIdProperty":"$myCorrelationId"}');
    expect(custom.process({ event: event('a-1', 1, 'X', { metadata: '{"$myCorrelationId":"m"}' }) })?.stream).toBe('$bc-m');
    expect(() => createNativeHandler('native:EventStore.Projections.Core.Standard.ByCorrelationId', '{"nope":1}')).toThrow('Could not parse projection source');
  });
});

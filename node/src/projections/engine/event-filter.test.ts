import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../storage/event-db-types.js';
import { nativeDefinition, type SourceDefinition } from '../source-definition.js';
import { classify, streamPartition } from './event-filter.js';
import type { SourceEvent } from './event-reader.js';

function recorded(stream: string, eventType: string, data = '{}', options: { metadata?: string; isJson?: boolean; number?: number } = {}): RecordedEvent {
  return {
    stream, eventNumber: options.number ?? 0, eventId: randomUUID(), eventType, data: Buffer.from(data),
    metadata: Buffer.from(options.metadata ?? ''), isJson: options.isJson ?? true, createdMs: 0, logPosition: 1, commitPosition: 1,
  };
}

const plain = (event: RecordedEvent): SourceEvent => ({ event, link: undefined, position: event });
const viaLink = (event: RecordedEvent, link: RecordedEvent): SourceEvent => ({ event, link, position: link });

function definition(overrides: Partial<SourceDefinition> = {}, options: Partial<SourceDefinition['options']> = {}): SourceDefinition {
  const base = nativeDefinition({ includeLinks: false });
  return { ...base, ...overrides, options: { ...base.options, ...options } };
}

describe('which events a projection handles', () => {
  it('from $all: user streams and their metastreams, no links unless $includeLinks, valid JSON only', () => {
    const all = { kind: 'all' } as const;
    const d = definition();
    expect(classify(d, all, plain(recorded('a-1', 'X'))).kind).toBe('event');
    expect(classify(d, all, plain(recorded('$ce-a', 'X'))).kind).toBe('skip');
    expect(classify(d, all, plain(recorded('$$a-1', '$metadata'))).kind).toBe('event');
    expect(classify(d, all, plain(recorded('$$$users', '$metadata'))).kind).toBe('skip');
    expect(classify(d, all, plain(recorded('a-1', '$>', '0@b', { isJson: false }))).kind).toBe('skip');
    expect(classify(definition({}, { $includeLinks: true }), all, plain(recorded('a-1', '$>', '0@b', { isJson: false }))).kind).toBe('event');
    expect(classify(d, all, plain(recorded('a-1', 'X', '{broken'))).kind).toBe('skip');
    expect(classify(d, all, plain(recorded('a-1', 'X', 'not json', { isJson: false }))).kind).toBe('event');
    const typed = definition({ allEvents: false, events: ['Wanted'] });
    expect(classify(typed, all, plain(recorded('a-1', 'Other'))).kind).toBe('skip');
    expect(classify(typed, all, plain(recorded('a-1', 'Wanted'))).kind).toBe('event');
  });

  it('from $all: deletions are events, or $deleted notifications for foreachStream', () => {
    const all = { kind: 'all' } as const;
    const tombstone = plain(recorded('a-1', '$streamDeleted', '', { isJson: false, number: Number.MAX_SAFE_INTEGER }));
    expect(classify(definition(), all, tombstone).kind).toBe('event');
    const deletes = definition({ byStreams: true }, { handlesDeletedNotifications: true });
    expect(classify(deletes, all, tombstone)).toEqual({ kind: 'deleted', stream: 'a-1', soft: false });
    expect(classify(deletes, all, plain(recorded('$$a-1', '$metadata', '{"$tb":9223372036854775807}')))).toEqual({ kind: 'deleted', stream: 'a-1', soft: true });
  });

  it("from a category: only what its $ce- stream links to, with $by_category's deletion links as notifications", () => {
    const category = { kind: 'stream', stream: '$ce-a', category: 'a' } as const;
    const d = definition({ allStreams: false, categories: ['a'], byStreams: true }, { handlesDeletedNotifications: true });
    const target = recorded('a-1', 'X');
    const link = recorded('$ce-a', '$>', '0@a-1', { isJson: false, metadata: '{"$o":"a-1"}' });
    expect(classify(d, category, viaLink(target, link)).kind).toBe('event');
    expect(classify(d, category, plain(recorded('$ce-a', 'Direct'))).kind).toBe('skip');
    const gone = recorded('$ce-a', '$>', '5@a-2', { isJson: false, metadata: '{"$o":"a-2","$deleted":-1}' });
    expect(classify(d, category, { event: gone, link: gone, position: gone })).toEqual({ kind: 'deleted', stream: 'a-2', soft: false });
    expect(classify({ ...d, options: { ...d.options, handlesDeletedNotifications: false } }, category, { event: gone, link: gone, position: gone }).kind).toBe('skip');
  });

  it('partitions by stream: a link\'s $o, else the stream (a metastream\'s original)', () => {
    expect(streamPartition(viaLink(recorded('a-1', 'X'), recorded('$ce-a', '$>', '0@a-1', { metadata: '{"$o":"a-1"}' })))).toBe('a-1');
    expect(streamPartition(plain(recorded('$$a-9', '$metadata')))).toBe('a-9');
    expect(streamPartition(plain(recorded('b-2', 'X')))).toBe('b-2');
  });
});

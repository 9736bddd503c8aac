import { describe, expect, it } from 'vitest';
import {
  allFeedLinks,
  formatAllPosition,
  parseAllPosition,
  streamFeedLinks,
  type StreamPage,
} from './feed.js';

const BASE = 'http://127.0.0.1:2113';

function page(overrides: Partial<StreamPage>): StreamPage {
  return {
    stream: 'newstream',
    direction: 'backward',
    fromEventNumber: 26,
    count: 20,
    lastEventNumber: 26,
    isEndOfStream: false,
    headRequested: true,
    events: [],
    eTag: undefined,
    ...overrides,
  };
}

function relations(links: { uri: string; relation: string }[]): Record<string, string> {
  return Object.fromEntries(links.map((l) => [l.relation, l.uri.replace(BASE, '')]));
}

describe('streamFeedLinks', () => {
  it('gives the head of a 27-event stream EventStoreDB links', () => {
    expect(relations(streamFeedLinks(page({}), BASE))).toEqual({
      self: '/streams/newstream',
      first: '/streams/newstream/head/backward/20',
      last: '/streams/newstream/0/forward/20',
      next: '/streams/newstream/6/backward/20',
      previous: '/streams/newstream/27/forward/20',
      metadata: '/streams/newstream/metadata',
    });
  });

  it('omits last and next at the start of the stream when reading backward', () => {
    const links = relations(
      streamFeedLinks(page({ fromEventNumber: 5, isEndOfStream: true }), BASE),
    );
    expect(links.last).toBeUndefined();
    expect(links.next).toBeUndefined();
    expect(links.previous).toBe('/streams/newstream/6/forward/20');
  });

  it('links forward pages back and on, and stops at an empty end page', () => {
    const middle = page({ direction: 'forward', fromEventNumber: 20 });
    expect(relations(streamFeedLinks(middle, BASE))).toMatchObject({
      last: '/streams/newstream/0/forward/20',
      next: '/streams/newstream/19/backward/20',
      previous: '/streams/newstream/27/forward/20',
    });
    const empty = page({ direction: 'forward', fromEventNumber: 27, isEndOfStream: true });
    expect(relations(streamFeedLinks(empty, BASE)).previous).toBeUndefined();
    const first = page({ direction: 'forward', fromEventNumber: 0 });
    expect(relations(streamFeedLinks(first, BASE)).next).toBeUndefined();
  });

  it('escapes stream names and leaves metastreams without a metadata link', () => {
    const links = relations(streamFeedLinks(page({ stream: '$$my stream' }), BASE));
    expect(links.self).toBe('/streams/%24%24my%20stream');
    expect(links.metadata).toBeUndefined();
  });
});

describe('$all positions and links', () => {
  it('round-trips 32-hex-digit positions', () => {
    const position = { commitPosition: 0x17bc0d0, preparePosition: 0x17bc0d0 };
    expect(formatAllPosition(position)).toBe('00000000017BC0D000000000017BC0D0');
    expect(parseAllPosition('00000000017BC0D000000000017BC0D0')).toEqual(position);
    expect(parseAllPosition('xyz')).toBeUndefined();
    expect(parseAllPosition('F'.repeat(32))).toBeUndefined();
  });

  it('swaps next and previous positions between directions', () => {
    const older = { commitPosition: 100, preparePosition: 100 };
    const newer = { commitPosition: 500, preparePosition: 500 };
    const common = { count: 5, isEnd: false, events: [], eTag: undefined };
    const backward = relations(
      allFeedLinks(
        { ...common, direction: 'backward', requestedPosition: newer, nextPosition: older },
        BASE,
      ),
    );
    expect(backward.next).toBe(`/streams/%24all/${formatAllPosition(older)}/backward/5`);
    expect(backward.previous).toBe(`/streams/%24all/${formatAllPosition(newer)}/forward/5`);
    const forward = relations(
      allFeedLinks(
        { ...common, direction: 'forward', requestedPosition: older, nextPosition: newer },
        BASE,
      ),
    );
    expect(forward.next).toBe(`/streams/%24all/${formatAllPosition(older)}/backward/5`);
    expect(forward.previous).toBe(`/streams/%24all/${formatAllPosition(newer)}/forward/5`);
  });
});

import { describe, expect, it } from 'vitest';
import {
  EVENT_CODECS,
  FEED_CODECS,
  INCOMING_CODECS,
  MediaType,
  WRITE_CODECS,
  negotiate,
  parseRequestContentType,
} from './media-types.js';

describe('negotiate', () => {
  it('chooses the route first codec when there is no Accept header', () => {
    expect(negotiate(undefined, undefined, FEED_CODECS)).toEqual({
      mediaType: MediaType.DescriptionDocJson,
      byDefault: true,
    });
    expect(negotiate(undefined, undefined, EVENT_CODECS)?.mediaType).toBe(MediaType.Atom);
  });

  it('orders Accept entries by q, stably, and matches wildcards', () => {
    const accept = 'text/xml;q=0.5, application/vnd.eventstore.atom+json, */*;q=0.1';
    expect(negotiate(accept, undefined, FEED_CODECS)?.mediaType).toBe(MediaType.AtomJson);
    expect(negotiate('application/*', undefined, EVENT_CODECS)?.mediaType).toBe(MediaType.Atom);
    expect(negotiate('application/json, */*;q=0.5', undefined, FEED_CODECS)?.mediaType).toBe(
      MediaType.Json,
    );
    expect(negotiate('*/*', undefined, FEED_CODECS)?.byDefault).toBe(true);
  });

  it('accepts KurrentDB media type names as aliases', () => {
    const accept = 'application/vnd.kurrent.atom+json';
    expect(negotiate(accept, undefined, FEED_CODECS)?.mediaType).toBe(MediaType.AtomJson);
  });

  it('lets ?format= win and answers undefined (406) when nothing fits', () => {
    expect(negotiate('application/json', 'xml', FEED_CODECS)?.mediaType).toBe(MediaType.Xml);
    expect(negotiate('image/png', undefined, FEED_CODECS)).toBeUndefined();
    expect(negotiate(undefined, 'text', FEED_CODECS)).toBeUndefined();
  });
});

describe('parseRequestContentType', () => {
  it('matches exactly, ignoring a UTF-8 charset, and refuses other charsets', () => {
    expect(parseRequestContentType('application/json; charset=utf-8', INCOMING_CODECS)).toEqual({
      kind: 'ok',
      mediaType: MediaType.Json,
    });
    expect(parseRequestContentType('application/json; charset=latin1', INCOMING_CODECS).kind).toBe(
      'unsupported',
    );
    expect(parseRequestContentType(MediaType.EventsJson, INCOMING_CODECS).kind).toBe('unsupported');
    expect(parseRequestContentType(undefined, INCOMING_CODECS).kind).toBe('unsupported');
  });

  it('answers per codec list when the same header is seen again (remembered answers)', () => {
    const header = 'application/vnd.kurrent.events+json; charset=UTF-8';
    for (let round = 0; round < 3; round++) {
      expect(parseRequestContentType(header, WRITE_CODECS)).toEqual({
        kind: 'ok',
        mediaType: MediaType.EventsJson,
      });
      expect(parseRequestContentType(header, INCOMING_CODECS).kind).toBe('unsupported');
    }
    // More distinct headers than are remembered: answers stay right.
    for (let index = 0; index < 600; index++) {
      const odd = `application/x-${index}`;
      expect(parseRequestContentType(odd, WRITE_CODECS).kind).toBe('unsupported');
    }
    expect(parseRequestContentType(header, WRITE_CODECS).kind).toBe('ok');
  });
});

import { describe, expect, it } from 'vitest';
import { EventDbError } from '../../errors.js';
import { parseEventBody } from './event-body.js';
import { isJsonTooDeep } from './json-depth.js';
import { MediaType } from './media-types.js';

const ID = 'fbf4a1a1-b4a3-4dfe-a01f-ec52c34e16e4';
const noHeaders = { eventType: undefined, eventId: undefined };

function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (err: unknown) {
    if (err instanceof EventDbError) return err.message;
    throw err;
  }
  throw new Error('expected a bad request');
}

describe('parseEventBody', () => {
  it('re-serializes object data as indented JSON and keeps plain strings as text', () => {
    const body = Buffer.from(
      JSON.stringify([
        { EventId: ID, EventType: 'a', Data: { x: 1 }, metadata: '{"m":true}' },
        { eventId: ID.replace('4', '5'), eventType: 'b', data: 'hello', metadata: 7 },
      ]),
    );
    const parsed = parseEventBody(MediaType.EventsJson, body, noHeaders, 1000);
    if (parsed.kind !== 'events') throw new Error('expected events');
    const [first, second] = parsed.events;
    expect(Buffer.from(first?.data ?? []).toString()).toBe('{\n  "x": 1\n}');
    expect(Buffer.from(first?.metadata ?? []).toString()).toBe('{\n  "m": true\n}');
    expect(first?.isJson).toBe(true);
    expect(Buffer.from(second?.data ?? []).toString()).toBe('hello');
    expect(second?.metadata.byteLength).toBe(0);
    expect(second?.isJson).toBe(false);
  });

  it('asks for an event id for single bodies without one, and needs an event type', () => {
    const headers = { eventType: 't', eventId: undefined };
    expect(parseEventBody(MediaType.Json, Buffer.from('{}'), headers, 10).kind).toBe(
      'needs-event-id',
    );
    expect(messageOf(() => parseEventBody(MediaType.Raw, Buffer.from('x'), noHeaders, 10))).toMatch(
      /^Must include an event type/,
    );
  });

  it('rejects invalid batches with EventStoreDB messages', () => {
    const parse = (text: string): string =>
      messageOf(() => parseEventBody(MediaType.EventsJson, Buffer.from(text), noHeaders, 1000));
    expect(parse('[')).toBe('Write request body invalid.');
    expect(parse('[]')).toBe('Write request body invalid.');
    expect(parse('[{"eventType":"a"}]')).toBe("Empty eventId provided. (Parameter 'eventId')");
    expect(parse(`[{"eventId":"${ID}"}]`)).toBe('Empty eventType provided.');
    expect(parse(`[{"eventId":"${ID}","eventType":"a","data":"${'x'.repeat(1001)}"}]`)).toBe(
      'Too large events received. Limit is 1000 bytes.',
    );
  });
});

describe('isJsonTooDeep', () => {
  it('counts brackets outside strings only', () => {
    expect(isJsonTooDeep('[[[]]]', 3)).toBe(false);
    expect(isJsonTooDeep('[[[[]]]]', 3)).toBe(true);
    expect(isJsonTooDeep('["[[[[[[", "\\"[[[["]', 2)).toBe(false);
  });
});

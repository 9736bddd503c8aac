import { describe, expect, it } from 'vitest';
import { parseEventBody } from './event-body.js';
import { MediaType } from './media-types.js';
import { parseXml, xmlEventsToJson } from './xml-events.js';

const ID = 'fbf4a1a1-b4a3-4dfe-a01f-ec52c34e16e4';

describe('xmlEventsToJson', () => {
  it('reads EventStoreDB XML batches like their JSON form', () => {
    const xml = `<?xml version="1.0" encoding="utf-8"?>
      <Events>
        <Event>
          <EventId>${ID}</EventId>
          <EventType>event-type</EventType>
          <Data><MyEvent><Something>1</Something><Tag>a</Tag><Tag>b &amp; c</Tag></MyEvent></Data>
        </Event>
      </Events>`;
    expect(xmlEventsToJson(xml)).toEqual([
      {
        EventId: ID,
        EventType: 'event-type',
        Data: { MyEvent: { Something: '1', Tag: ['a', 'b & c'] } },
      },
    ]);
    const parsed = parseEventBody(
      MediaType.EventsXml,
      Buffer.from(xml),
      { eventType: undefined, eventId: undefined },
      10_000,
    );
    if (parsed.kind !== 'events') throw new Error('expected events');
    expect(parsed.events[0]?.eventType).toBe('event-type');
    expect(parsed.events[0]?.isJson).toBe(true);
    expect(JSON.parse(Buffer.from(parsed.events[0]?.data ?? []).toString())).toEqual({
      MyEvent: { Something: '1', Tag: ['a', 'b & c'] },
    });
  });

  it('refuses malformed or differently shaped documents', () => {
    expect(parseXml('<a><b></a>')).toBeUndefined();
    expect(parseXml('<a></a><b/>')).toBeUndefined();
    expect(parseXml('<a>x < y</a>')).toBeUndefined();
    expect(xmlEventsToJson('<Events><Other/></Events>')).toBeUndefined();
    expect(xmlEventsToJson('<Events/>')).toBeUndefined();
    expect(
      xmlEventsToJson('<a>' + '<b>'.repeat(500) + '</b>'.repeat(500) + '</a>'),
    ).toBeUndefined();
  });
});

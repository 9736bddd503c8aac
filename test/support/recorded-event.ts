/** RecordedEvents for unit tests that need an event without a database. */
import type { RecordedEvent } from '../../node/src/storage/event-db-types.js';

/**
 * Event `eventNumber` of `stream`: type `T`, JSON body `{}`, no metadata, time and positions 0,
 * an id made of the number (a valid GUID); `overrides` set anything else.
 */
export function recordedEvent(stream: string, eventNumber: number, overrides: Partial<RecordedEvent> = {}): RecordedEvent {
  return {
    stream,
    eventNumber,
    eventId: `00000000-0000-4000-8000-${String(eventNumber).padStart(12, '0')}`,
    eventType: 'T',
    data: Buffer.from('{}'),
    metadata: Buffer.alloc(0),
    isJson: true,
    createdMs: 0,
    logPosition: 0,
    commitPosition: 0,
    ...overrides,
  };
}

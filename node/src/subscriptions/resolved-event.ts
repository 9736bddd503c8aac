/**
 * A message's event as EventStoreDB's ResolvedEvent: the record read and, for a link that was
 * resolved, its target. The *original* event (the link when there is one) names the message:
 * its id is the message id, its event number the position in the subscribed stream.
 */
import { assert } from '../errors.js';
import type { RecordedEvent } from '../storage/event-db-types.js';

export interface ResolvedEvent {
  /** The event carried: a resolved link's target, or the record itself. Undefined when a link's target is gone. */
  readonly event: RecordedEvent | undefined;
  /** The link record, when the event was reached through a link (resolved or not found). */
  readonly link: RecordedEvent | undefined;
}

/** The record that was read: the link if any, else the event. */
export function originalOf(resolved: ResolvedEvent): RecordedEvent {
  const original = resolved.link ?? resolved.event;
  assert(original !== undefined, 'a resolved event has a link or an event');
  return original;
}

export function plainEvent(event: RecordedEvent): ResolvedEvent {
  return { event, link: undefined };
}

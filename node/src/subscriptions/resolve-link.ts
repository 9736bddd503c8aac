/**
 * Link resolution for subscriptions: a `$>` event's data names `{eventNumber}@{stream}`; the
 * message carries that event, and the link stays the message's original record.
 */
import type { EventDb, RecordedEvent } from '../storage/event-db-types.js';
import { LINK_EVENT_TYPE, parseLinkData } from './names.js';
import type { ResolvedEvent } from './resolved-event.js';

/** The link's target when `record` is a link and the target is readable; else the link alone. */
export async function resolveLink(db: EventDb, record: RecordedEvent): Promise<ResolvedEvent> {
  if (record.eventType !== LINK_EVENT_TYPE) return { event: record, link: undefined };
  const target = parseLinkData(record.data.toString('utf8'));
  if (target === undefined) return { event: undefined, link: record };
  const found = await db.readEvent(target.stream, target.eventNumber);
  return found.kind === 'success'
    ? { event: found.event, link: record }
    : { event: undefined, link: record };
}

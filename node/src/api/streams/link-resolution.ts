/**
 * Link events (`$>`, data `N@stream`) as reads show them. With resolution on (the default for
 * stream and single-event reads; `ES-ResolveLinkTos: false` turns it off; never for `$all` or
 * metastreams) a link is replaced by the event it points to, read with that stream's metadata
 * applied; a link whose target is gone stays a link (EventStoreDB's ForFailedResolvedLink).
 * So does a link whose target's stream the reader may not read: a link never shows what the ACL
 * of its target's stream denies.
 */
import type { EventDb, RecordedEvent } from '../../storage/event-db-types.js';
import type { ReadDecisions } from '../security/read-authorization.js';

export const LINK_EVENT_TYPE = '$>';

/** A link read with resolution on: its target, or undefined when the target cannot be read. */
export interface ResolvedLink {
  readonly kind: 'link';
  readonly link: RecordedEvent;
  readonly target: RecordedEvent | undefined;
}

/** What a feed entry shows: an event as recorded, or a resolved (or unresolvable) link. */
export type FeedItem = RecordedEvent | ResolvedLink;

export function isResolvedLink(item: FeedItem): item is ResolvedLink {
  return (item as { kind?: unknown }).kind === 'link';
}

/** The event an item stands for: the target of a resolved link, else the recorded event. */
export function itemEvent(item: FeedItem): RecordedEvent | undefined {
  return isResolvedLink(item) ? item.target : item;
}

/** `N@stream`; undefined when the data is not a link. */
export function parseLink(data: Buffer): { stream: string; eventNumber: number } | undefined {
  const text = data.toString('utf8');
  const at = text.indexOf('@');
  if (at <= 0) return undefined;
  const eventNumber = Number(text.slice(0, at));
  if (!Number.isSafeInteger(eventNumber) || eventNumber < 0) return undefined;
  return { stream: text.slice(at + 1), eventNumber };
}

/** Resolves one event: events other than links, and links with data that is not `N@stream`, stay as they are. */
export async function resolveLink(
  db: EventDb,
  event: RecordedEvent,
  decisions: ReadDecisions,
): Promise<FeedItem> {
  if (event.eventType !== LINK_EVENT_TYPE) return event;
  const target = parseLink(event.data);
  if (target === undefined) return event;
  const result = await db.readEvent(target.stream, target.eventNumber);
  const found = result.kind === 'success' ? result.event : undefined;
  return { kind: 'link', link: event, target: await decisions.linkTarget(found) };
}

export async function resolveLinks(
  db: EventDb,
  events: readonly RecordedEvent[],
  decisions: ReadDecisions,
): Promise<FeedItem[]> {
  const out: FeedItem[] = new Array(events.length);
  for (let index = 0; index < events.length; index++) {
    const event = events[index] as RecordedEvent;
    out[index] = event.eventType === LINK_EVENT_TYPE ? await resolveLink(db, event, decisions) : event;
  }
  return out;
}

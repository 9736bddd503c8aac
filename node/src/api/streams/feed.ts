/**
 * Atom feed documents for stream pages and `$all` pages, with EventStoreDB's link formulas
 * (Convert.ToStreamEventBackwardFeed / ForwardFeed / ToAllEvents*Feed). Entries are always
 * newest first. Links are absolute, built from the request's base URL.
 */
import type { AllPosition, RecordedEvent } from '../../storage/event-db-types.js';
import { itemEvent, type FeedItem } from './link-resolution.js';
import {
  AUTHOR,
  EMPTY_FEED_UPDATED,
  escapeStream,
  toEntry,
  type AtomLink,
  type EmbedLevel,
} from './entry.js';

export const FEED_PAGE_SIZE = 20;

export interface StreamPage {
  readonly stream: string;
  readonly direction: 'forward' | 'backward';
  /** The requested start; for `head` the stream's last event number. */
  readonly fromEventNumber: number;
  readonly count: number;
  readonly lastEventNumber: number;
  readonly isEndOfStream: boolean;
  readonly headRequested: boolean;
  /** In read order; links resolved when the read asked for it. */
  readonly events: readonly FeedItem[];
  readonly eTag: string | undefined;
}

export interface FeedOptions {
  readonly baseUrl: string;
  readonly embed: EmbedLevel;
}

function newestFirst<T>(direction: 'forward' | 'backward', events: readonly T[]): T[] {
  return direction === 'forward' ? [...events].reverse() : [...events];
}

/** The first entry's event time (a resolved link's target; none for an unresolvable link). */
function feedUpdated(entries: readonly FeedItem[]): string {
  const first = entries[0] === undefined ? undefined : itemEvent(entries[0]);
  return first === undefined
    ? EMPTY_FEED_UPDATED
    : new Date(first.createdMs).toISOString().replace(/\.?0+Z$/, 'Z');
}

export function streamFeedLinks(page: StreamPage, baseUrl: string): AtomLink[] {
  const root = `${baseUrl}/streams/${escapeStream(page.stream)}`;
  const { count, fromEventNumber: from, lastEventNumber: last } = page;
  const links: AtomLink[] = [
    { uri: root, relation: 'self' },
    { uri: `${root}/head/backward/${count}`, relation: 'first' },
  ];
  if (page.direction === 'backward') {
    if (!page.isEndOfStream) {
      links.push({ uri: `${root}/0/forward/${count}`, relation: 'last' });
      links.push({
        uri: `${root}/${Math.max(from - count, 0)}/backward/${count}`,
        relation: 'next',
      });
    }
    links.push({
      uri: `${root}/${Math.min(from, last) + 1}/forward/${count}`,
      relation: 'previous',
    });
  } else {
    if (from - 1 >= 0) {
      links.push({ uri: `${root}/0/forward/${count}`, relation: 'last' });
      links.push({ uri: `${root}/${from - 1}/backward/${count}`, relation: 'next' });
    }
    if (!(page.isEndOfStream && page.events.length === 0)) {
      links.push({
        uri: `${root}/${Math.min(from + count - 1, last) + 1}/forward/${count}`,
        relation: 'previous',
      });
    }
  }
  if (!page.stream.startsWith('$$')) links.push({ uri: `${root}/metadata`, relation: 'metadata' });
  return links;
}

export function streamFeed(page: StreamPage, options: FeedOptions): Record<string, unknown> {
  const entries = newestFirst(page.direction, page.events);
  const root = `${options.baseUrl}/streams/${escapeStream(page.stream)}`;
  const feed: Record<string, unknown> = {
    title: `Event stream '${page.stream}'`,
    id: root,
    updated: feedUpdated(entries),
    streamId: page.stream,
    author: AUTHOR,
    headOfStream: page.direction === 'backward' ? page.headRequested : page.isEndOfStream,
  };
  if (page.direction === 'backward') feed.selfUrl = root;
  if (page.direction === 'backward' && page.eTag !== undefined) feed.eTag = page.eTag;
  feed.links = streamFeedLinks(page, options.baseUrl);
  feed.entries = entries.map((event) =>
    toEntry(event, { baseUrl: options.baseUrl, embed: options.embed, singleEntry: false }),
  );
  return feed;
}

/** 32 hex digits: commit position then prepare position, 16 upper-case hex digits each. */
export function formatAllPosition(position: AllPosition): string {
  const hex = (n: number): string => n.toString(16).toUpperCase().padStart(16, '0');
  return hex(position.commitPosition) + hex(position.preparePosition);
}

export function parseAllPosition(text: string): AllPosition | undefined {
  if (!/^[0-9a-f]{32}$/i.test(text)) return undefined;
  const commitPosition = Number.parseInt(text.slice(0, 16), 16);
  const preparePosition = Number.parseInt(text.slice(16), 16);
  if (!Number.isSafeInteger(commitPosition) || !Number.isSafeInteger(preparePosition))
    return undefined;
  return { commitPosition, preparePosition };
}

export interface AllPage {
  readonly direction: 'forward' | 'backward';
  readonly count: number;
  /** Where reading the other way continues (EventStoreDB's PrevPos: the requested position). */
  readonly requestedPosition: AllPosition;
  readonly nextPosition: AllPosition;
  readonly isEnd: boolean;
  /** The events the reader may see (those of streams whose ACL denies it are left out). */
  readonly events: readonly RecordedEvent[];
  /** How many events the read returned before that filtering (default: `events.length`). */
  readonly readEventCount?: number;
  readonly eTag: string | undefined;
}

export const ALL_STREAM_ESCAPED = '%24all';
const ALL_START = '0'.repeat(32);

export function allFeedLinks(page: AllPage, baseUrl: string): AtomLink[] {
  const root = `${baseUrl}/streams/${ALL_STREAM_ESCAPED}`;
  const { count } = page;
  const links: AtomLink[] = [
    { uri: root, relation: 'self' },
    { uri: `${root}/head/backward/${count}`, relation: 'first' },
    {
      uri: `${root}/${ALL_START}/forward/${count}`,
      relation: 'last',
    },
  ];
  const older = page.direction === 'backward' ? page.nextPosition : page.requestedPosition;
  const newer = page.direction === 'backward' ? page.requestedPosition : page.nextPosition;
  const atStart =
    page.direction === 'backward'
      ? page.isEnd
      : older.commitPosition === 0 && older.preparePosition === 0;
  if (!atStart)
    links.push({ uri: `${root}/${formatAllPosition(older)}/backward/${count}`, relation: 'next' });
  const readEventCount = page.readEventCount ?? page.events.length;
  if (!(page.direction === 'forward' && page.isEnd && readEventCount === 0)) {
    links.push({
      uri: `${root}/${formatAllPosition(newer)}/forward/${count}`,
      relation: 'previous',
    });
  }
  links.push({ uri: `${root}/metadata`, relation: 'metadata' });
  return links;
}

export function allFeed(page: AllPage, options: FeedOptions): Record<string, unknown> {
  const entries = newestFirst(page.direction, page.events);
  const root = `${options.baseUrl}/streams/${ALL_STREAM_ESCAPED}`;
  const feed: Record<string, unknown> = {
    title: 'All events',
    id: root,
    updated: feedUpdated(entries),
    author: AUTHOR,
    headOfStream: false,
  };
  if (page.direction === 'backward') feed.selfUrl = root;
  if (page.eTag !== undefined) feed.eTag = page.eTag;
  feed.links = allFeedLinks(page, options.baseUrl);
  feed.entries = entries.map((event) =>
    toEntry(event, { baseUrl: options.baseUrl, embed: options.embed, singleEntry: false }),
  );
  return feed;
}

/**
 * The description document served on feed routes to clients that ask for no format; it names
 * the stream's persistent-subscription groups, when it has any (relative hrefs, as the original).
 */
export function descriptionDocument(
  stream: string,
  subscriptionGroups: readonly string[] = [],
): Record<string, unknown> {
  const href = `/streams/${escapeStream(stream)}`;
  const document = {
    title: `Description document for '${stream}'`,
    description:
      'The description document will be presented when no accept header is present ' +
      'or it was requested',
    _links: {
      self: { href, supportedContentTypes: ['application/vnd.eventstore.streamdesc+json'] },
      stream: {
        href,
        supportedContentTypes: ['application/atom+xml', 'application/vnd.eventstore.atom+json'],
      },
    } as Record<string, unknown>,
  };
  if (subscriptionGroups.length > 0) {
    document._links.streamSubscription = subscriptionGroups.map((group) => ({
      href: `/subscriptions/${escapeStream(stream)}/${escapeStream(group)}`,
      supportedContentTypes: [
        'application/vnd.eventstore.competingatom+xml',
        'application/vnd.eventstore.competingatom+json',
      ],
    }));
  }
  return document;
}

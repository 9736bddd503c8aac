/**
 * Wire shapes of the persistent-subscription endpoints, as EventStoreDB emits them:
 *
 * - the competing Atom feed (`competingatom+json` / `+xml`, Convert.ToNextNPersistentMessagesFeed):
 *   ackAll/nackAll links when there are entries, `previous` (the same count) and `self`;
 *   entries newest first, each with `retryCount` and `ack`/`nack` links named by message id;
 * - entries of resolved links (Convert.ToEntry): title, id and links name the target event,
 *   `updated` is the link's time, summary `$>`; rich fields describe the target, with the
 *   link's position and metadata;
 * - the summary, info and paged DTOs of `GET /subscriptions...` (JSON camelCase, XML PascalCase),
 *   null members omitted;
 * - the completion messages of create/update/delete/replay (`{correlationId, reason, result}`).
 */
import { randomUUID } from 'node:crypto';

import type { RecordedEvent } from '../../storage/event-db-types.js';
import type { Delivery, GroupInfo, ResolvedEvent } from '../../subscriptions/service.js';
import { atomFeedXml, entryHeadXml, escapeXml, jsonToXml, linksXml, XML_DECLARATION } from '../streams/atom-xml.js';
import {
  AUTHOR,
  EMPTY_FEED_UPDATED,
  escapeStream,
  formatAtomDate,
  toEntry,
  type AtomLink,
  type EmbedLevel,
} from '../streams/entry.js';

const PARKED_STREAM_PREFIX = '%24persistentsubscription';

export function subscriptionPath(stream: string, group: string): string {
  return `/subscriptions/${escapeStream(stream)}/${escapeStream(group)}`;
}

/** An Atom entry for a message's event (ResolvedEvent semantics of Convert.ToEntry). */
export function resolvedEntry(
  resolved: ResolvedEvent,
  options: { baseUrl: string; embed: EmbedLevel },
): Record<string, unknown> {
  const { event, link } = resolved;
  if (link === undefined && event !== undefined) {
    return toEntry(event, { baseUrl: options.baseUrl, embed: options.embed, singleEntry: false });
  }
  if (link === undefined) return {};
  const target = targetOf(link);
  const uri = `${options.baseUrl}/streams/${escapeStream(target.stream)}/${target.eventNumber}`;
  const entry: Record<string, unknown> = {};
  if (event !== undefined && rank(options.embed) >= rank('rich')) {
    // The target's rich fields, then the link's position and metadata.
    const rich = toEntry(event, { baseUrl: options.baseUrl, embed: options.embed, singleEntry: false });
    for (const [key, value] of Object.entries(rich)) {
      if (key === 'title') break;
      if (key === 'streamId' && rank(options.embed) >= rank('body')) {
        const linkMetadata = link.metadata.toString('utf8');
        if (linkMetadata !== '') entry.linkMetaData = linkMetadata;
      }
      entry[key] = value;
    }
    entry.isLinkMetaData = link.metadata.byteLength > 0;
    entry.positionEventNumber = link.eventNumber;
    entry.positionStreamId = link.stream;
  }
  entry.title = `${target.eventNumber}@${target.stream}`;
  entry.id = uri;
  entry.updated = formatAtomDate(link.createdMs);
  entry.author = AUTHOR;
  entry.summary = '$>';
  entry.links = [
    { uri, relation: 'edit' },
    { uri, relation: 'alternate' },
  ] satisfies AtomLink[];
  return entry;
}

const EMBED_ORDER: readonly EmbedLevel[] = ['none', 'content', 'rich', 'body', 'prettybody', 'tryharder'];
function rank(embed: EmbedLevel): number {
  return EMBED_ORDER.indexOf(embed);
}

/** Where a link points; a link whose data cannot be read names itself. */
function targetOf(link: RecordedEvent): { stream: string; eventNumber: number } {
  const text = link.data.toString('utf8');
  const at = text.indexOf('@');
  const eventNumber = Number(text.slice(0, at));
  if (at > 0 && Number.isSafeInteger(eventNumber)) return { stream: text.slice(at + 1), eventNumber };
  return { stream: link.stream, eventNumber: link.eventNumber };
}

function originalIdOf(resolved: ResolvedEvent): string {
  return (resolved.link ?? resolved.event)?.eventId ?? '';
}

function timeOf(resolved: ResolvedEvent): number | undefined {
  return (resolved.event ?? resolved.link)?.createdMs;
}

/** Inserts `retryCount` after `summary` (before `content` and `links`), and appends links. */
function withRetryCount(
  entry: Record<string, unknown>,
  retryCount: number,
  extraLinks: readonly AtomLink[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (key !== 'content' && key !== 'links') out[key] = value;
  }
  out.retryCount = retryCount;
  if (entry.content !== undefined) out.content = entry.content;
  out.links = [...((entry.links as AtomLink[] | undefined) ?? []), ...extraLinks];
  return out;
}

export interface CompetingFeedArgs {
  readonly baseUrl: string;
  readonly stream: string;
  readonly group: string;
  /** The count asked for (the `previous` link repeats it). */
  readonly count: number;
  readonly embed: EmbedLevel;
  /** In delivery order (oldest first). */
  readonly deliveries: readonly Delivery[];
}

export function competingFeed(args: CompetingFeedArgs): Record<string, unknown> {
  const root = `${args.baseUrl}${subscriptionPath(args.stream, args.group)}`;
  const { deliveries } = args;
  const newest = deliveries[deliveries.length - 1];
  const newestTime = newest === undefined ? undefined : timeOf(newest.message.resolved);
  const links: AtomLink[] = [];
  if (deliveries.length > 0) {
    const ids = deliveries.map((d) => originalIdOf(d.message.resolved)).join(',');
    links.push({ uri: `${root}/ack?ids=${ids}`, relation: 'ackAll' });
    links.push({ uri: `${root}/nack?ids=${ids}`, relation: 'nackAll' });
  }
  links.push({ uri: `${root}/${args.count}`, relation: 'previous' });
  links.push({ uri: root, relation: 'self' });
  const entries = [...deliveries].reverse().map((delivery) => {
    const id = originalIdOf(delivery.message.resolved);
    const entry = resolvedEntry(delivery.message.resolved, {
      baseUrl: args.baseUrl,
      embed: args.embed,
    });
    return withRetryCount(entry, delivery.retryCount, [
      { uri: `${root}/ack/${id}`, relation: 'ack' },
      { uri: `${root}/nack/${id}`, relation: 'nack' },
    ]);
  });
  return {
    title: `Messages for '${args.stream}/${args.group}'`,
    id: root,
    updated: newestTime === undefined ? EMPTY_FEED_UPDATED : formatAtomDate(newestTime),
    author: AUTHOR,
    headOfStream: false,
    links,
    entries,
  };
}

function entryXml(entry: Record<string, unknown>): string {
  const retry = entry.retryCount === undefined ? '' : `<retryCount>${escapeXml(String(entry.retryCount ?? ''))}</retryCount>`;
  const content =
    entry.content === undefined
      ? ''
      : jsonToXml('content', entry.content).replace(/^<content>/, '<content type="application/xml">');
  return (
    '<entry>' +
    entryHeadXml(entry) +
    retry +
    linksXml((entry.links as AtomLink[] | undefined) ?? []) +
    content +
    '</entry>'
  );
}

/** An Atom XML rendering of a competing (or parked-message) feed model. */
export function feedXml(feed: Record<string, unknown>): string {
  return atomFeedXml(feed, entryXml);
}

// ---- statistics DTOs -----------------------------------------------------------------------

interface RelLink {
  readonly href: string;
  readonly rel: string;
}

function groupUrls(
  baseUrl: string,
  info: GroupInfo,
): { root: string; parkedMessageUri: string; getMessagesUri: string } {
  const stream = escapeStream(info.stream);
  const group = escapeStream(info.group);
  return {
    root: `${baseUrl}/subscriptions/${stream}/${group}`,
    parkedMessageUri: `${baseUrl}/streams/${PARKED_STREAM_PREFIX}-${stream}::${group}-parked`,
    getMessagesUri: `${baseUrl}/subscriptions/${stream}/${group}/1`,
  };
}

/** `long.TryParse(position)` of the original's deprecated number fields: 0 when absent. */
function positionNumber(position: number | undefined): number {
  return position ?? 0;
}

function positionString(position: number | undefined): string | undefined {
  return position === undefined ? undefined : String(position);
}

/** Drops undefined members (the original omits nulls). */
function compact(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

export function summaryDto(baseUrl: string, info: GroupInfo): Record<string, unknown> {
  const urls = groupUrls(baseUrl, info);
  const { stats } = info;
  return compact({
    links: [{ href: `${urls.root}/info`, rel: 'detail' }] satisfies RelLink[],
    eventStreamId: info.stream,
    groupName: info.group,
    parkedMessageUri: urls.parkedMessageUri,
    getMessagesUri: urls.getMessagesUri,
    status: stats.status,
    averageItemsPerSecond: stats.averageItemsPerSecond,
    totalItemsProcessed: stats.totalItemsProcessed,
    lastProcessedEventNumber: positionNumber(stats.lastCheckpointedEventPosition),
    lastCheckpointedEventPosition: positionString(stats.lastCheckpointedEventPosition),
    lastKnownEventNumber: positionNumber(stats.lastKnownEventPosition),
    lastKnownEventPosition: positionString(stats.lastKnownEventPosition),
    connectionCount: stats.connections.length,
    totalInFlightMessages: stats.totalInFlightMessages,
  });
}

export function infoDto(baseUrl: string, info: GroupInfo): Record<string, unknown> {
  const urls = groupUrls(baseUrl, info);
  const { stats, settings } = info;
  return compact({
    links: [
      { href: `${urls.root}/info`, rel: 'detail' },
      { href: `${urls.root}/replayParked`, rel: 'replayParked' },
    ] satisfies RelLink[],
    config: {
      resolveLinktos: settings.resolveLinkTos,
      startFrom: settings.startFrom,
      startPosition: String(settings.startFrom),
      messageTimeoutMilliseconds: settings.messageTimeoutMs,
      extraStatistics: settings.extraStatistics,
      maxRetryCount: settings.maxRetryCount,
      liveBufferSize: settings.liveBufferSize,
      bufferSize: settings.bufferSize,
      readBatchSize: settings.readBatchSize,
      preferRoundRobin: settings.namedConsumerStrategy === 'RoundRobin',
      checkPointAfterMilliseconds: settings.checkPointAfterMs,
      minCheckPointCount: settings.minCheckPointCount,
      maxCheckPointCount: settings.maxCheckPointCount,
      maxSubscriberCount: settings.maxSubscriberCount,
      namedConsumerStrategy: settings.namedConsumerStrategy,
    },
    eventStreamId: info.stream,
    groupName: info.group,
    status: stats.status,
    averageItemsPerSecond: stats.averageItemsPerSecond,
    parkedMessageUri: urls.parkedMessageUri,
    getMessagesUri: urls.getMessagesUri,
    totalItemsProcessed: stats.totalItemsProcessed,
    countSinceLastMeasurement: stats.countSinceLastMeasurement,
    lastProcessedEventNumber: positionNumber(stats.lastCheckpointedEventPosition),
    lastCheckpointedEventPosition: positionString(stats.lastCheckpointedEventPosition),
    lastKnownEventNumber: positionNumber(stats.lastKnownEventPosition),
    lastKnownEventPosition: positionString(stats.lastKnownEventPosition),
    readBufferCount: stats.readBufferCount,
    liveBufferCount: stats.liveBufferCount,
    retryBufferCount: stats.retryBufferCount,
    totalInFlightMessages: stats.totalInFlightMessages,
    outstandingMessagesCount: stats.outstandingMessagesCount,
    connections: stats.connections.map((connection) => ({
      from: connection.from,
      username: connection.username,
      averageItemsPerSecond: connection.averageItemsPerSecond,
      totalItemsProcessed: connection.totalItemsProcessed,
      countSinceLastMeasurement: connection.countSinceLastMeasurement,
      extraStatistics: connection.extraStatistics,
      availableSlots: connection.availableSlots,
      inFlightMessages: connection.inFlightMessages,
      connectionName: connection.connectionName,
    })),
    parkedMessageCount: info.parkedMessageCount,
  });
}

export function pagedDto(
  baseUrl: string,
  page: { offset: number; count: number; total: number },
  infos: readonly GroupInfo[],
): Record<string, unknown> {
  const url = (offset: number): string =>
    `${baseUrl}/subscriptions?offset=${offset}&count=${page.count}`;
  const links: RelLink[] = [
    { href: url(page.offset), rel: 'self' },
    { href: url(0), rel: 'first' },
  ];
  if (page.offset > 0) links.push({ href: url(Math.max(0, page.offset - page.count)), rel: 'previous' });
  if (page.offset + page.count < page.total) links.push({ href: url(page.offset + page.count), rel: 'next' });
  return {
    links,
    offset: page.offset,
    count: page.count,
    total: page.total,
    subscriptions: infos.map((info) => summaryDto(baseUrl, info)),
  };
}

/** Names of list items in the XML renderings (XmlSerializer uses the item type's name). */
const XML_ITEM_NAMES: Readonly<Record<string, string>> = {
  links: 'RelLink',
  connections: 'ConnectionInfo',
  extraStatistics: 'Measurement',
  subscriptions: 'SubscriptionSummary',
};

function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function dtoElement(name: string, value: unknown): string {
  if (Array.isArray(value)) {
    const item = XML_ITEM_NAMES[name] ?? 'Item';
    return `<${pascal(name)}>${value.map((v) => dtoElement(item, v)).join('')}</${pascal(name)}>`;
  }
  if (typeof value === 'object' && value !== null) {
    const inner = Object.entries(value)
      .map(([key, child]) => dtoElement(key, child))
      .join('');
    return `<${pascal(name)}>${inner}</${pascal(name)}>`;
  }
  return `<${pascal(name)}>${escapeXml(String(value))}</${pascal(name)}>`;
}

/** text/xml rendering of a DTO (or of an array of DTOs named `itemName`). */
export function dtoXml(rootName: string, value: unknown, itemName?: string): string {
  if (Array.isArray(value)) {
    const item = itemName ?? 'Item';
    return `${XML_DECLARATION}<ArrayOf${item}>${value.map((v) => dtoElement(item, v)).join('')}</ArrayOf${item}>`;
  }
  return XML_DECLARATION + dtoElement(rootName, value);
}

// ---- completion messages -------------------------------------------------------------------

export type CompletionResult = 'Success' | 'AlreadyExists' | 'DoesNotExist' | 'Fail';

/** The body of create/update/delete/replay answers: the original's completion message. */
export function completionMessage(result: CompletionResult, reason = ''): Record<string, unknown> {
  return { correlationId: randomUUID(), reason, result };
}

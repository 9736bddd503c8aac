/**
 * Atom entries for recorded events, in EventStoreDB's JSON shape (property order as emitted,
 * null members omitted), and the event DTO used by `event+json` and entry `content`.
 *
 * Embed levels: None (plain entry), Content (plus `content` for JSON events), Rich (event
 * fields first, no data), Body (plus data and metadata strings), PrettyBody (data re-indented),
 * TryHarder (also tries to read non-JSON data as JSON).
 */
import type { RecordedEvent } from '../../storage/event-db-types.js';
import { parseJsonSafely } from './json-depth.js';
import { isResolvedLink, parseLink, type FeedItem, type ResolvedLink } from './link-resolution.js';

export type EmbedLevel = 'none' | 'content' | 'rich' | 'body' | 'prettybody' | 'tryharder';

const EMBED_RANK: Record<EmbedLevel, number> = {
  none: 0,
  content: 1,
  rich: 2,
  body: 3,
  prettybody: 4,
  tryharder: 5,
};

/** `?embed=` is case-insensitive; `pretty` is accepted for PrettyBody; anything else is None. */
export function parseEmbed(value: unknown): EmbedLevel {
  if (typeof value !== 'string') return 'none';
  const lower = value.toLowerCase();
  if (lower === 'pretty') return 'prettybody';
  return lower in EMBED_RANK ? (lower as EmbedLevel) : 'none';
}

export const AUTHOR = { name: 'EventStore' } as const;
export const EMPTY_FEED_UPDATED = '0001-01-01T00:00:00Z';

/*
 * One-entry memos: a feed page formats the same stream name for every entry, and the events of
 * one write share their timestamp, so consecutive calls usually repeat the last argument.
 */
let lastDateMs = Number.NaN;
let lastDateText = '';
let lastStream: string | undefined;
let lastEscapedStream = '';

/** ISO 8601 in UTC with trailing fractional zeros trimmed (`2018-08-21T09:53:46.86Z`). */
export function formatAtomDate(epochMs: number): string {
  if (epochMs !== lastDateMs) {
    lastDateText = new Date(epochMs).toISOString().replace(/\.?0+Z$/, 'Z');
    lastDateMs = epochMs;
  }
  return lastDateText;
}

/** Uri.EscapeDataString: everything but RFC 3986 unreserved characters is percent-encoded. */
export function escapeStream(stream: string): string {
  if (stream !== lastStream) {
    lastEscapedStream = encodeURIComponent(stream).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
    lastStream = stream;
  }
  return lastEscapedStream;
}

export interface AtomLink {
  readonly uri: string;
  readonly relation: string;
}

export interface EventDto {
  readonly eventStreamId: string;
  readonly eventNumber: number;
  readonly eventType: string;
  readonly eventId: string;
  readonly data: unknown;
  readonly metadata: unknown;
}

function parseJsonOr(bytes: Buffer, fallback: string): unknown {
  const parsed = parseJsonSafely(bytes.toString('utf8'));
  return parsed === undefined ? fallback : parsed.value;
}

/** JSON events carry parsed data and metadata; other events carry strings. */
export function toEventDto(event: RecordedEvent): EventDto {
  const dataText = event.data.toString('utf8');
  const metadataText = event.metadata.toString('utf8');
  return {
    eventStreamId: event.stream,
    eventNumber: event.eventNumber,
    eventType: event.eventType,
    eventId: event.eventId,
    data: event.isJson && dataText !== '' ? parseJsonOr(event.data, dataText) : dataText,
    metadata:
      event.isJson && metadataText !== ''
        ? parseJsonOr(event.metadata, metadataText)
        : metadataText,
  };
}

/** `GET /streams/{s}/{n}` with Accept: application/json: just the data, parsed when possible. */
export function eventDataAsJson(event: RecordedEvent): unknown {
  const text = event.data.toString('utf8');
  if (text === '') return '';
  return parseJsonOr(event.data, text);
}

export function eventUri(baseUrl: string, event: RecordedEvent): string {
  return `${baseUrl}/streams/${escapeStream(event.stream)}/${event.eventNumber}`;
}

export interface EntryOptions {
  readonly baseUrl: string;
  readonly embed: EmbedLevel;
  /** Single-event reads always carry `content` for JSON events. */
  readonly singleEntry: boolean;
}

/**
 * An event's entry. A resolved link (Convert.ToEntry with a link) is titled with and points at
 * its target, is dated by the link, has summary `$>` and no `content`; with a rich embed its
 * event fields are the target's, with `linkMetaData` and the link's position.
 */
export function toEntry(item: FeedItem, options: EntryOptions): Record<string, unknown> {
  if (isResolvedLink(item)) return toLinkEntry(item, options);
  const event = item;
  const uri = eventUri(options.baseUrl, event);
  const rank = EMBED_RANK[options.embed];
  const entry: Record<string, unknown> =
    rank >= EMBED_RANK.rich ? toRichFields(event, options.embed) : {};
  entry.title = `${event.eventNumber}@${event.stream}`;
  entry.id = uri;
  entry.updated = formatAtomDate(event.createdMs);
  entry.author = AUTHOR;
  entry.summary = event.eventType;
  if ((options.singleEntry || options.embed === 'content') && event.isJson) {
    entry.content = toEventDto(event);
  }
  entry.links = [
    { uri, relation: 'edit' },
    { uri, relation: 'alternate' },
  ] satisfies AtomLink[];
  return entry;
}

function toLinkEntry(item: ResolvedLink, options: EntryOptions): Record<string, unknown> {
  const { link, target } = item;
  const location = parseLink(link.data);
  if (location === undefined) return toEntry(link, options);
  const uri = `${options.baseUrl}/streams/${escapeStream(location.stream)}/${location.eventNumber}`;
  const entry: Record<string, unknown> =
    target !== undefined && EMBED_RANK[options.embed] >= EMBED_RANK.rich ? toRichFields(target, options.embed, link) : {};
  entry.title = `${location.eventNumber}@${location.stream}`;
  entry.id = uri;
  entry.updated = formatAtomDate(link.createdMs);
  entry.author = AUTHOR;
  entry.summary = link.eventType;
  entry.links = [
    { uri, relation: 'edit' },
    { uri, relation: 'alternate' },
  ] satisfies AtomLink[];
  return entry;
}

function prettyJson(text: string): string | undefined {
  const parsed = parseJsonSafely(text);
  return parsed === undefined ? undefined : JSON.stringify(parsed.value, null, 2);
}

function toRichFields(event: RecordedEvent, embed: EmbedLevel, link?: RecordedEvent): Record<string, unknown> {
  const rank = EMBED_RANK[embed];
  const fields: Record<string, unknown> = {
    eventId: event.eventId,
    eventType: event.eventType,
    eventNumber: event.eventNumber,
  };
  let isJson = event.isJson;
  if (rank >= EMBED_RANK.body) {
    const text = event.data.toString('utf8');
    if (isJson) {
      fields.data = rank >= EMBED_RANK.prettybody ? (prettyJson(text) ?? text) : text;
    } else if (rank >= EMBED_RANK.tryharder) {
      const pretty = prettyJson(text);
      fields.data = pretty ?? text;
      isJson = pretty !== undefined;
    }
    const metadata = event.metadata.toString('utf8');
    if (metadata !== '') fields.metaData = metadata;
    if (link !== undefined) {
      const linkMetadata = link.metadata.toString('utf8');
      fields.linkMetaData = rank >= EMBED_RANK.prettybody ? (prettyJson(linkMetadata) ?? linkMetadata) : linkMetadata;
    }
  }
  fields.streamId = event.stream;
  fields.isJson = isJson;
  fields.isMetaData = event.metadata.byteLength > 0;
  fields.isLinkMetaData = link !== undefined && rank >= EMBED_RANK.body && link.metadata.byteLength > 0;
  fields.positionEventNumber = (link ?? event).eventNumber;
  fields.positionStreamId = (link ?? event).stream;
  return fields;
}

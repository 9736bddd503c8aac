/**
 * XML renderings: Atom feeds and entries (application/atom+xml), the event DTO
 * (vnd.eventstore.event+xml) and event data as XML (text/xml), converting JSON to elements the
 * way Json.NET's XML converter does for the common shapes (objects, arrays, scalars).
 */
import type { RecordedEvent } from '../../storage/event-db-types.js';
import { toEventDto, type AtomLink } from './entry.js';

export const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
const ATOM_NS = 'http://www.w3.org/2005/Atom';

// Characters no XML 1.0 document may hold, not even as a character reference.
const NOT_XML_CHARACTER = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text as XML character data. Characters XML cannot carry (names are refused at the edge, but an
 * event type or a non-JSON body may hold them) become U+FFFD, so every document stays well-formed.
 */
export function escapeXml(text: string): string {
  return text
    .replace(NOT_XML_CHARACTER, '\ufffd')
    .replace(
      /[<>&"']/g,
      (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', "'": 'apos' }[c]};`,
    );
}

/** XML names cannot hold every JSON key; unsafe characters become `_`. */
function xmlName(key: string): string {
  const name = key.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z_]/.test(name) ? name : `_${name}`;
}

function element(name: string, inner: string): string {
  return inner === '' ? `<${name} />` : `<${name}>${inner}</${name}>`;
}

/** JSON value -> XML content of an element named `name` (arrays repeat the element). */
export function jsonToXml(name: string, value: unknown): string {
  if (Array.isArray(value)) return value.map((item) => jsonToXml(name, item)).join('');
  if (typeof value === 'object' && value !== null) {
    const inner = Object.entries(value)
      .map(([key, child]) => jsonToXml(xmlName(key), child))
      .join('');
    return element(name, inner);
  }
  if (value === null || value === undefined) return element(name, '');
  return element(name, escapeXml(String(value)));
}

/** text/xml and application/xml single-event reads: `<data>...</data>`. */
export function eventDataXml(event: RecordedEvent): string {
  const dto = toEventDto(event);
  return (
    XML_DECLARATION +
    (typeof dto.data === 'string'
      ? element('data', escapeXml(dto.data))
      : jsonToXml('data', dto.data))
  );
}

/** vnd.eventstore.event+xml */
export function eventDtoXml(event: RecordedEvent): string {
  return XML_DECLARATION + jsonToXml('event', toEventDto(event));
}

export function linksXml(links: readonly AtomLink[]): string {
  return links
    .map((link) => `<link href="${escapeXml(link.uri)}" rel="${escapeXml(link.relation)}" />`)
    .join('');
}

/** An entry's leading elements, alike in every Atom feed the node writes: title, id, updated, author, summary. */
export function entryHeadXml(entry: Record<string, unknown>): string {
  const text = (key: string): string => escapeXml(String(entry[key] ?? ''));
  return (
    `<title>${text('title')}</title><id>${text('id')}</id><updated>${text('updated')}</updated>` +
    '<author><name>EventStore</name></author>' +
    `<summary>${text('summary')}</summary>`
  );
}

function entryXml(entry: Record<string, unknown>): string {
  const content =
    entry.content === undefined
      ? ''
      : jsonToXml('content', entry.content).replace(
          /^<content>/,
          '<content type="application/vnd.eventstore.atom+json">',
        );
  return (
    '<entry>' +
    entryHeadXml(entry) +
    content +
    linksXml(entry.links as AtomLink[]) +
    '</entry>'
  );
}

/** A single Atom entry document (single-event reads with Accept: application/atom+xml). */
export function entryDocumentXml(entry: Record<string, unknown>): string {
  return XML_DECLARATION + entryXml(entry).replace(/^<entry>/, `<entry xmlns="${ATOM_NS}">`);
}

/** An Atom feed document rendered from the JSON feed model of feed.ts. */
export function feedXml(feed: Record<string, unknown>): string {
  return atomFeedXml(feed, entryXml);
}

/**
 * An Atom feed document of a feed model: its title, id, updated, author and links, then each
 * entry as `entryXml` renders it (a feed without links or entries has none).
 */
export function atomFeedXml(feed: Record<string, unknown>, entryXml: (entry: Record<string, unknown>) => string): string {
  const text = (key: string): string => escapeXml(String(feed[key] ?? ''));
  const entries = ((feed.entries as Record<string, unknown>[] | undefined) ?? []).map(entryXml).join('');
  return (
    XML_DECLARATION +
    `<feed xmlns="${ATOM_NS}">` +
    `<title>${text('title')}</title><id>${text('id')}</id><updated>${text('updated')}</updated>` +
    '<author><name>EventStore</name></author>' +
    linksXml((feed.links as AtomLink[] | undefined) ?? []) +
    entries +
    '</feed>'
  );
}

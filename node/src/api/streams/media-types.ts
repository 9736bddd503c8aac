/**
 * Media types of the AtomPub API and content negotiation, as EventStoreDB's codecs do it:
 * `?format=` wins; otherwise Accept entries are tried in q order (stable), and for each the
 * first codec of the route's list that matches is chosen; no Accept means the route's first
 * codec. Request bodies match by exact media type, and a charset, if given, must be UTF-8.
 */

export const MediaType = {
  Json: 'application/json',
  Xml: 'text/xml',
  ApplicationXml: 'application/xml',
  Atom: 'application/atom+xml',
  AtomJson: 'application/vnd.eventstore.atom+json',
  EventJson: 'application/vnd.eventstore.event+json',
  EventXml: 'application/vnd.eventstore.event+xml',
  EventsJson: 'application/vnd.eventstore.events+json',
  EventsXml: 'application/vnd.eventstore.events+xml',
  DescriptionDocJson: 'application/vnd.eventstore.streamdesc+json',
  /** Persistent-subscription (competing consumers) feeds. */
  CompetingXml: 'application/vnd.eventstore.competingatom+xml',
  CompetingJson: 'application/vnd.eventstore.competingatom+json',
  Raw: 'application/octet-stream',
  PlainText: 'text/plain',
} as const;

export type MediaTypeValue = (typeof MediaType)[keyof typeof MediaType];

/** Kurrent's twins of the vnd.eventstore types are accepted as aliases. */
function canonical(mediaType: string): string {
  return mediaType.replace(/^application\/vnd\.kurrent\./, 'application/vnd.eventstore.');
}

/** POST /streams/{s}/incoming/{guid}: no batch bodies (`AtomCodecsWithoutBatches`). */
export const INCOMING_CODECS: readonly MediaTypeValue[] = [
  MediaType.Atom,
  MediaType.AtomJson,
  MediaType.Xml,
  MediaType.ApplicationXml,
  MediaType.Json,
  MediaType.Raw,
];

/** Feed GETs: no Accept header selects the description document. */
export const FEED_CODECS: readonly MediaTypeValue[] = [
  MediaType.DescriptionDocJson,
  MediaType.Atom,
  MediaType.AtomJson,
  MediaType.Xml,
  MediaType.ApplicationXml,
  MediaType.Json,
  MediaType.EventXml,
  MediaType.EventJson,
  MediaType.EventsXml,
  MediaType.EventsJson,
];

/** POST /streams/{s} and /streams/{s}/metadata (EventStoreDB `AtomCodecs`): feed codecs and raw. */
export const WRITE_CODECS: readonly MediaTypeValue[] = [...FEED_CODECS, MediaType.Raw];

/** Single-event and metadata GETs: no Accept header selects the Atom XML entry. */
export const EVENT_CODECS: readonly MediaTypeValue[] = [
  MediaType.Atom,
  MediaType.AtomJson,
  MediaType.Xml,
  MediaType.ApplicationXml,
  MediaType.Json,
  MediaType.EventXml,
  MediaType.EventJson,
  MediaType.Raw,
];

const FORMAT_QUERY: Readonly<Record<string, string>> = {
  json: MediaType.Json,
  xml: MediaType.Xml,
  atom: MediaType.Atom,
  atomxj: MediaType.AtomJson,
  text: MediaType.PlainText,
};

export interface Negotiated {
  readonly mediaType: MediaTypeValue;
  /** True when the client stated no preference (no Accept, or only `*` wildcards). */
  readonly byDefault: boolean;
}

interface AcceptEntry {
  readonly type: string;
  readonly quality: number;
}

function parseAccept(header: string): AcceptEntry[] {
  const entries = header.split(',').map((part, position) => {
    const [type = '', ...params] = part.split(';').map((s) => s.trim());
    const q = params.find((p) => p.toLowerCase().startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return {
      type: canonical(type.toLowerCase()),
      quality: Number.isFinite(quality) ? quality : 0,
      position,
    };
  });
  return entries
    .filter((e) => e.type.length > 0 && e.quality > 0)
    .sort((a, b) => b.quality - a.quality || a.position - b.position);
}

function matches(pattern: string, mediaType: string): boolean {
  if (pattern === '*/*' || pattern === mediaType) return true;
  return pattern.endsWith('/*') && mediaType.startsWith(pattern.slice(0, -1));
}

/** Returns undefined when no codec of the route satisfies the request (406). */
export function negotiate(
  accept: string | undefined,
  format: string | undefined,
  codecs: readonly MediaTypeValue[],
): Negotiated | undefined {
  const first = codecs[0];
  if (first === undefined) return undefined;
  if (format !== undefined) {
    const wanted = FORMAT_QUERY[format.toLowerCase()];
    const codec = codecs.find((c) => c === wanted);
    return codec === undefined ? undefined : { mediaType: codec, byDefault: false };
  }
  const entries = parseAccept(accept ?? '');
  if (entries.length === 0) return { mediaType: first, byDefault: true };
  for (const entry of entries) {
    const codec = codecs.find((c) => matches(entry.type, c));
    if (codec !== undefined) return { mediaType: codec, byDefault: entry.type === '*/*' };
  }
  return undefined;
}

export type RequestContentType =
  { readonly kind: 'ok'; readonly mediaType: MediaTypeValue } | { readonly kind: 'unsupported' };

const UNSUPPORTED: RequestContentType = { kind: 'unsupported' };

/** Clients send few distinct Content-Type values; answers are remembered per codec list. */
const CONTENT_TYPE_CACHE_ENTRY_COUNT_MAX = 256;
const contentTypeCache = new WeakMap<readonly MediaTypeValue[], Map<string, RequestContentType>>();

/** Parses a request Content-Type against a route's codecs (exact match, UTF-8 charset only). */
export function parseRequestContentType(
  header: string | undefined,
  codecs: readonly MediaTypeValue[],
): RequestContentType {
  if (header === undefined) return UNSUPPORTED;
  let cache = contentTypeCache.get(codecs);
  if (cache === undefined) {
    cache = new Map();
    contentTypeCache.set(codecs, cache);
  }
  let parsed = cache.get(header);
  if (parsed === undefined) {
    parsed = parseContentType(header, codecs);
    if (cache.size >= CONTENT_TYPE_CACHE_ENTRY_COUNT_MAX) cache.clear();
    cache.set(header, parsed);
  }
  return parsed;
}

function parseContentType(header: string, codecs: readonly MediaTypeValue[]): RequestContentType {
  const [type = '', ...params] = header.split(';').map((s) => s.trim());
  const charset = params.find((p) => p.toLowerCase().startsWith('charset='));
  if (charset !== undefined && !/^charset="?utf-?8"?$/i.test(charset)) return UNSUPPORTED;
  const wanted = canonical(type.toLowerCase());
  const mediaType = codecs.find((c) => c === wanted);
  return mediaType === undefined ? UNSUPPORTED : { kind: 'ok', mediaType };
}

export function isXmlType(mediaType: string): boolean {
  return mediaType.endsWith('xml');
}

/** The Content-Type header value of a response in `mediaType`. */
export function contentTypeHeader(mediaType: string): string {
  return `${mediaType}; charset=utf-8`;
}

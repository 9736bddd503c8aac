/**
 * Stream metadata: parsing the JSON kept in `$$<stream>` and deciding which events it hides.
 * Pure functions; the engine applies them on every stream read.
 */
import { TOMBSTONE_EVENT_NUMBER, type StreamAcl, type StreamMetadata } from './event-db-types.js';
import { PrepareFlags } from './format/record.js';

export const METASTREAM_PREFIX = '$$';
export const METADATA_EVENT_TYPE = '$metadata';
export const TOMBSTONE_EVENT_TYPE = '$streamDeleted';
/** `$tb` value that marks a soft-deleted stream (EventStoreDB writes long.MaxValue). */
export const SOFT_DELETED_TRUNCATE_BEFORE = TOMBSTONE_EVENT_NUMBER;

export const EMPTY_METADATA: StreamMetadata = { raw: {} };

export function isMetastream(stream: string): boolean {
  return stream.startsWith(METASTREAM_PREFIX);
}

/**
 * Whether a prepare is a tombstone (hard delete of its stream): the StreamDelete flag, or the
 * tombstone event number. The writer's chunk summaries and accumulation must agree on this.
 */
export function isTombstonePrepare(flags: number, eventNumber: number): boolean {
  return (flags & PrepareFlags.StreamDelete) !== 0 || eventNumber === TOMBSTONE_EVENT_NUMBER;
}

export function metastreamOf(stream: string): string {
  return METASTREAM_PREFIX + stream;
}

export function originalStreamOf(metastream: string): string {
  return metastream.slice(METASTREAM_PREFIX.length);
}

function nonNegativeInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function roles(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return undefined;
}

function parseAcl(value: unknown): StreamAcl | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const acl: { -readonly [K in keyof StreamAcl]: StreamAcl[K] } = {};
  const r = roles(v['$r']); if (r) acl.r = r;
  const w = roles(v['$w']); if (w) acl.w = w;
  const d = roles(v['$d']); if (d) acl.d = d;
  const mr = roles(v['$mr']); if (mr) acl.mr = mr;
  const mw = roles(v['$mw']); if (mw) acl.mw = mw;
  return acl;
}

/** Parses metadata event data; anything that is not a JSON object yields empty metadata. */
export function parseStreamMetadata(data: Uint8Array): StreamMetadata {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return EMPTY_METADATA;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return EMPTY_METADATA;
  const r = raw as Record<string, unknown>;
  const meta: { -readonly [K in keyof StreamMetadata]: StreamMetadata[K] } = { raw: r };
  const maxAge = nonNegativeInt(r['$maxAge']); if (maxAge !== undefined && maxAge > 0) meta.maxAgeSeconds = maxAge;
  const maxCount = nonNegativeInt(r['$maxCount']); if (maxCount !== undefined && maxCount > 0) meta.maxCount = maxCount;
  const tb = nonNegativeInt(r['$tb']); if (tb !== undefined) meta.truncateBefore = Math.min(tb, SOFT_DELETED_TRUNCATE_BEFORE);
  const cc = nonNegativeInt(r['$cacheControl']); if (cc !== undefined) meta.cacheControlSeconds = cc;
  const acl = parseAcl(r['$acl']); if (acl) meta.acl = acl;
  return meta;
}

export function isSoftDeleted(meta: StreamMetadata): boolean {
  return meta.truncateBefore !== undefined && meta.truncateBefore >= SOFT_DELETED_TRUNCATE_BEFORE;
}

/**
 * The lowest event number still visible in a stream whose last event is `lastEventNumber`,
 * given `$tb` and `$maxCount` (`$maxAge` depends on each event's time and is checked per event).
 */
export function firstVisibleEventNumber(meta: StreamMetadata, lastEventNumber: number, isMeta: boolean): number {
  let first = 0;
  if (meta.truncateBefore !== undefined) first = Math.max(first, meta.truncateBefore);
  const maxCount = isMeta ? 1 : meta.maxCount;
  if (maxCount !== undefined) first = Math.max(first, lastEventNumber - maxCount + 1);
  return first;
}

export function isExpired(meta: StreamMetadata, createdMs: number, nowMs: number): boolean {
  return meta.maxAgeSeconds !== undefined && createdMs < nowMs - meta.maxAgeSeconds * 1000;
}

/**
 * The spec's "Stream metadata item" (body of `POST /streams/{s}/metadata` as plain JSON):
 * `{eventId, eventType, data: {maxAge, maxCount, truncateBefore, cacheControl, acl: {r, w, d,
 * mr, mw}}}`. Its fields are the spelled-out names of EventStoreDB's system metadata keys; this
 * module turns an item into the metadata the engine enforces (`$maxAge`, `$maxCount`, `$tb`,
 * `$cacheControl`, `$acl` with `$r`...). Other keys of `data` are user metadata, kept as given.
 * Pure.
 */
import { z } from 'zod';

import { isUuid } from '../../storage/format/binary.js';

const ITEM_KEYS: ReadonlySet<string> = new Set(['eventId', 'eventType', 'data']);

const positiveInteger = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const roles = z.union([z.string(), z.array(z.string())]);

const ItemDataSchema = z
  .object({
    maxAge: positiveInteger.optional(),
    maxCount: positiveInteger.optional(),
    truncateBefore: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    cacheControl: z
      .union([positiveInteger, z.string().regex(/^\d+$/).transform(Number)], {
        error: 'must be a number of seconds',
      })
      .optional(),
    acl: z
      .object({ r: roles, w: roles, d: roles, mr: roles, mw: roles })
      .partial()
      .strict()
      .optional(),
  })
  .loose();

const SYSTEM_KEYS = {
  maxAge: '$maxAge',
  maxCount: '$maxCount',
  truncateBefore: '$tb',
  cacheControl: '$cacheControl',
} as const;

/** True when `body` has the item's shape: only item keys at the top, `data` an object. */
export function isMetadataItem(body: Record<string, unknown>): boolean {
  const data = body['data'];
  return (
    typeof data === 'object' &&
    data !== null &&
    !Array.isArray(data) &&
    Object.keys(body).every((key) => ITEM_KEYS.has(key))
  );
}

export type MetadataItemResult =
  | { readonly kind: 'ok'; readonly metadata: Record<string, unknown>; readonly eventId: string | undefined }
  | { readonly kind: 'invalid'; readonly message: string };

/** The metadata an item stands for, or the first problem found, naming the field. */
export function metadataFromItem(item: Record<string, unknown>): MetadataItemResult {
  const eventId = item['eventId'];
  if (eventId !== undefined && (typeof eventId !== 'string' || !isUuid(eventId))) {
    return { kind: 'invalid', message: 'Invalid stream metadata: eventId must be a UUID.' };
  }
  const parsed = ItemDataSchema.safeParse(item['data']);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = ['data', ...(issue?.path ?? [])].join('.');
    return { kind: 'invalid', message: `Invalid stream metadata: ${field}: ${issue?.message ?? 'invalid'}.` };
  }
  const { acl, ...rest } = parsed.data;
  const metadata: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined) continue;
    const systemKey = (SYSTEM_KEYS as Record<string, string>)[key];
    metadata[systemKey ?? key] = value;
  }
  if (acl !== undefined) {
    const systemAcl: Record<string, unknown> = {};
    for (const [access, value] of Object.entries(acl)) systemAcl[`$${access}`] = value;
    metadata['$acl'] = systemAcl;
  }
  return { kind: 'ok', metadata, eventId: typeof eventId === 'string' ? eventId : undefined };
}

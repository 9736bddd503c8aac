/**
 * The query parameters of `POST /admin/scavenge`, parsed as EventStoreDB's AdminController
 * parses them: in the order startFromChunk, threads, threshold, throttlePercent, syncOnly; the
 * first bad value answers 400 with that parameter's message. Integers follow .NET `int.TryParse`
 * (optional sign, surrounding blanks, 32-bit range) and booleans `bool.TryParse` (true/false in
 * any case).
 *
 * `threads` above 4 is capped to 4 with a warning, as EventStoreDB's scavenger does, rather
 * than refused. `startFromChunk` is deprecated: checked for syntax, then ignored.
 */
import { z } from 'zod';

import type { ScavengeParams } from '../../storage/event-db-types.js';

/** Chunks executed in parallel at most (EventStoreDB `TFChunkScavenger.MaxThreadCount`). */
export const SCAVENGE_THREADS_MAX = 4;
const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

export const ScavengeParamMessage = {
  startFromChunk: 'startFromChunk must be a positive integer',
  threads: 'threads must be a 1 or above',
  threshold: 'threshold must be an integer',
  throttlePercent: 'throttlePercent must be between 1 and 100 inclusive',
  throttlePercentThreads: 'throttlePercent must be 100 for a multi-threaded scavenge',
  syncOnly: 'syncOnly must be a boolean',
} as const;

interface QueryParamDoc {
  readonly type: 'integer' | 'boolean';
  readonly description: string;
  readonly minimum?: number;
  readonly maximum?: number;
}

/**
 * One start parameter. On the wire it is text, and it stays text here so that every bad value
 * reaches `parseScavengeParams` and gets EventStoreDB's message rather than a generic one; a
 * repeated key is joined into one value, which then fails like any other bad value. The
 * metadata tells /openapi.json the type the text must hold.
 */
function queryParam(doc: QueryParamDoc) {
  const joinRepeated = (value: unknown): unknown =>
    Array.isArray(value) ? value.join(',') : value;
  return z.preprocess(joinRepeated, z.string().optional()).meta({ ...doc });
}

export const ScavengeStartQuerySchema = z.object({
  threads: queryParam({
    type: 'integer',
    minimum: 1,
    description: 'Default 1: chunks scavenged in parallel. Above 4 is capped to 4.',
  }),
  threshold: queryParam({
    type: 'integer',
    description:
      'Default 0: -1 scavenges every chunk, 0 every chunk with something to remove, ' +
      'above 0 only chunks whose weight exceeds it.',
  }),
  throttlePercent: queryParam({
    type: 'integer',
    minimum: 1,
    maximum: 100,
    description: 'Default 100 (full speed); must be 100 when threads is above 1.',
  }),
  syncOnly: queryParam({
    type: 'boolean',
    description:
      'Default false: when true, write no new scavenge point; run only if one exists that ' +
      'this node has not reached.',
  }),
  startFromChunk: queryParam({
    type: 'integer',
    minimum: 0,
    description: 'Deprecated and ignored (still checked to be a non-negative integer).',
  }),
  format: z
    .string()
    .optional()
    .describe('json, xml or text: overrides the Accept header. Default text/plain.'),
});

export type ScavengeStartQuery = z.infer<typeof ScavengeStartQuerySchema>;

export type ParsedScavengeParams =
  | {
      readonly kind: 'ok';
      readonly params: ScavengeParams;
      /** The threads value as requested, when it was above the maximum and got capped. */
      readonly threadsRequested: number | undefined;
      readonly startFromChunkGiven: boolean;
    }
  | { readonly kind: 'invalid'; readonly message: string };

export function parseScavengeParams(query: ScavengeStartQuery): ParsedScavengeParams {
  const invalid = (message: string): ParsedScavengeParams => ({ kind: 'invalid', message });
  const startFromChunk = parseInt32(query.startFromChunk, 0);
  if (startFromChunk === null || startFromChunk < 0) {
    return invalid(ScavengeParamMessage.startFromChunk);
  }
  const threads = parseInt32(query.threads, 1);
  if (threads === null || threads < 1) return invalid(ScavengeParamMessage.threads);
  const threshold = parseInt32(query.threshold, 0);
  if (threshold === null) return invalid(ScavengeParamMessage.threshold);
  const throttlePercent = parseInt32(query.throttlePercent, 100);
  if (throttlePercent === null || throttlePercent < 1 || throttlePercent > 100) {
    return invalid(ScavengeParamMessage.throttlePercent);
  }
  if (throttlePercent !== 100 && threads > 1) {
    return invalid(ScavengeParamMessage.throttlePercentThreads);
  }
  const syncOnly = parseBoolean(query.syncOnly, false);
  if (syncOnly === null) return invalid(ScavengeParamMessage.syncOnly);
  return {
    kind: 'ok',
    params: {
      threads: Math.min(threads, SCAVENGE_THREADS_MAX),
      threshold,
      throttlePercent,
      syncOnly,
    },
    threadsRequested: threads > SCAVENGE_THREADS_MAX ? threads : undefined,
    startFromChunkGiven: query.startFromChunk !== undefined,
  };
}

/** `absent` when not given; null when given but not a 32-bit integer. */
function parseInt32(value: string | undefined, absent: number): number | null {
  if (value === undefined) return absent;
  const text = value.trim();
  if (!/^[+-]?\d+$/.test(text)) return null;
  const parsed = Number(text);
  return parsed >= INT32_MIN && parsed <= INT32_MAX ? parsed : null;
}

/** `absent` when not given; null when given but neither true nor false. */
function parseBoolean(value: string | undefined, absent: boolean): boolean | null {
  if (value === undefined) return absent;
  const text = value.trim().toLowerCase();
  if (text === 'true') return true;
  if (text === 'false') return false;
  return null;
}

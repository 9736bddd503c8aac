/**
 * What both scavenge state implementations (SQLite and memory) agree on: the checks applied to
 * every value before it is stored, the JSON form of the checkpoint (parsed with zod, since it is
 * read back from a file), and the order of stream names.
 *
 * Stream names are ordered by Unicode code point, which is the byte order of their UTF-8 form
 * and therefore the order SQLite's BINARY collation gives. JavaScript's `<` compares UTF-16 code
 * units instead, which differs for names mixing astral characters with U+E000..U+FFFF, so the
 * memory implementation sorts with `compareStreamNames`.
 */
import { z } from 'zod';
import { assert } from '../../errors.js';
import type {
  MetastreamData,
  OriginalStreamData,
  ScavengeCheckpoint,
  ScavengePoint,
} from './scavenge-types.js';

/** Compares two stream names by code point (UTF-8 byte order): negative, zero or positive. */
export function compareStreamNames(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let unitIndex = 0; unitIndex < length; unitIndex++) {
    const unitA = a.charCodeAt(unitIndex);
    const unitB = b.charCodeAt(unitIndex);
    if (unitA !== unitB) return compareStreamNamesFixup(unitA) - compareStreamNamesFixup(unitB);
  }
  return a.length - b.length;
}

/**
 * Moves surrogates (astral code points) above U+E000..U+FFFF so that code-unit order becomes
 * code-point order at the first differing unit (the fix-up ICU uses for the same purpose).
 */
function compareStreamNamesFixup(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function isCountOrNull(value: number | null): boolean {
  return value === null || isCount(value);
}

/** What is wrong with an original stream's data, or undefined when it may be stored. */
export function originalProblem(data: OriginalStreamData): string | undefined {
  if (typeof data.stream !== 'string' || data.stream.length === 0) return 'stream name is empty';
  if (!isCount(data.discardPoint) || !isCount(data.maybeDiscardPoint)) {
    return 'discard points are not counts';
  }
  const last = data.lastEventNumber;
  if (!Number.isSafeInteger(last) || last < -1) return 'last event number is not -1 or more';
  if (!isCountOrNull(data.maxAgeSeconds) || !isCountOrNull(data.maxCount)) {
    return 'maxAge or maxCount is not a count';
  }
  if (!isCountOrNull(data.truncateBefore)) return 'truncateBefore is not a count';
  if (!['Active', 'Spent', 'Archived'].includes(data.status)) return 'status is unknown';
  return undefined;
}

export function assertOriginal(data: OriginalStreamData): void {
  const problem = originalProblem(data);
  assert(problem === undefined, `original stream data: ${problem ?? ''}`);
}

/** What is wrong with a metastream's data, or undefined when it may be stored. */
export function metaProblem(data: MetastreamData): string | undefined {
  const name = data.metastream;
  if (typeof name !== 'string' || !name.startsWith('$$') || name.length <= 2) {
    return 'metastream name is not $$x';
  }
  if (!isCount(data.discardPoint)) return 'discard point is not a count';
  if (!isCountOrNull(data.lastRecordChunk)) return 'last record chunk is not a chunk number';
  return undefined;
}

export function assertMeta(data: MetastreamData): void {
  const problem = metaProblem(data);
  assert(problem === undefined, `metastream data: ${problem ?? ''}`);
}

export function assertChunkNumber(logicalChunkNumber: number): void {
  assert(isCount(logicalChunkNumber), 'logical chunk number is a non-negative integer');
}

export function assertWeight(weight: number): void {
  assert(Number.isFinite(weight), 'chunk weight is finite');
}

export function assertTimeRange(minMs: number, maxMs: number): void {
  assert(Number.isSafeInteger(minMs) && Number.isSafeInteger(maxMs), 'time range is integer ms');
  assert(minMs <= maxMs, 'time range min <= max');
}

export function assertLimit(limit: number): void {
  assert(Number.isSafeInteger(limit) && limit > 0, 'page limit is a positive integer');
}

/** Hashes are 64-bit: accepted as signed or unsigned, normalised to unsigned. */
export function normaliseStreamHash(hash: bigint): bigint {
  assert(hash >= -(1n << 63n) && hash < 1n << 64n, 'stream hash fits in 64 bits');
  return BigInt.asUintN(64, hash);
}

const ScavengePointSchema = z
  .object({
    number: z.number().int().min(0),
    position: z.number().int().min(0),
    effectiveNowMs: z.number().int(),
    threshold: z.number(),
  })
  .strict();

const ChunkDoneSchema = z.number().int().min(0).nullable();

const ScavengeCheckpointSchema = z.discriminatedUnion('stage', [
  checkpointSchema('Accumulating', { doneLogicalChunkNumber: ChunkDoneSchema }),
  checkpointSchema('Calculating', { doneStream: z.string().nullable() }),
  checkpointSchema('ExecutingChunks', { doneLogicalChunkNumber: ChunkDoneSchema }),
  checkpointSchema('MergingChunks', {}),
  checkpointSchema('ExecutingIndex', {}),
  checkpointSchema('Cleaning', {}),
  checkpointSchema('Done', {}),
]);

function checkpointSchema<S extends string, E extends z.ZodRawShape>(stage: S, extra: E) {
  const shape = { stage: z.literal(stage), scavengePoint: ScavengePointSchema, ...extra };
  return z.object(shape).strict();
}

/** Checks a checkpoint before it is stored (the same schema that parses it back). */
export function encodeCheckpoint(checkpoint: ScavengeCheckpoint): string {
  const parsed = ScavengeCheckpointSchema.safeParse(checkpoint);
  assert(parsed.success, `scavenge checkpoint is well formed: ${parsed.error?.message ?? ''}`);
  const json = JSON.stringify(parsed.data);
  assert(json.length > 0, 'checkpoint JSON is not empty');
  return json;
}

/** Parses a stored checkpoint; returns an error message instead of throwing. */
export function decodeCheckpoint(json: string): ScavengeCheckpoint | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err: unknown) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
  const parsed = ScavengeCheckpointSchema.safeParse(value);
  return parsed.success ? parsed.data : { error: parsed.error.message };
}

/** Transactions are synchronous: a callback returning a promise would commit before its work. */
export function assertSynchronousResult(result: unknown): void {
  const isObject = typeof result === 'object' && result !== null;
  const thenable = isObject && typeof (result as { then?: unknown }).then === 'function';
  assert(!thenable, 'transaction callback is synchronous');
}

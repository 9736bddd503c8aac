/**
 * Execution: rewrites every chunk before the scavenge point whose weight meets the threshold
 * without its removable records (as the next file version, swapped in atomically), merges small
 * neighbouring chunks, and finally drops index entries whose records are gone.
 */
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { RecordType } from '../format/record.js';
import { TOMBSTONE_EVENT_NUMBER } from '../event-db-types.js';
import { isMetastream } from '../stream-metadata.js';
import type { Chunk } from '../chunk/chunk.js';
import { forEachFrame } from './chunk-frames.js';
import {
  StreamNameMemo, commitTransactionPositionAt, frameRecordType, prepareEventNumber, prepareTimestampMs, prepareTransactionPosition,
} from './record-fields.js';
import type { BlockFile } from '../../platform/block-file.js';
import type { DirectFile } from '../../platform/direct-file.js';
import type { ChunkStorage } from '../chunk/chunk-storage.js';
import { FatalError, assert } from '../../errors.js';
import { ChunkRewritePool } from './chunk-rewrite-pool.js';
import { GroupChunkWriter } from './group-chunk-writer.js';
import { KEPT_POSITIONS_BUDGET_BYTES, KeptPositions, type PendingCopy } from './kept-positions.js';
import type { PreparedRemoval } from '../index/stream-index-port.js';
import { crc32Combine } from './crc32-combine.js';
import { POSMAP_ENTRY_BYTES } from '../chunk/position-map.js';
import { CHUNK_FOOTER_SIZE_BYTES, CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import { ScavengeStopped, type ScavengeAccess, type ScavengePacer } from './scavenge-access.js';
import type { MetastreamData, OriginalStreamData, ScavengeListener, ScavengePoint, ScavengeState } from './scavenge-types.js';

/** The decisions execution needs, loaded once per run. */
export interface DiscardRules {
  readonly originals: Map<string, OriginalStreamData>;
  readonly metas: Map<string, MetastreamData>;
  readonly effectiveNowMs: number;
}

export function loadDiscardRules(state: ScavengeState, point: ScavengePoint): DiscardRules {
  const originals = new Map<string, OriginalStreamData>();
  for (const o of state.allOriginalsWithDiscards()) originals.set(o.stream, o);
  const metas = new Map<string, MetastreamData>();
  for (const m of state.allMetas()) metas.set(m.metastream, m);
  return { originals, metas, effectiveNowMs: point.effectiveNowMs };
}

/** Whether an event record is removed by this scavenge. Pure. */
export function isDiscarded(rules: DiscardRules, stream: string, eventNumber: number, timestampMs: number): boolean {
  if (isMetastream(stream)) return isDiscardedFromMetastream(rules.metas.get(stream), eventNumber);
  return isDiscardedFromOriginal(rules.originals.get(stream), eventNumber, timestampMs, rules.effectiveNowMs);
}

function isDiscardedFromMetastream(m: MetastreamData | undefined, eventNumber: number): boolean {
  return m !== undefined && (m.isTombstoned || eventNumber < m.discardPoint);
}

/** `timestampMs` matters only for streams with $maxAge. */
function isDiscardedFromOriginal(o: OriginalStreamData | undefined, eventNumber: number, timestampMs: number, effectiveNowMs: number): boolean {
  if (!o) return false;
  if (o.isTombstoned) return eventNumber !== TOMBSTONE_EVENT_NUMBER;
  if (eventNumber >= o.lastEventNumber) return false;
  if (eventNumber < o.discardPoint) return true;
  if (eventNumber < o.maybeDiscardPoint && o.maxAgeSeconds !== null) {
    return timestampMs < effectiveNowMs - o.maxAgeSeconds * 1000;
  }
  return false;
}

/**
 * The per-record decisions of one chunk rewrite, read straight from the frames: the stream's
 * rules are looked up once per run of records of the same stream, and a commit is dropped when
 * every prepare of its write was (same decisions as `isDiscarded`).
 */
class ChunkFilter {
  private readonly memo = new StreamNameMemo();
  private isMeta = false;
  private meta: MetastreamData | undefined;
  private original: OriginalStreamData | undefined;
  private readonly keptPerTransaction = new Map<number, number>();
  private currentTransaction = -1;
  private currentKept = 0;
  kept = 0;
  removed = 0;

  constructor(private readonly rules: DiscardRules) {}

  keeps(block: Buffer, frame: number): boolean {
    const type = frameRecordType(block, frame);
    if (type === RecordType.Prepare) {
      if (!this.memo.same(block, frame)) {
        const stream = this.memo.remember(block, frame);
        this.isMeta = isMetastream(stream);
        this.meta = this.isMeta ? this.rules.metas.get(stream) : undefined;
        this.original = this.isMeta ? undefined : this.rules.originals.get(stream);
      }
      const transaction = prepareTransactionPosition(block, frame);
      if (transaction !== this.currentTransaction) {
        if (this.currentTransaction >= 0) this.keptPerTransaction.set(this.currentTransaction, this.currentKept);
        this.currentTransaction = transaction;
        this.currentKept = this.keptPerTransaction.get(transaction) ?? 0;
      }
      const eventNumber = prepareEventNumber(block, frame);
      const drop = this.isMeta
        ? isDiscardedFromMetastream(this.meta, eventNumber)
        : isDiscardedFromOriginal(this.original, eventNumber, this.original?.maxAgeSeconds != null ? prepareTimestampMs(block, frame) : 0, this.rules.effectiveNowMs);
      if (drop) { this.removed++; return false; }
      this.currentKept++;
    } else if (type === RecordType.Commit) {
      const transaction = commitTransactionPositionAt(block, frame);
      const keptOfWrite = transaction === this.currentTransaction ? this.currentKept : this.keptPerTransaction.get(transaction);
      if (keptOfWrite === 0) return false; // its whole write is gone
    }
    this.kept++;
    return true;
  }
}

export function chunkWeight(state: ScavengeState, chunk: Chunk): number {
  let weight = 0;
  for (let n = chunk.header.chunkStartNumber; n <= chunk.header.chunkEndNumber; n++) weight += state.getChunkWeight(n);
  return weight;
}

export function meetsThreshold(weight: number, threshold: number): boolean {
  if (threshold < 0) return true;
  if (threshold === 0) return weight > 0;
  return weight >= threshold;
}

/** Chunks wholly before the scavenge point, completed, in log order. */
export function chunksInScope(access: ScavengeAccess, point: ScavengePoint): Chunk[] {
  return access.registry.allChunks().filter((c) => c.isCompleted && c.endPosition <= point.position);
}

export interface ExecutionTotals {
  spaceSavedBytes: number;
  executedChunks: number;
  maxChunkScavenged: number;
}

/**
 * Called (threads = 1) once every chunk has been read and filtered, while the last copies may
 * still be on their way to disk: `pending` are the copies not yet swapped in.
 */
export type OnAllFiltered = (pending: PendingCopy[]) => void;

export async function executeChunks(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint,
  run: { scavengeId: string; threads: number; doneLogicalChunkNumber: number | null; listener: ScavengeListener; onAllFiltered?: OnAllFiltered | undefined },
  pacer: ScavengePacer, totals: ExecutionTotals,
): Promise<void> {
  const rules = loadDiscardRules(state, point);
  const pool = run.threads > 1 ? await ChunkRewritePool.start(run.threads, rules, access) : undefined;
  try {
    await executeChunksWith(access, state, point, { ...run, pool }, pacer, totals, rules);
  } finally {
    await pool?.close();
  }
}

type ExecutionRun = {
  scavengeId: string; threads: number; doneLogicalChunkNumber: number | null; listener: ScavengeListener; pool: ChunkRewritePool | undefined;
  onAllFiltered?: OnAllFiltered | undefined;
};

async function executeChunksWith(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, run: ExecutionRun,
  pacer: ScavengePacer, totals: ExecutionTotals, rules: DiscardRules,
): Promise<void> {
  const todo = chunksInScope(access, point).filter((c) => run.doneLogicalChunkNumber === null || c.header.chunkStartNumber > run.doneLogicalChunkNumber);
  const done = new Set<number>();
  const markDone = (chunk: Chunk): void => {
    done.add(chunk.header.chunkStartNumber);
    // The checkpoint only moves over a contiguous prefix of finished chunks.
    let contiguous = run.doneLogicalChunkNumber;
    for (const c of todo) {
      if (!done.has(c.header.chunkStartNumber)) break;
      contiguous = c.header.chunkEndNumber;
    }
    if (contiguous !== null) {
      const doneLogicalChunkNumber = contiguous;
      state.transaction(() => state.setCheckpoint({ stage: 'ExecutingChunks', scavengePoint: point, doneLogicalChunkNumber }));
    }
  };
  const pool = run.pool;
  if (!pool) {
    await executeInThread(access, state, point, todo, rules, run, pacer, totals, markDone);
    return;
  }
  // The chunks to rewrite, in ranges of consecutive ones: each worker rewrites a range the way
  // one thread does, merging neighbours as it goes (only a merge across two ranges is left to
  // the merge stage). Ranges are short enough to spread the work and keep a stop prompt.
  const weights = new Map<Chunk, number>();
  const executable: Chunk[] = [];
  for (const chunk of todo) {
    const weight = chunkWeight(state, chunk);
    weights.set(chunk, weight);
    if (meetsThreshold(weight, point.threshold)) executable.push(chunk);
  }
  const ranges = consecutiveRanges(executable, Math.min(RANGE_CHUNKS_MAX, Math.max(1, Math.ceil(executable.length / pool.capacity))));
  for (const chunk of todo) {
    if (executable.includes(chunk)) continue;
    logSkipped(access, point, chunk, weights.get(chunk)!);
    markDone(chunk);
  }
  // A worker gets its next range as soon as it is done with one; the swaps of what it wrote go
  // on meanwhile, one after another (they are quick, but would otherwise leave it idle).
  let swaps: Promise<void> = Promise.resolve();
  const swapIn = async (range: readonly Chunk[], groups: Awaited<ReturnType<ChunkRewritePool['rewriteRange']>>, startedMs: number): Promise<void> => {
    const byStart = new Map(range.map((c) => [c.header.chunkStartNumber, c]));
    for (const g of groups) {
      const members: GroupMember[] = g.members.map((m) => {
        const chunk = byStart.get(m.chunkStartNumber);
        assert(chunk !== undefined, `a worker rewrote chunk ${m.chunkStartNumber}, which it was not given`);
        return {
          chunk, weight: weights.get(chunk)!, startedMs, keptBytes: m.keptBytes, kept: m.kept, removed: m.removed,
          thread: { threadId: g.threadId, startedAtMs: m.startedAtMs, finishedAtMs: m.finishedAtMs },
        };
      });
      await completeGroup(access, state, { tempName: g.tempName, members }, run, totals);
      for (const m of members) markDone(m.chunk);
    }
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ranges.length) {
      const range = ranges[next++]!;
      const startedMs = performance.now();
      const groups = await pool.rewriteRange(range, !access.disableMerging);
      swaps = swaps.then(() => swapIn(range, groups, startedMs));
      swaps.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
      await pacer.afterUnit();
    }
  };
  try {
    await Promise.all(Array.from({ length: pool.capacity }, () => worker()));
  } finally {
    // What was written is swapped in even when the run stops (or fails elsewhere); a failing
    // swap is the error that counts.
    await swaps;
  }
}

/** Chunks a worker rewrites in one task at most (256 MiB chunks: about 1 GB). */
const RANGE_CHUNKS_MAX = 4;

/** `chunks` (in log order) cut into runs of consecutive chunks of at most `max` each. */
export function consecutiveRanges(chunks: readonly Chunk[], max: number): Chunk[][] {
  const ranges: Chunk[][] = [];
  let current: Chunk[] = [];
  for (const c of chunks) {
    const previous = current[current.length - 1];
    if (current.length > 0 && (current.length >= max || previous!.header.chunkEndNumber + 1 !== c.header.chunkStartNumber)) {
      ranges.push(current);
      current = [];
    }
    current.push(c);
  }
  if (current.length > 0) ranges.push(current);
  return ranges;
}

/**
 * One thread, two stages in a pipeline: while a copy is being made durable (fsync), swapped in
 * and checkpointed, the next chunk is already read and filtered. Swaps and checkpoints stay in
 * chunk order, and a run that stops or fails waits for the copy in its second stage.
 *
 * Unless merging is disabled, neighbouring executed chunks whose kept data fits one chunk are
 * written into one file covering their range (a group), so the merge stage does not have to
 * read and write them again. Whether the next chunk joins the open group is predicted from the
 * share of data the previous chunk kept; when its data turns out not to fit after all, what it
 * added is taken back, the group is closed without it, and the chunk is read again into a new
 * group. A group is swapped in once, when it is closed; until then its chunks are not done (a
 * crash or a failure redoes them). A stop closes the open group with the chunks it completed.
 */
async function executeInThread(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, todo: readonly Chunk[], rules: DiscardRules,
  run: ExecutionRun, pacer: ScavengePacer, totals: ExecutionTotals, markDone: (chunk: Chunk) => void,
): Promise<void> {
  const merging = !access.disableMerging;
  let previous: Promise<void> = Promise.resolve();
  let group: OpenGroup | undefined;
  /** Closed groups not yet swapped in. */
  const unswapped = new Set<OpenGroup>();
  let keptShare = 1;
  const close = (): void => {
    const g = group;
    group = undefined;
    if (!g) return;
    if (g.members.length === 0) {
      const dropped = discard(g);
      const before = previous;
      previous = (async () => { await before; await dropped; })();
      previous.catch(() => {});
      return;
    }
    const last = g.members[g.members.length - 1]!.chunk;
    const durable = (async () => {
      try {
        await g.writer.finish(last.header.chunkEndNumber, last.logicalDataEndPosition - g.members[0]!.chunk.startPosition);
      } finally {
        await g.writer.settle();
        await g.file.close();
      }
    })();
    durable.catch(() => {}); // awaited below
    const before = previous;
    unswapped.add(g);
    previous = (async () => {
      await before;
      await durable;
      await completeGroup(access, state, g, run, totals);
      unswapped.delete(g);
      for (const m of g.members) markDone(m.chunk);
    })();
    previous.catch(() => {}); // awaited below or by the next group
  };
  const discard = async (g: OpenGroup): Promise<void> => {
    await g.writer.settle();
    await g.file.close();
    await access.registry.storage.remove(g.tempName);
  };
  const open = (chunk: Chunk): OpenGroup => {
    const tempName = `${randomUUID()}.scavenge.tmp`;
    const { file, writer } = createCopy(access.registry.storage, tempName, access.chunkSizeBytes, chunk.header.chunkStartNumber);
    return { tempName, file, writer, members: [] };
  };
  try {
    for (const chunk of todo) {
      const startedMs = performance.now();
      const weight = chunkWeight(state, chunk);
      if (!meetsThreshold(weight, point.threshold)) {
        close();
        await previous;
        logSkipped(access, point, chunk, weight);
        markDone(chunk);
      } else {
        if (group && !joinsGroup(group, chunk, merging, keptShare, access.chunkSizeBytes)) close();
        group ??= open(chunk);
        const added = await filterIntoGroup(chunk, group, rules, access.chunkSizeBytes, () => pacer.yieldNow(), () => {
          access.log.debug({ chunkStartNumber: chunk.header.chunkStartNumber, chunkEndNumber: chunk.header.chunkEndNumber },
            'chunk does not fit the chunk being merged: it is read again into a new one');
          close();
          return (group = open(chunk));
        });
        added.group.members.push({ chunk, weight, startedMs, keptBytes: added.keptBytes, kept: added.kept, removed: added.removed });
        keptShare = added.keptShare;
        if (!merging) close();
      }
      // Throttled, the copies closed so far are made durable and swapped in before the rest: that
      // I/O is work the rest is measured against (pipelined, it went on during the rests and the
      // run took well under twice as long at 50%).
      if (pacer.throttled) await previous;
      await pacer.afterUnit();
    }
  } catch (err: unknown) {
    if (err instanceof ScavengeStopped) {
      close(); // with the chunks it completed: their work is kept
    } else if (group) {
      const g = group;
      group = undefined;
      await discard(g).catch(() => {});
    }
    // Let the copy in the second stage finish first; a fatal error there wins.
    const earlier = await previous.then(() => undefined, (e: unknown) => e);
    throw earlier instanceof FatalError ? earlier : err;
  }
  close();
  run.onAllFiltered?.([...unswapped].map((g) => ({
    chunkStartNumber: g.members[0]!.chunk.header.chunkStartNumber,
    chunkEndNumber: g.members[g.members.length - 1]!.chunk.header.chunkEndNumber,
    offsets: g.writer.keptLogicalOffsets(),
  })));
  await previous;
}

/**
 * A new scavenged chunk file `tempName` in `storage` and its writer, which writes it direct
 * (bypassing the page cache) where the filesystem allows.
 */
function createCopy(storage: ChunkStorage, tempName: string, chunkSizeBytes: number, chunkStartNumber: number): { file: BlockFile; writer: GroupChunkWriter } {
  const file = storage.create(tempName);
  let direct: DirectFile | undefined;
  try {
    direct = storage.openDirect(tempName);
  } catch (err: unknown) {
    void file.close().catch(() => {});
    throw err;
  }
  return { file, writer: new GroupChunkWriter(file, chunkSizeBytes, chunkStartNumber, undefined, direct) };
}

/** Thrown (and caught) inside a chunk walk when the open group cannot take the chunk's data. */
const OVERFLOW = new Error('the group is full');

/** What the grouping steps below need of a group being written (one thread, or a worker's range). */
interface GroupInProgress {
  readonly writer: GroupChunkWriter;
  readonly members: ReadonlyArray<{ readonly chunk: Chunk; readonly keptBytes: number }>;
}

/**
 * Whether `chunk` goes into the open group `g`: merging is on, it is the next chunk, and its kept
 * data, predicted from the share the previous chunk kept, fits one chunk.
 */
function joinsGroup(g: GroupInProgress, chunk: Chunk, merging: boolean, keptShare: number, chunkSizeBytes: number): boolean {
  return merging && g.members.at(-1)!.chunk.header.chunkEndNumber + 1 === chunk.header.chunkStartNumber
    && g.writer.dataSizeBytes + chunk.physicalDataSizeBytes * keptShare <= chunkSizeBytes;
}

/**
 * Reads and filters `chunk` into group `g`. When its data turns out not to fit (the group
 * already has members and grows past one chunk), what it added is taken back and it is read
 * again into the group `reopen` starts (after closing `g`). A stop takes back what it added.
 * Returns the group it went into, its counts, the bytes it kept and their share of its data.
 */
async function filterIntoGroup<G extends GroupInProgress>(
  chunk: Chunk, g: G, rules: DiscardRules, chunkSizeBytes: number, between: () => Promise<void>, reopen: () => G | Promise<G>,
): Promise<{ group: G; kept: number; removed: number; keptBytes: number; keptShare: number }> {
  const overflows = (target: G): boolean => target.members.length > 0 && target.writer.dataSizeBytes > chunkSizeBytes;
  const fill = async (target: G, mayOverflow: boolean): Promise<{ kept: number; removed: number } | undefined> => {
    await target.writer.mark();
    return filterChunk(chunk, target.writer, rules, async () => {
      await target.writer.drain();
      if (mayOverflow && overflows(target)) throw OVERFLOW;
      await between();
    }).catch(async (err: unknown) => {
      if (err === OVERFLOW) return undefined;
      if (err instanceof ScavengeStopped) await target.writer.rollback();
      throw err;
    });
  };
  let group = g;
  let counts = await fill(group, true);
  if (counts === undefined || overflows(group)) {
    await group.writer.rollback();
    group = await reopen();
    counts = await fill(group, false);
    assert(counts !== undefined, 'a chunk read into a new group always fits');
  }
  const keptBytes = group.writer.dataSizeBytes - group.members.reduce((n, m) => n + m.keptBytes, 0);
  const keptShare = chunk.physicalDataSizeBytes > 0 ? keptBytes / chunk.physicalDataSizeBytes : 1;
  return { group, ...counts, keptBytes, keptShare };
}

interface GroupMember {
  chunk: Chunk; weight: number; startedMs: number; keptBytes: number; kept: number; removed: number;
  /** Set when a worker thread rewrote it: which, and when (epoch ms). */
  thread?: { threadId: number; startedAtMs: number; finishedAtMs: number };
}
interface OpenGroup { tempName: string; file: BlockFile; writer: GroupChunkWriter; members: GroupMember[] }

/**
 * Swaps a closed, durable group in; then per chunk: resets its weights, logs and reports it
 * (the space it saved: its old file less its kept data); for 2+ chunks also the merge (the rest
 * of the space saved).
 */
async function completeGroup(
  access: ScavengeAccess, state: ScavengeState, g: { tempName: string; members: readonly GroupMember[] },
  run: { scavengeId: string; listener: ScavengeListener }, totals: ExecutionTotals,
): Promise<void> {
  const oldSizes = g.members.map((m) => m.chunk.file.sizeBytes());
  const swapped = await access.registry.swapIn(g.tempName);
  const spaceSavedBytes = swapped.oldSizeBytes - swapped.newSizeBytes;
  const first = g.members[0]!.chunk;
  const last = g.members[g.members.length - 1]!.chunk;
  state.transaction(() => {
    for (let n = first.header.chunkStartNumber; n <= last.header.chunkEndNumber; n++) state.resetChunkWeight(n);
  });
  totals.spaceSavedBytes += spaceSavedBytes;
  totals.maxChunkScavenged = Math.max(totals.maxChunkScavenged, last.header.chunkEndNumber);
  let perChunkSaved = 0;
  for (const [i, m] of g.members.entries()) {
    const range = { chunkStartNumber: m.chunk.header.chunkStartNumber, chunkEndNumber: m.chunk.header.chunkEndNumber };
    // As if the chunk had been rewritten on its own; the merge saves the rest (headers, footers).
    const saved = g.members.length === 1 ? spaceSavedBytes : oldSizes[i]! - (CHUNK_HEADER_SIZE_BYTES + m.keptBytes + m.kept * POSMAP_ENTRY_BYTES + CHUNK_FOOTER_SIZE_BYTES);
    perChunkSaved += saved;
    totals.executedChunks += 1;
    const timeTakenMs = performance.now() - m.startedMs;
    const thread = m.thread ? { threadId: m.thread.threadId, rewriteStartedAtMs: m.thread.startedAtMs, rewriteFinishedAtMs: m.thread.finishedAtMs } : {};
    access.log.info({ ...range, weight: m.weight, keptRecords: m.kept, removedRecords: m.removed, spaceSavedBytes: saved, timeTakenMs: Math.round(timeTakenMs), ...thread },
      `scavenged chunk ${range.chunkStartNumber}-${range.chunkEndNumber} with weight ${m.weight}`);
    await run.listener.chunkExecuted({ scavengeId: run.scavengeId, ...range, timeTakenMs, spaceSavedBytes: saved, wasScavenged: true, weight: m.weight, errorMessage: '' });
  }
  if (g.members.length > 1) {
    const range = { chunkStartNumber: first.header.chunkStartNumber, chunkEndNumber: last.header.chunkEndNumber };
    const mergeSaved = spaceSavedBytes - perChunkSaved;
    const timeTakenMs = performance.now() - g.members[0]!.startedMs;
    access.log.info({ ...range, chunkCount: g.members.length, spaceSavedBytes: mergeSaved, timeTakenMs: Math.round(timeTakenMs) }, 'chunks merged');
    await run.listener.chunksMerged({ scavengeId: run.scavengeId, ...range, timeTakenMs, spaceSavedBytes: mergeSaved, wasMerged: true, errorMessage: '' });
  }
}

function logSkipped(access: ScavengeAccess, point: ScavengePoint, chunk: Chunk, weight: number): void {
  const range = { chunkStartNumber: chunk.header.chunkStartNumber, chunkEndNumber: chunk.header.chunkEndNumber };
  access.log.info({ ...range, weight, threshold: point.threshold }, `skipping chunk ${range.chunkStartNumber}-${range.chunkEndNumber} with weight ${weight}`);
}

/** One file a worker wrote (rewriteChunkRange): the consecutive chunks it covers, in order. */
export interface RangeGroup {
  readonly tempName: string;
  readonly members: ReadonlyArray<{
    readonly chunkStartNumber: number; readonly kept: number; readonly removed: number; readonly keptBytes: number;
    readonly startedAtMs: number; readonly finishedAtMs: number;
  }>;
}

/**
 * Rewrites consecutive chunks the way single-thread execution does (a worker thread's task,
 * threads > 1): neighbours whose kept data fits one chunk go into one file unless `merging` is
 * off, predicted from the share the previous chunk kept and taken back when it does not fit.
 * Returns the files in chunk order, complete and fsynced, not swapped in. On failure the files
 * are closed (the temp files are deleted when the node next opens).
 */
export async function rewriteChunkRange(
  chunks: readonly Chunk[], storage: ChunkStorage, chunkSizeBytes: number, rules: DiscardRules, merging: boolean,
): Promise<RangeGroup[]> {
  type Member = RangeGroup['members'][number] & { chunk: Chunk };
  const groups: RangeGroup[] = [];
  let open: { tempName: string; file: BlockFile; writer: GroupChunkWriter; members: Member[] } | undefined;
  const now = (): number => performance.timeOrigin + performance.now();
  const start = (chunk: Chunk): NonNullable<typeof open> => {
    const tempName = `${randomUUID()}.scavenge.tmp`;
    return { tempName, ...createCopy(storage, tempName, chunkSizeBytes, chunk.header.chunkStartNumber), members: [] };
  };
  const close = async (): Promise<void> => {
    const g = open;
    open = undefined;
    if (!g) return;
    try {
      const first = g.members[0];
      const last = g.members[g.members.length - 1];
      if (first && last) await g.writer.finish(last.chunk.header.chunkEndNumber, last.chunk.logicalDataEndPosition - first.chunk.startPosition);
    } finally {
      await g.writer.settle();
      await g.file.close();
    }
    if (g.members.length > 0) groups.push({ tempName: g.tempName, members: g.members.map(({ chunk: _chunk, ...m }) => m) });
  };
  let keptShare = 1;
  try {
    for (const chunk of chunks) {
      const startedAtMs = now();
      if (open && !joinsGroup(open, chunk, merging, keptShare, chunkSizeBytes)) await close();
      open ??= start(chunk);
      const added = await filterIntoGroup(chunk, open, rules, chunkSizeBytes, async () => {}, async () => {
        await close();
        return (open = start(chunk));
      });
      added.group.members.push({
        chunk, chunkStartNumber: chunk.header.chunkStartNumber, keptBytes: added.keptBytes, kept: added.kept, removed: added.removed,
        startedAtMs, finishedAtMs: now(),
      });
      keptShare = added.keptShare;
      if (!merging) await close();
    }
    await close();
  } catch (err: unknown) {
    const g = open;
    open = undefined;
    if (g) {
      await g.writer.settle().catch(() => {});
      await g.file.close().catch(() => {});
    }
    throw err;
  }
  return groups;
}

/** Where kept frames go: their map entries, then their bytes (in runs of whole frames). */
interface FrameSink {
  mapFrame(logPosition: number, frameSizeBytes: number): void;
  /** `rangeCrc32`: the crc32 of `src[start, end)` when the caller has it (a sink may ignore it). */
  copy(src: Buffer, start: number, end: number, rangeCrc32?: number): void;
}

/**
 * Blocks with at most this many kept runs are checksummed run by run (kept runs and the gaps
 * between them), the crcs combined into the block's (to verify the source chunk) and the kept
 * runs' into the copy's: every byte is checksummed once. With more runs the combining would
 * cost more than a second pass over the kept bytes.
 */
const COMBINED_CRC_RUNS_MAX = 16;

/**
 * Reads and filters `chunk` into `out`. Throws (before `out` could be used) when the chunk turns
 * out to be corrupt: the checksum is known only at the end of the walk.
 */
async function filterChunk(chunk: Chunk, out: FrameSink, rules: DiscardRules, between: () => Promise<void>): Promise<{ kept: number; removed: number }> {
  const filter = new ChunkFilter(rules);
  // Kept runs of the current block: [starts[i], ends[i]); the open run is [runStart, runEnd).
  const starts: number[] = [];
  const ends: number[] = [];
  let runStart = -1;
  let runEnd = 0;
  const start = chunk.startPosition;
  await forEachFrame(chunk, (block, frame, size, logicalOffset) => {
    if (filter.keeps(block, frame)) {
      out.mapFrame(start + logicalOffset, size);
      if (runStart < 0) runStart = frame;
      runEnd = frame + size;
    } else if (runStart >= 0) {
      starts.push(runStart);
      ends.push(runEnd);
      runStart = -1;
    }
  }, between, (block, used) => {
    if (runStart >= 0) {
      starts.push(runStart);
      ends.push(runEnd);
      runStart = -1;
    }
    const runs = starts.length;
    let blockCrc: number | undefined;
    if (runs <= COMBINED_CRC_RUNS_MAX) {
      blockCrc = 0;
      let at = 0;
      for (let i = 0; i < runs; i++) {
        const s = starts[i]!;
        const e = ends[i]!;
        if (s > at) blockCrc = crc32Combine(blockCrc, crc32(block.subarray(at, s)), s - at);
        const runCrc = crc32(block.subarray(s, e));
        blockCrc = crc32Combine(blockCrc, runCrc, e - s);
        out.copy(block, s, e, runCrc);
        at = e;
      }
      if (used > at) blockCrc = crc32Combine(blockCrc, crc32(block.subarray(at, used)), used - at);
    } else {
      for (let i = 0; i < runs; i++) out.copy(block, starts[i]!, ends[i]!);
    }
    starts.length = 0;
    ends.length = 0;
    return blockCrc;
  });
  return { kept: filter.kept, removed: filter.removed };
}

/**
 * Merges runs of neighbouring completed chunks whose data together fits one chunk, so many small
 * scavenged chunks become one file. With threads = 1 the execution stage already merged the
 * chunks it rewrote; this finds what is left (chunks it skipped, a merge its prediction missed,
 * or every chunk when worker threads did the rewriting).
 */
export async function mergeChunks(
  access: ScavengeAccess, point: ScavengePoint, run: { scavengeId: string; listener: ScavengeListener }, pacer: ScavengePacer, totals: ExecutionTotals,
): Promise<void> {
  // The last swap of the execution stage is work like any other: rest for it (throttle) and
  // honour a stop before looking for chunks left to merge.
  await pacer.afterUnit();
  for (const group of mergeGroups(chunksInScope(access, point), access.chunkSizeBytes)) {
    const startedMs = performance.now();
    const first = group[0]!;
    const last = group[group.length - 1]!;
    const tempName = `${randomUUID()}.merge.scavenge.tmp`;
    const { file, writer } = createCopy(access.registry.storage, tempName, access.chunkSizeBytes, first.header.chunkStartNumber);
    try {
      // Whole blocks are copied: merging keeps every frame, only the map needs each one.
      for (const chunk of group) {
        const start = chunk.startPosition;
        await forEachFrame(chunk, (_block, _frame, size, logicalOffset) => writer.mapFrame(start + logicalOffset, size), async () => {
          await writer.drain();
          await pacer.yieldNow();
        }, (block, used) => writer.copy(block, 0, used));
      }
      await writer.finish(last.header.chunkEndNumber, last.logicalDataEndPosition - first.startPosition);
    } finally {
      await writer.settle();
      await file.close();
    }
    const swapped = await access.registry.swapIn(tempName);
    const spaceSavedBytes = swapped.oldSizeBytes - swapped.newSizeBytes;
    totals.spaceSavedBytes += spaceSavedBytes;
    const range = { chunkStartNumber: first.header.chunkStartNumber, chunkEndNumber: last.header.chunkEndNumber };
    const timeTakenMs = performance.now() - startedMs;
    access.log.info({ ...range, chunkCount: group.length, spaceSavedBytes, timeTakenMs: Math.round(timeTakenMs) }, 'chunks merged');
    await run.listener.chunksMerged({ scavengeId: run.scavengeId, ...range, timeTakenMs, spaceSavedBytes, wasMerged: true, errorMessage: '' });
    await pacer.afterUnit();
  }
}

/** Greedy runs of 2+ neighbouring chunks whose physical data sizes sum to at most one chunk. */
export function mergeGroups(chunks: readonly Chunk[], chunkSizeBytes: number): Chunk[][] {
  const groups: Chunk[][] = [];
  let current: Chunk[] = [];
  let size = 0;
  for (const c of chunks) {
    const s = c.physicalDataSizeBytes;
    if (current.length > 0 && size + s <= chunkSizeBytes) {
      current.push(c);
      size += s;
      continue;
    }
    if (current.length > 1) groups.push(current);
    current = [c];
    size = s;
  }
  if (current.length > 1) groups.push(current);
  return groups;
}

/**
 * Drops index entries whose records a scavenge removed. Paced like the other stages: every
 * written piece of the new table is a unit of work (the throttle rests after it; a stop is
 * honoured once the table is done).
 */
export async function executeIndex(access: ScavengeAccess, run: { scavengeId: string; listener: ScavengeListener }, pacer: ScavengePacer): Promise<void> {
  const remove = access.index.removeEntries;
  if (!remove) return;
  const startedMs = performance.now();
  // The scavenged chunks' position maps, read into memory once: entries come in hash order, so
  // their positions jump from chunk to chunk and page to page.
  const kept = KeptPositions.load(access.registry, access.chunkSizeBytes);
  const { removedEntryCount } = await remove.call(
    access.index,
    (entry) => kept.keeps(entry.logPosition),
    () => pacer.afterUnit(false),
  );
  await reportIndexExecuted(access, run, removedEntryCount, startedMs);
}

/**
 * The index stage started early (threads = 1, unthrottled): called when every chunk has been
 * filtered, it writes the filtered index table while the last copies are made durable and
 * swapped in; the caller commits it once execution (and merging) completed, or aborts it.
 * Which records are gone is known by then: from the copies in `pending` (in memory) and the
 * registry's scavenged chunks. Undefined when the index cannot do this.
 */
export function prepareIndexEarly(access: ScavengeAccess, pending: readonly PendingCopy[]): { startedMs: number; prepared: Promise<PreparedRemoval | undefined> } | undefined {
  const prepare = access.index.prepareRemoveEntries;
  if (!prepare) return undefined;
  const startedMs = performance.now();
  // Taken now, in one synchronous step: the swaps still to come are what `pending` describes.
  const kept = KeptPositions.load(access.registry, access.chunkSizeBytes, KEPT_POSITIONS_BUDGET_BYTES, pending);
  const prepared = prepare.call(
    access.index,
    (entry) => kept.keeps(entry.logPosition),
    // Yield between pieces, so the copies' completions and swaps are not held up.
    () => new Promise<void>((resolve) => setImmediate(resolve)),
  );
  prepared.catch(() => {}); // awaited by the caller
  return { startedMs, prepared };
}

export async function reportIndexExecuted(
  access: ScavengeAccess, run: { scavengeId: string; listener: ScavengeListener }, removedEntryCount: number, startedMs: number,
): Promise<void> {
  const timeTakenMs = performance.now() - startedMs;
  access.log.info({ entriesDeleted: removedEntryCount, timeTakenMs: Math.round(timeTakenMs) }, 'index scavenged');
  await run.listener.indexExecuted({ scavengeId: run.scavengeId, timeTakenMs, entriesDeleted: removedEntryCount, entriesKept: -1 });
}

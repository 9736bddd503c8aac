/**
 * Execution: rewrites every chunk before the scavenge point whose weight meets the threshold
 * without its removable records (as the next file version, swapped in atomically), merges small
 * neighbouring chunks, and finally drops index entries whose records are gone.
 */
import { randomUUID } from 'node:crypto';
import { RecordType, commitTransactionPosition, decodePrepareHeader } from '../format/record.js';
import { TOMBSTONE_EVENT_NUMBER } from '../event-db-types.js';
import { isMetastream } from '../stream-metadata.js';
import { ScavengedChunkWriter } from '../chunk/chunk-writer.js';
import type { Chunk } from '../chunk/chunk.js';
import { forEachFrame } from './chunk-frames.js';
import type { BlockFile } from '../../platform/block-file.js';
import { ChunkRewritePool } from './chunk-rewrite-pool.js';
import type { ScavengeAccess, ScavengePacer } from './scavenge-access.js';
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
  if (isMetastream(stream)) {
    const m = rules.metas.get(stream);
    return m !== undefined && (m.isTombstoned || eventNumber < m.discardPoint);
  }
  const o = rules.originals.get(stream);
  if (!o) return false;
  if (o.isTombstoned) return eventNumber !== TOMBSTONE_EVENT_NUMBER;
  if (eventNumber >= o.lastEventNumber) return false;
  if (eventNumber < o.discardPoint) return true;
  if (eventNumber < o.maybeDiscardPoint && o.maxAgeSeconds !== null) {
    return timestampMs < rules.effectiveNowMs - o.maxAgeSeconds * 1000;
  }
  return false;
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

export async function executeChunks(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, run: { scavengeId: string; threads: number; doneLogicalChunkNumber: number | null; listener: ScavengeListener },
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

async function executeChunksWith(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint,
  run: { scavengeId: string; threads: number; doneLogicalChunkNumber: number | null; listener: ScavengeListener; pool: ChunkRewritePool | undefined },
  pacer: ScavengePacer, totals: ExecutionTotals, rules: DiscardRules,
): Promise<void> {
  const todo = chunksInScope(access, point).filter((c) => run.doneLogicalChunkNumber === null || c.header.chunkStartNumber > run.doneLogicalChunkNumber);
  const done = new Set<number>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < todo.length) {
      const chunk = todo[next++]!;
      await executeOne(access, state, point, chunk, rules, run, pacer, totals);
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
      await pacer.afterUnit();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, run.threads) }, () => worker()));
}

async function executeOne(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, chunk: Chunk, rules: DiscardRules,
  run: { scavengeId: string; listener: ScavengeListener; pool: ChunkRewritePool | undefined }, pacer: ScavengePacer, totals: ExecutionTotals,
): Promise<void> {
  const startedMs = performance.now();
  const weight = chunkWeight(state, chunk);
  const range = { chunkStartNumber: chunk.header.chunkStartNumber, chunkEndNumber: chunk.header.chunkEndNumber };
  if (!meetsThreshold(weight, point.threshold)) {
    access.log.info({ ...range, weight, threshold: point.threshold }, `skipping chunk ${range.chunkStartNumber}-${range.chunkEndNumber} with weight ${weight}`);
    return;
  }
  const tempName = `${randomUUID()}.scavenge.tmp`;
  const { kept, removed } = run.pool
    ? await run.pool.rewrite(chunk, tempName)
    : await rewriteChunk(chunk, access.registry.storage.create(tempName), access.chunkSizeBytes, rules, () => pacer.yieldNow());
  const swapped = await access.registry.swapIn(tempName);
  const spaceSavedBytes = swapped.oldSizeBytes - swapped.newSizeBytes;
  state.transaction(() => {
    for (let n = range.chunkStartNumber; n <= range.chunkEndNumber; n++) state.resetChunkWeight(n);
  });
  totals.spaceSavedBytes += spaceSavedBytes;
  totals.executedChunks += 1;
  totals.maxChunkScavenged = Math.max(totals.maxChunkScavenged, range.chunkEndNumber);
  const timeTakenMs = performance.now() - startedMs;
  access.log.info({ ...range, weight, keptRecords: kept, removedRecords: removed, spaceSavedBytes, timeTakenMs: Math.round(timeTakenMs) },
    `scavenged chunk ${range.chunkStartNumber}-${range.chunkEndNumber} with weight ${weight}`);
  await run.listener.chunkExecuted({ scavengeId: run.scavengeId, ...range, timeTakenMs, spaceSavedBytes, wasScavenged: true, weight, errorMessage: '' });
}

/**
 * Copies the records of `chunk` that this scavenge keeps into a new scavenged chunk file.
 * A commit record goes too when every event of its write was removed. Shared by the in-thread
 * path and the worker threads (execute-worker.ts).
 */
export async function rewriteChunk(
  chunk: Chunk, file: BlockFile, chunkSizeBytes: number, rules: DiscardRules, between: () => Promise<void>,
): Promise<{ kept: number; removed: number }> {
  const writer = new ScavengedChunkWriter(file, chunkSizeBytes, chunk.header.chunkStartNumber, chunk.header.chunkEndNumber);
  await writer.begin();
  let kept = 0;
  let removed = 0;
  const keptPerTransaction = new Map<number, number>();
  await forEachFrame(chunk, async (frame, logPosition, payload) => {
    const type = payload.readUInt8(0);
    if (type === RecordType.Prepare) {
      const h = decodePrepareHeader(payload);
      const drop = isDiscarded(rules, h.stream, h.eventNumber, h.timestampMs);
      keptPerTransaction.set(h.transactionPosition, (keptPerTransaction.get(h.transactionPosition) ?? 0) + (drop ? 0 : 1));
      if (drop) { removed++; return; }
    } else if (type === RecordType.Commit) {
      if (keptPerTransaction.get(commitTransactionPosition(payload)) === 0) return; // its whole write is gone
    }
    kept++;
    await writer.add(frame, logPosition);
  }, between);
  await writer.finish(chunk.logicalDataEndPosition - chunk.startPosition);
  await file.close();
  return { kept, removed };
}

/**
 * Merges runs of neighbouring completed chunks whose data together fits one chunk, so many small
 * scavenged chunks become one file.
 */
export async function mergeChunks(
  access: ScavengeAccess, point: ScavengePoint, run: { scavengeId: string; listener: ScavengeListener }, pacer: ScavengePacer, totals: ExecutionTotals,
): Promise<void> {
  for (const group of mergeGroups(chunksInScope(access, point), access.chunkSizeBytes)) {
    const startedMs = performance.now();
    const first = group[0]!;
    const last = group[group.length - 1]!;
    const tempName = `${randomUUID()}.merge.scavenge.tmp`;
    const file = access.registry.storage.create(tempName);
    const writer = new ScavengedChunkWriter(file, access.chunkSizeBytes, first.header.chunkStartNumber, last.header.chunkEndNumber);
    await writer.begin();
    for (const chunk of group) {
      await forEachFrame(chunk, (frame, logPosition) => writer.add(frame, logPosition), () => pacer.yieldNow());
    }
    await writer.finish(last.logicalDataEndPosition - first.startPosition);
    await file.close();
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

/** Drops index entries whose records a scavenge removed. */
export async function executeIndex(access: ScavengeAccess, run: { scavengeId: string; listener: ScavengeListener }): Promise<void> {
  const remove = access.index.removeEntries;
  if (!remove) return;
  const startedMs = performance.now();
  const { removedEntryCount } = await remove.call(access.index, (entry) => !access.registry.isScavengedAway(entry.logPosition));
  const timeTakenMs = performance.now() - startedMs;
  access.log.info({ entriesDeleted: removedEntryCount, timeTakenMs: Math.round(timeTakenMs) }, 'index scavenged');
  await run.listener.indexExecuted({ scavengeId: run.scavengeId, timeTakenMs, entriesDeleted: removedEntryCount, entriesKept: -1 });
}

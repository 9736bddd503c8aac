/**
 * Calculation: for each original stream with accumulated metadata or a tombstone whose status
 * is Active, works out as of the scavenge point which events can go (the discard point, and for
 * $maxAge a maybe-discard point checked per event at execution), and adds weight to the chunks
 * holding them. The stream's last event is never discarded; a tombstone is kept forever.
 */
import { TOMBSTONE_EVENT_NUMBER } from '../event-db-types.js';
import { SOFT_DELETED_TRUNCATE_BEFORE } from '../stream-metadata.js';
import { REMOVABLE_RECORD_WEIGHT } from './accumulate.js';
import type { ScavengeAccess, ScavengePacer } from './scavenge-access.js';
import type { OriginalStreamData, ScavengePoint, ScavengeState } from './scavenge-types.js';

const PAGE_SIZE = 1000;
/** Streams worked out between two turns of the event loop (each may walk the index). */
const STREAMS_PER_TURN = 100;
const MAYBE_WEIGHT = 1;

export async function calculate(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, doneStream: string | null, pacer: ScavengePacer,
): Promise<number> {
  let after = doneStream;
  let streams = 0;
  for (;;) {
    const page = state.activeOriginals(after, PAGE_SIZE);
    if (page.length === 0) break;
    const weights = new Map<number, number>();
    const updated: OriginalStreamData[] = [];
    for (const o of page) {
      updated.push(calculateStream(access, state, point, o, weights));
      // Nothing of the page is written before its transaction, so a stop here loses nothing.
      if (updated.length % STREAMS_PER_TURN === 0) await pacer.yieldNow();
    }
    const last = page[page.length - 1]!.stream;
    state.transaction(() => {
      state.setOriginals(updated); // one statement per 128 rows
      for (const [chunk, w] of weights) state.addChunkWeight(chunk, w);
      state.setCheckpoint({ stage: 'Calculating', scavengePoint: point, doneStream: last });
    });
    streams += page.length;
    after = last;
    await pacer.afterUnit();
  }
  return streams;
}

function calculateStream(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, o: OriginalStreamData, weights: Map<number, number>,
): OriginalStreamData {
  // A tombstoned stream's last event is its tombstone, which accumulation found before the
  // point: no need to look it up (and confirm it against the log) in the index. Execution
  // removes everything of such a stream but the tombstone whatever this number says.
  const last = o.isTombstoned ? TOMBSTONE_EVENT_NUMBER : access.lastEventNumberBefore(o.stream, point.position);
  const status = o.isTombstoned ? 'Archived' : o.maxAgeSeconds !== null || o.maxCount !== null ? 'Active' : 'Spent';
  if (last < 0) return { ...o, lastEventNumber: last, status };
  let discardPoint = 0;
  if (o.isTombstoned) {
    discardPoint = TOMBSTONE_EVENT_NUMBER;
  } else {
    if (o.truncateBefore !== null) discardPoint = Math.max(discardPoint, Math.min(o.truncateBefore, SOFT_DELETED_TRUNCATE_BEFORE));
    if (o.maxCount !== null) discardPoint = Math.max(discardPoint, last - o.maxCount + 1);
    discardPoint = Math.min(discardPoint, last); // the last event always stays
  }
  const maybeDiscardPoint = !o.isTombstoned && o.maxAgeSeconds !== null ? last : discardPoint;
  const cutoffMs = o.maxAgeSeconds !== null ? point.effectiveNowMs - o.maxAgeSeconds * 1000 : -Infinity;
  const from = Math.min(o.discardPoint, discardPoint);
  addWeights(access, state, point, o.stream, { from, discardPoint, maybeDiscardPoint, cutoffMs, previousDiscardPoint: o.discardPoint }, weights);
  return { ...o, discardPoint: Math.max(discardPoint, o.discardPoint), maybeDiscardPoint, lastEventNumber: last, status };
}

/**
 * Weight for events newly below the discard point (+2 each) and for events in the maybe range
 * whose chunk is at least partly older than the cutoff (+2 wholly older, +1 straddling).
 */
function addWeights(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, stream: string,
  range: { from: number; discardPoint: number; maybeDiscardPoint: number; cutoffMs: number; previousDiscardPoint: number },
  weights: Map<number, number>,
): void {
  const add = (chunk: number, w: number): void => { weights.set(chunk, (weights.get(chunk) ?? 0) + w); };
  // One index query for the whole range (iterating in growing batches searched every source
  // again for each batch).
  for (const entry of access.index.getRange(access.hasher(stream), Math.max(0, range.from), Infinity)) {
    if (entry.logPosition >= point.position || entry.eventNumber === TOMBSTONE_EVENT_NUMBER) continue;
    if (entry.eventNumber < range.from) break;
    const chunk = Math.floor(entry.logPosition / access.chunkSizeBytes);
    if (entry.eventNumber < range.discardPoint) {
      if (entry.eventNumber >= range.previousDiscardPoint) add(chunk, REMOVABLE_RECORD_WEIGHT);
    } else if (entry.eventNumber < range.maybeDiscardPoint) {
      const t = state.getChunkTimeRange(chunk);
      if (!t) continue;
      if (t.maxMs < range.cutoffMs) add(chunk, REMOVABLE_RECORD_WEIGHT);
      else if (t.minMs < range.cutoffMs) add(chunk, MAYBE_WEIGHT);
    }
  }
}

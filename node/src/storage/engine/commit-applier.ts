/**
 * Makes committed writes visible: their index entries, the stream existence filter, the
 * committed-state caches, then the listeners (long polls, subscriptions). One place for it, so
 * that writes committed by this node's writer and writes replicated from a leader become visible
 * the same way.
 *
 * It also keeps crash recovery short: the log past the durable index tables, and past the
 * persisted existence filter, stays under INDEX_REPLAY_BYTES_MAX (a flush starts beyond it).
 */
import type { CommittedWrite } from '../event-db-types.js';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import type { ExistenceFilter } from '../index-adapter.js';
import type { IndexEntry, StreamHasher, StreamIndex } from '../index/stream-index-port.js';
import { INDEX_REPLAY_BYTES_MAX } from '../limits.js';
import type { CommittedState } from './committed-state.js';

/** One committed write: one stream's events, in event-number order, and its commit record. */
export interface AppliedWrite {
  readonly stream: string;
  readonly events: readonly { readonly eventNumber: number; readonly logPosition: number }[];
  readonly firstEventId: string;
  readonly lastEventData: Uint8Array;
  readonly commitPosition: number;
}

export interface CommitApplierDeps {
  readonly index: StreamIndex;
  readonly existence: ExistenceFilter;
  readonly hasher: StreamHasher;
  readonly state: CommittedState;
  readonly registry: ChunkRegistry;
  /** No index flushes or filter persistence with --mem-db. */
  readonly memDb: boolean;
  readonly fail: (err: unknown) => void;
}

/** What replayLogBytes needs of a chunk. */
export interface ChunkExtent {
  readonly endPosition: number;
  readonly logicalDataEndPosition: number;
}

/**
 * Log bytes a restart replays from `from` to `to`. A chunk completed before it was full (writing
 * a scavenge point completes the active chunk) has an unwritten tail: the log position jumps over
 * it, but there is nothing there to replay, so it does not count. Counting it made every
 * scavenge point look like a far-behind index and set off a flush and a chain of merges.
 */
export function replayLogBytes(from: number, to: number, chunkAt: (position: number) => ChunkExtent | undefined): number {
  let total = to - from;
  for (let c = chunkAt(from); c !== undefined && c.endPosition <= to; c = chunkAt(c.endPosition)) {
    const tailStart = Math.max(from, c.logicalDataEndPosition);
    if (c.endPosition > tailStart) total -= c.endPosition - tailStart;
  }
  return Math.max(0, total);
}

export class CommitApplier {
  private readonly listeners = new Set<(w: CommittedWrite) => void>();
  private indexFlushRunning = false;
  private existencePersistRunning = false;

  constructor(private readonly deps: CommitApplierDeps) {}

  onCommitted(listener: (write: CommittedWrite) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Index, filter and caches first, then the listeners: a listener reads what it is told of. */
  apply(writes: readonly AppliedWrite[], committedPosition: number): void {
    const { index, existence, hasher, state } = this.deps;
    const entries: IndexEntry[] = [];
    for (const w of writes) {
      if (w.events.length === 0) continue;
      const streamHash = hasher(w.stream); // one stream per write: hash it once
      for (const e of w.events) entries.push({ streamHash, eventNumber: e.eventNumber, logPosition: e.logPosition });
    }
    index.add(entries, committedPosition);
    this.flushIndexIfFarBehind(committedPosition);
    for (const w of writes) if (w.events.length > 0) existence.add(w.stream);
    existence.advance(committedPosition);
    const committed: CommittedWrite[] = [];
    for (const w of writes) {
      const first = w.events[0];
      const last = w.events[w.events.length - 1];
      if (!first || !last) continue;
      state.noteWrite({
        stream: w.stream, firstEventNumber: first.eventNumber, firstEventId: w.firstEventId,
        lastEventNumber: last.eventNumber, lastEventData: w.lastEventData,
      });
      committed.push({ stream: w.stream, firstEventNumber: first.eventNumber, lastEventNumber: last.eventNumber, commitPosition: w.commitPosition });
    }
    for (const c of committed) for (const l of this.listeners) l(c);
  }

  private flushIndexIfFarBehind(committedPosition: number): void {
    if (this.deps.memDb) return;
    const { registry, existence, index } = this.deps;
    const chunkAt = (position: number): ChunkExtent | undefined => registry.chunkAt(position);
    if (!this.existencePersistRunning && replayLogBytes(existence.checkpoint, committedPosition, chunkAt) >= INDEX_REPLAY_BYTES_MAX) {
      this.existencePersistRunning = true;
      existence.persist().then(() => { this.existencePersistRunning = false; }, (err: unknown) => this.deps.fail(err));
    }
    if (this.indexFlushRunning) return;
    if (replayLogBytes(index.persistedLogPosition, committedPosition, chunkAt) < INDEX_REPLAY_BYTES_MAX) return;
    this.indexFlushRunning = true;
    index.flush().then(
      () => { this.indexFlushRunning = false; },
      (err: unknown) => this.deps.fail(err),
    );
  }
}

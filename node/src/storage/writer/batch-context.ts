/**
 * Stream state as of the writes already placed in the batch being formed: the committed state
 * overlaid with the batches in flight (written, not yet applied) and the requests accepted into
 * this batch, so each request is decided against every write before it.
 */
import type { NewEvent, StreamMetadata } from '../event-db-types.js';
import type { StreamWriteState } from '../append-decision.js';
import type { BoundedCache } from '../bounded-cache.js';
import { isMetastream, isSoftDeleted, originalStreamOf, parseStreamMetadata } from '../stream-metadata.js';

/** The committed state a batch is decided against (CommittedState). */
export interface CommittedView {
  committedLastEventNumber(stream: string): number;
  committedMetadata(stream: string): { version: number; metadata: StreamMetadata };
  committedEventId(stream: string, eventNumber: number): string | undefined;
  readonly recentEventIds: BoundedCache<string, { stream: string; eventNumber: number }>;
}

export class BatchContext {
  readonly lastNumbers = new Map<string, number>();
  readonly metadata = new Map<string, { version: number; metadata: StreamMetadata }>();
  readonly ids = new Map<string, Map<number, string>>();
  readonly recentIds = new Map<string, { stream: string; eventNumber: number }>();
  /**
   * @param inflight contexts of batches already written but not yet applied (newest last):
   * their effects are not in the committed caches yet, so lookups consult them first.
   */
  constructor(readonly committed: CommittedView, private readonly inflight: readonly BatchContext[]) {}

  private fromInflight<T>(get: (c: BatchContext) => T | undefined): T | undefined {
    for (let i = this.inflight.length - 1; i >= 0; i--) {
      const v = get(this.inflight[i]!);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  lastEventNumber(stream: string): number {
    return this.lastNumbers.get(stream) ?? this.fromInflight((c) => c.lastNumbers.get(stream)) ?? this.committed.committedLastEventNumber(stream);
  }
  streamMetadata(stream: string): { version: number; metadata: StreamMetadata } {
    return this.metadata.get(stream) ?? this.fromInflight((c) => c.metadata.get(stream)) ?? this.committed.committedMetadata(stream);
  }
  writeState(stream: string): StreamWriteState {
    const last = this.lastEventNumber(stream);
    const softDeleted = !isMetastream(stream) && isSoftDeleted(this.streamMetadata(stream).metadata);
    return { lastEventNumber: last, softDeleted };
  }
  idAt(stream: string, eventNumber: number): string | undefined {
    return this.ids.get(stream)?.get(eventNumber) ?? this.fromInflight((c) => c.ids.get(stream)?.get(eventNumber))
      ?? this.committed.committedEventId(stream, eventNumber);
  }
  recentNumberOf(stream: string, eventId: string): number | undefined {
    const hit = this.recentIds.get(eventId) ?? this.fromInflight((c) => c.recentIds.get(eventId)) ?? this.committed.recentEventIds.get(eventId);
    return hit && hit.stream === stream ? hit.eventNumber : undefined;
  }
  /** Records the effect of a planned write so later requests in the batch see it. */
  place(stream: string, events: readonly { eventNumber: number; event: NewEvent }[]): void {
    let ids = this.ids.get(stream);
    if (!ids) { ids = new Map(); this.ids.set(stream, ids); }
    for (const e of events) ids.set(e.eventNumber, e.event.eventId);
    // Only a write's first id is ever looked up (a retry is recognised by its first event).
    const first = events[0];
    if (first) this.recentIds.set(first.event.eventId, { stream, eventNumber: first.eventNumber });
    const last = events[events.length - 1];
    if (last) this.lastNumbers.set(stream, last.eventNumber);
    if (isMetastream(stream) && last) {
      this.metadata.set(originalStreamOf(stream), { version: last.eventNumber, metadata: parseStreamMetadata(last.event.data) });
    }
  }
}

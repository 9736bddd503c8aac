/**
 * What the engine knows of the committed log, beyond the index: each stream's last event number,
 * its parsed metadata, the recent event ids (idempotent retries), and the lookups that read
 * records through the index, confirming stream names against hash collisions.
 *
 * Only committed (durable, and in a cluster replicated) writes enter it, through `noteWrite`;
 * writes still in the pipeline are overlaid by the writer's BatchContext.
 */
import { FatalError } from '../../errors.js';
import { RecordType, type PrepareRecord } from '../format/record.js';
import { BoundedCache } from '../bounded-cache.js';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import type { ExistenceFilter } from '../index-adapter.js';
import type { StreamHasher, StreamIndex } from '../index/stream-index-port.js';
import { TOMBSTONE_EVENT_NUMBER, type StreamMetadata } from '../event-db-types.js';
import { EMPTY_METADATA, isMetastream, metastreamOf, originalStreamOf, parseStreamMetadata } from '../stream-metadata.js';

/** Counters reported under `readIndex` in the stats. */
export interface CacheStats {
  cachedRecord: number;
  notCachedRecord: number;
  cachedStreamInfo: number;
  notCachedStreamInfo: number;
  hashCollisions: number;
}

export interface CommittedStateDeps {
  readonly registry: ChunkRegistry;
  readonly index: StreamIndex;
  readonly existence: ExistenceFilter;
  readonly hasher: StreamHasher;
  readonly hashCollisionReadLimit: number;
  /** End of the log readers may see. */
  readonly committedPosition: () => number;
}

/** A committed write as the caches need it. */
export interface NotedWrite {
  readonly stream: string;
  readonly firstEventNumber: number;
  readonly firstEventId: string;
  readonly lastEventNumber: number;
  /** Data of the last event: the stream's metadata when the stream is a metastream. */
  readonly lastEventData: Uint8Array;
}

export class CommittedState {
  private readonly lastNumberCache = new BoundedCache<string, number>(200_000);
  private readonly metadataCache = new BoundedCache<string, { version: number; metadata: StreamMetadata }>(100_000);
  readonly recentEventIds = new BoundedCache<string, { stream: string; eventNumber: number }>(100_000);
  readonly cacheStats: CacheStats = { cachedRecord: 0, notCachedRecord: 0, cachedStreamInfo: 0, notCachedStreamInfo: 0, hashCollisions: 0 };

  constructor(private readonly deps: CommittedStateDeps) {}

  /** A write became committed: caches follow. */
  noteWrite(w: NotedWrite): void {
    this.lastNumberCache.set(w.stream, w.lastEventNumber);
    this.recentEventIds.set(w.firstEventId, { stream: w.stream, eventNumber: w.firstEventNumber });
    if (isMetastream(w.stream)) {
      this.metadataCache.set(originalStreamOf(w.stream), { version: w.lastEventNumber, metadata: parseStreamMetadata(w.lastEventData) });
    }
  }

  committedLastEventNumber(stream: string): number {
    const cached = this.lastNumberCache.get(stream);
    if (cached !== undefined) { this.cacheStats.cachedStreamInfo += 1; return cached; }
    this.cacheStats.notCachedStreamInfo += 1;
    if (!this.deps.existence.mightExist(stream)) {
      this.lastNumberCache.set(stream, -1);
      return -1;
    }
    let last = -1;
    let walked = 0;
    for (const entry of this.deps.index.iterateDescending(this.deps.hasher(stream))) {
      if (walked++ >= this.deps.hashCollisionReadLimit) break;
      const record = this.readPrepareAt(entry.logPosition);
      if (record === undefined) continue;
      if (record.stream === stream) { last = entry.eventNumber; break; }
      this.cacheStats.hashCollisions += 1;
    }
    this.lastNumberCache.set(stream, last);
    return last;
  }

  committedMetadata(stream: string): { version: number; metadata: StreamMetadata } {
    const cached = this.metadataCache.get(stream);
    if (cached) return cached;
    const metastream = metastreamOf(stream);
    const version = this.committedLastEventNumber(metastream);
    let result = { version: -1, metadata: EMPTY_METADATA };
    if (version >= 0 && version !== TOMBSTONE_EVENT_NUMBER) {
      const record = this.findEventRecord(metastream, version);
      if (record) result = { version, metadata: parseStreamMetadata(record.data) };
    }
    this.metadataCache.set(stream, result);
    return result;
  }

  committedEventId(stream: string, eventNumber: number): string | undefined {
    return this.findEventRecord(stream, eventNumber)?.eventId;
  }

  /**
   * The event record an index entry points at; undefined when a scavenge removed it (the index
   * drops such entries in the scavenge's index stage, which may not have run yet).
   */
  readPrepareAt(logPosition: number): PrepareRecord | undefined {
    this.cacheStats.notCachedRecord += 1;
    const frame = this.deps.registry.readRecord(logPosition, this.deps.committedPosition());
    if (frame.kind !== 'record' && this.deps.registry.isScavengedAway(logPosition)) return undefined;
    if (frame.kind !== 'record' || frame.record.type !== RecordType.Prepare) {
      const reason = frame.kind === 'torn' ? frame.reason : frame.kind === 'end' ? 'no record' : 'not an event record';
      throw new FatalError('EDB_INDEX_CORRUPT', `index points at log position ${logPosition} but the log has ${reason} there`);
    }
    return frame.record;
  }

  /** The record of `stream`'s event `eventNumber`, confirming the stream name (hash collisions). */
  findEventRecord(stream: string, eventNumber: number): PrepareRecord | undefined {
    const candidates = this.deps.index.getRange(this.deps.hasher(stream), eventNumber, eventNumber);
    for (const c of candidates) {
      const record = this.readPrepareAt(c.logPosition);
      if (record === undefined) continue;
      if (record.stream === stream) return record;
      this.cacheStats.hashCollisions += 1;
    }
    return undefined;
  }

  /** The stream's last event number among records before `position` (-1 when none). */
  lastEventNumberBefore(stream: string, position: number): number {
    let walked = 0;
    for (const entry of this.deps.index.iterateDescending(this.deps.hasher(stream))) {
      if (entry.logPosition >= position) continue;
      if (walked++ >= this.deps.hashCollisionReadLimit) break;
      const record = this.readPrepareAt(entry.logPosition);
      if (record !== undefined && record.stream === stream) return entry.eventNumber;
    }
    return -1;
  }
}

/**
 * The storage engine's public contract: everything above storage/ (HTTP API, users, scavenge
 * admin, main) talks to the engine only through these types and the EventDb interface.
 *
 * Numbers: event numbers and log positions are JS numbers (safe to 2^53). A log position is a
 * byte offset in the global transaction log; an event number is a per-stream version from 0.
 */

/** Expected-version sentinels, as in EventStoreDB. */
export const ExpectedVersion = {
  Any: -2,
  NoStream: -1,
  StreamExists: -4,
} as const;

/** Event number recorded for a hard-deleted stream's tombstone (EventStoreDB uses long.MaxValue). */
export const TOMBSTONE_EVENT_NUMBER = Number.MAX_SAFE_INTEGER;

export interface NewEvent {
  /** UUID, lower-case canonical form. */
  readonly eventId: string;
  readonly eventType: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array;
  readonly isJson: boolean;
}

export interface RecordedEvent {
  readonly stream: string;
  readonly eventNumber: number;
  readonly eventId: string;
  readonly eventType: string;
  readonly data: Buffer;
  readonly metadata: Buffer;
  readonly isJson: boolean;
  /** Milliseconds since the Unix epoch, when the event was written. */
  readonly createdMs: number;
  /** Log position of the event's own record (EventStoreDB's "prepare position"). */
  readonly logPosition: number;
  /** Log position of the commit that made it visible (EventStoreDB's "commit position"). */
  readonly commitPosition: number;
}

/** A position in $all, as EventStoreDB's TFPos. */
export interface AllPosition {
  readonly commitPosition: number;
  readonly preparePosition: number;
}

export type AppendResult =
  | {
      readonly kind: 'success';
      readonly firstEventNumber: number;
      readonly lastEventNumber: number;
      /** Log position of the commit record (the $all position of this write). */
      readonly commitPosition: number;
      /** True when the write was a retry of an identical earlier write and wrote nothing. */
      readonly idempotent: boolean;
      /**
       * Log position of the last event's own record: its position in $all (a read of $all reports
       * it as the event's commit and prepare position; the gRPC append answers it, as the
       * original does). Absent when the write wrote no event (an idempotent retry, no events).
       */
      readonly lastEventPosition?: number;
    }
  | {
      readonly kind: 'wrong-expected-version';
      /** The stream's current last event number; -1 when the stream does not exist. */
      readonly currentVersion: number;
    }
  | { readonly kind: 'stream-deleted' };

export interface StreamAcl {
  readonly r?: readonly string[];
  readonly w?: readonly string[];
  readonly d?: readonly string[];
  readonly mr?: readonly string[];
  readonly mw?: readonly string[];
}

/** Parsed stream metadata (the latest event of `$$<stream>`). */
export interface StreamMetadata {
  readonly maxAgeSeconds?: number;
  readonly maxCount?: number;
  readonly truncateBefore?: number;
  readonly cacheControlSeconds?: number;
  readonly acl?: StreamAcl;
  /** The raw JSON object as written by the client (including custom keys). */
  readonly raw: Record<string, unknown>;
}

export type ReadDirection = 'forward' | 'backward';

export type ReadStreamResult =
  | {
      readonly kind: 'success';
      /** In the order of the read direction, with deleted/expired/truncated events removed. */
      readonly events: readonly RecordedEvent[];
      /** The stream's last event number (regardless of the page). */
      readonly lastEventNumber: number;
      /** Where the next page in the same direction starts (-1 when reading backward past 0). */
      readonly nextEventNumber: number;
      readonly isEndOfStream: boolean;
    }
  | { readonly kind: 'stream-not-found' }
  | { readonly kind: 'stream-deleted' };

export type ReadEventResult =
  | { readonly kind: 'success'; readonly event: RecordedEvent }
  | { readonly kind: 'event-not-found' }
  | { readonly kind: 'stream-not-found' }
  | { readonly kind: 'stream-deleted' };

export interface ReadAllResult {
  /** In the order of the read direction; includes system events and not-yet-scavenged ones. */
  readonly events: readonly RecordedEvent[];
  /** Where the next page in the same direction starts. */
  readonly nextPosition: AllPosition;
  readonly isEnd: boolean;
}

export type StreamState =
  | { readonly kind: 'no-stream' }
  | { readonly kind: 'exists'; readonly lastEventNumber: number; readonly softDeleted: boolean }
  | { readonly kind: 'hard-deleted' };

export interface EngineStats {
  readonly writerCheckpoint: number;
  readonly chaserCheckpoint: number;
  readonly writer: {
    readonly lastFlushSizeBytes: number;
    readonly meanFlushSizeBytes: number;
    readonly maxFlushSizeBytes: number;
    readonly lastFlushDelayMs: number;
    readonly meanFlushDelayMs: number;
    readonly maxFlushDelayMs: number;
    readonly queuedFlushMessages: number;
    readonly flushCount: number;
    /** Batches are sealed, written and fdatasynced on the log writer thread (not the main thread). */
    readonly onWriterThread: boolean;
  };
  readonly readIndex: {
    readonly cachedRecord: number;
    readonly notCachedRecord: number;
    readonly cachedStreamInfo: number;
    readonly notCachedStreamInfo: number;
    readonly hashCollisions: number;
  };
  readonly diskIo: { readonly readBytes: number; readonly writtenBytes: number; readonly readOps: number; readonly writeOps: number };
  readonly index: { readonly memTableEntries: number; readonly tableCount: number };
  readonly chunkCount: number;
}

/** Notification that a write became durable and visible. */
export interface CommittedWrite {
  readonly stream: string;
  readonly firstEventNumber: number;
  readonly lastEventNumber: number;
  readonly commitPosition: number;
}

export interface EventDb {
  append(stream: string, expectedVersion: number, events: readonly NewEvent[]): Promise<AppendResult>;
  /** Soft delete (default) or hard delete (tombstone). */
  deleteStream(stream: string, expectedVersion: number, hard: boolean): Promise<AppendResult>;
  readStream(stream: string, fromEventNumber: number, maxCount: number, direction: ReadDirection): Promise<ReadStreamResult>;
  /** eventNumber -1 means the last event. */
  readEvent(stream: string, eventNumber: number): Promise<ReadEventResult>;
  /** Forward from {0,0}; backward from the end when `from` is undefined. */
  readAll(from: AllPosition | undefined, maxCount: number, direction: ReadDirection): Promise<ReadAllResult>;
  streamState(stream: string): Promise<StreamState>;
  getStreamMetadata(stream: string): Promise<{ metadata: StreamMetadata; metastreamVersion: number }>;
  setStreamMetadata(stream: string, expectedVersion: number, raw: Record<string, unknown>, eventId?: string): Promise<AppendResult>;
  /** Calls the listener after each durable write; returns the unsubscribe function. */
  onCommitted(listener: (write: CommittedWrite) => void): () => void;
  mergeIndexes(): Promise<void>;
  /**
   * Starts a scavenge (resuming a stopped one) with this id; throws EventDbError
   * EDB_SCAVENGE_RUNNING (400) when one is already running on this node.
   */
  startScavenge(scavengeId: string, params: import('./scavenge/scavenge-types.js').ScavengeParams, listener: import('./scavenge/scavenge-types.js').ScavengeListener): import('./scavenge/scavenge-types.js').ScavengeHandle;
  stats(): EngineStats;
  close(): Promise<void>;
}

/** Options of the engine; main.ts maps the node's config onto them. */
export interface EventDbOptions {
  /** Data directory (chunks and checkpoints). Ignored with memDb. */
  readonly dbPath: string;
  /** Index directory (indexmap, tables, bloom filters, stream-existence filter). Ignored with memDb. */
  readonly indexPath: string;
  /** Keep everything in memory; nothing is written to disk. */
  readonly memDb: boolean;
  /** Logical data size of one chunk in bytes (default 256 MiB). */
  readonly chunkSizeBytes: number;
  /** Memtable entries before it is flushed to a table (default 1,000,000). */
  readonly maxMemTableSize: number;
  /** Largest accepted event (data + metadata) in bytes (default 4 MiB). */
  readonly maxEventSizeBytes: number;
  /** Size of the stream existence bloom filter in bytes. */
  readonly streamExistenceFilterSizeBytes: number;
  /** Candidates walked per stream on a hash collision before giving up (default 100). */
  readonly hashCollisionReadLimit: number;
  /** Scavenging: do not merge small scavenged chunks (default false). */
  readonly disableScavengeMerging?: boolean;
  /** Scavenge database page size in bytes (default 16 KiB). */
  readonly scavengeBackendPageSizeBytes?: number;
  /** Scavenge database cache size in bytes (default 64 MiB). */
  readonly scavengeBackendCacheSizeBytes?: number;
  /** Stream hashes remembered for collision checks during accumulation (default 100,000). */
  readonly scavengeHashUsersCacheCapacity?: number;
}

/** Called once when the engine hits a condition it must not continue from (fsync failure, corruption). */
export type FatalHandler = (err: Error) => void;

export type { ScavengeHandle, ScavengeListener, ScavengeParams, ScavengeOutcome, ScavengeResult } from './scavenge/scavenge-types.js';

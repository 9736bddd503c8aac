/**
 * The storage engine facade: the only storage module imported from outside storage/.
 *
 * Data flow of a write: append() validates and queues a request -> the writer loop takes every
 * queued request (group commit), decides each against the stream state as of the writes before
 * it (append-decision.ts), encodes all records into one buffer, writes it to the active chunk,
 * fdatasyncs it, moves writer.chk and fsyncs that, and only then adds the entries to the index,
 * updates the caches, notifies listeners and resolves the promises. A failed write or fsync is
 * fatal: the node stops instead of acknowledging anything it cannot guarantee.
 *
 * Reads go through the index (stream reads) or walk the log (reads of $all), never past writer.chk.
 */
import type { Logger } from 'pino';
import path from 'node:path';
import fs from 'node:fs';
import { EventDbError, FatalError, assert } from '../errors.js';
import {
  ExpectedVersion, TOMBSTONE_EVENT_NUMBER,
  type AllPosition, type AppendResult, type CommittedWrite, type EngineStats, type EventDb, type EventDbOptions,
  type FatalHandler, type NewEvent, type ReadAllResult, type ReadDirection, type ReadEventResult, type ReadStreamResult,
  type RecordedEvent, type StreamMetadata, type StreamState,
} from './event-db-types.js';
import { ChunkRegistry } from './chunk/chunk-registry.js';
import { DirectoryChunkStorage, MemoryChunkStorage, type ChunkStorage } from './chunk/chunk-storage.js';
import { FileCheckpoint, MemoryCheckpoint, type Checkpoint } from './checkpoint/checkpoint.js';
import { LogReader } from './reader/log-reader.js';
import { PrepareFlags, RecordType, SystemRecordType, type PrepareRecord } from './format/record.js';
import { decideAppend, type StreamWriteState } from './append-decision.js';
import { LogWriterThread } from './writer/log-writer-thread.js';
import { encodeGroup, plannedSizeBytes, type EncodedGroup, type PlannedRecordGroup } from './writer/write-batch.js';
import {
  EMPTY_METADATA, METADATA_EVENT_TYPE, SOFT_DELETED_TRUNCATE_BEFORE, TOMBSTONE_EVENT_TYPE, firstVisibleEventNumber,
  isExpired, isMetastream, isSoftDeleted, isTombstonePrepare, metastreamOf, originalStreamOf, parseStreamMetadata,
} from './stream-metadata.js';
import { APPEND_EVENT_COUNT_MAX, CHUNK_HEADER_SIZE_BYTES, INDEX_REPLAY_BYTES_MAX, EVENT_TYPE_BYTES_MAX, STREAM_NAME_BYTES_MAX, WRITE_BATCH_BYTES_MAX } from './limits.js';
import { isUuid, utf8LengthBytes } from './format/binary.js';
import type { IndexEntry, StreamHasher, StreamIndex } from './index/stream-index-port.js';
import { ioCounters } from '../platform/block-file.js';
import { lockDatabaseDirectories, type DirectoryLock } from '../platform/directory-lock.js';
import { BoundedCache } from './bounded-cache.js';
import { openIndexForEngine } from './index-adapter.js';
import {
  SCAVENGE_POINT_EVENT_TYPE, SCAVENGE_POINTS_STREAM,
  type ScavengeHandle, type ScavengeListener, type ScavengeParams, type ScavengePoint, type ScavengeState,
} from './scavenge/scavenge-types.js';
import { runScavenge } from './scavenge/scavenger.js';
import type { ScavengeAccess } from './scavenge/scavenge-access.js';
import { createMemoryScavengeStore, openMemoryScavengeState } from './scavenge/memory-scavenge-state.js';
import { SCAVENGE_STATE_DIRECTORY, openSqliteScavengeState } from './scavenge/sqlite-scavenge-state.js';
import { ChunkSummaryNotes, DirectoryChunkSummaryStore, MemoryChunkSummaryStore, type ChunkSummaryStore } from './chunk/chunk-summary.js';
import type { ExistenceFilter } from './index-adapter.js';

export interface EventDbDeps {
  readonly log: Logger;
  readonly onFatal: FatalHandler;
  /** Tests force hash collisions with their own hasher. */
  readonly hasher?: StreamHasher;
  /** Clock in ms since the epoch; injectable for $maxAge tests. */
  readonly nowMs?: () => number;
  /** Where chunk files live; tests inject failing storage. Default: options.dbPath or memory. */
  readonly chunkStorage?: ChunkStorage;
  /**
   * Seal and write batches on the log writer thread (default: yes for chunk files, whenever the
   * compiled worker module exists). false keeps every write on the main thread.
   */
  readonly logWriterThread?: boolean;
}

type WriteRequest = {
  readonly build: (ctx: BatchContext) => PlannedRecordGroup[] | AppendResult;
  /** The write must start a chunk of its own (a scavenge point completes the active chunk). */
  readonly requiresFreshChunk?: boolean;
  readonly resolve: (r: AppendResult) => void;
  readonly reject: (e: unknown) => void;
};

/** A batch written to the chunk whose data fsync may still be running. */
interface InflightBatch {
  readonly ctx: BatchContext;
  readonly encoded: { outcome: QueuedOutcome; groups: EncodedGroup[] }[];
  readonly outcomes: readonly QueuedOutcome[];
  readonly endPosition: number;
  readonly sizeBytes: number;
  readonly startedMs: number;
  /** Its data fsync finished. */
  durable: boolean;
  /** writer.chk over it was written with its data (log writer thread), not by commitPipeline. */
  readonly checkpointed: boolean;
}

/**
 * Batches written but not yet applied. Inline, their data fsyncs run at once (the disk overlaps
 * concurrent flushes). With the log writer thread they queue to it, so the main thread decides
 * and encodes the next batches while one is flushed; 4 measured best (2: -10 to -15%).
 */
const PIPELINE_BATCHES_MAX_INLINE = 2;
const PIPELINE_BATCHES_MAX_THREAD = 4;

/**
 * A batch closes once it holds this much, so that under heavy load the next batch is encoded
 * while this one flushes (a single huge batch would leave the disk idle during encoding).
 */
const GROUP_COMMIT_BYTES_TARGET = 1024 * 1024;

/** Size of a reused batch buffer: the group-commit target plus slack (a larger single write gets one of its own size). */
const BATCH_BUFFER_BYTES = GROUP_COMMIT_BYTES_TARGET + 64 * 1024;

/**
 * Next chunk files are zero-filled ahead only while the recent flushes average less than this.
 * Measured here: the zero-fill shortens a 16 KiB fdatasync by about a third, but with 1 KiB
 * events in batches of 100 it cost 45-80% of the append bandwidth (every byte written twice).
 */
const PREALLOCATE_FLUSH_BYTES_MAX = 256 * 1024;

/** Weight of the newest flush in the moving mean of flush sizes. */
const RECENT_FLUSH_WEIGHT = 1 / 16;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

interface QueuedOutcome {
  readonly request: WriteRequest;
  readonly groups: readonly PlannedRecordGroup[];
  /** The result to answer with once the batch is durable (positions filled in after encoding). */
  readonly result: AppendResult;
}

/** Stream state as of the writes already placed in the batch being formed. */
class BatchContext {
  readonly lastNumbers = new Map<string, number>();
  readonly metadata = new Map<string, { version: number; metadata: StreamMetadata }>();
  readonly ids = new Map<string, Map<number, string>>();
  readonly recentIds = new Map<string, { stream: string; eventNumber: number }>();
  /**
   * @param inflight contexts of batches already written but not yet applied (newest last):
   * their effects are not in the committed caches yet, so lookups consult them first.
   */
  constructor(readonly engine: Engine, private readonly inflight: readonly BatchContext[]) {}

  private fromInflight<T>(get: (c: BatchContext) => T | undefined): T | undefined {
    for (let i = this.inflight.length - 1; i >= 0; i--) {
      const v = get(this.inflight[i]!);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  lastEventNumber(stream: string): number {
    return this.lastNumbers.get(stream) ?? this.fromInflight((c) => c.lastNumbers.get(stream)) ?? this.engine.committedLastEventNumber(stream);
  }
  streamMetadata(stream: string): { version: number; metadata: StreamMetadata } {
    return this.metadata.get(stream) ?? this.fromInflight((c) => c.metadata.get(stream)) ?? this.engine.committedMetadata(stream);
  }
  writeState(stream: string): StreamWriteState {
    const last = this.lastEventNumber(stream);
    const softDeleted = !isMetastream(stream) && isSoftDeleted(this.streamMetadata(stream).metadata);
    return { lastEventNumber: last, softDeleted };
  }
  idAt(stream: string, eventNumber: number): string | undefined {
    return this.ids.get(stream)?.get(eventNumber) ?? this.fromInflight((c) => c.ids.get(stream)?.get(eventNumber))
      ?? this.engine.committedEventId(stream, eventNumber);
  }
  recentNumberOf(stream: string, eventId: string): number | undefined {
    const hit = this.recentIds.get(eventId) ?? this.fromInflight((c) => c.recentIds.get(eventId)) ?? this.engine.recentEventIds.get(eventId);
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

export class Engine implements EventDb {
  private queue: WriteRequest[] = [];
  private writing = false;
  private failed: Error | undefined;
  private closed = false;
  /** End of the log as written and fsynced by the writer (positions of new records start here). */
  private writerPos: number;
  /** End of the log covered by writer.chk and applied to the index: what readers may see. */
  private committedPos: number;
  /**
   * Batches written but not yet applied, in log order (see writeBatch / commitPipeline); their
   * contexts are the overlay later batches are decided against.
   */
  private readonly pipeline: InflightBatch[] = [];
  private committing = false;
  private batchScratch = Buffer.allocUnsafe(BATCH_BUFFER_BYTES);
  /** Seals and writes batches on the second core (chunk files only); see log-writer-thread.ts. */
  private readonly writerThread: LogWriterThread | undefined;
  /** What scavenge accumulation needs of the active chunk, noted as it is written (chunk-summary.ts). */
  private summaryNotes: ChunkSummaryNotes;
  private readonly summaryStore: ChunkSummaryStore;
  /** Resolved whenever the pipeline shrinks (writer backpressure and drains wait on it). */
  private pipelineProgress: { promise: Promise<void>; resolve: () => void } = deferred();
  /** Serialises writer.chk updates made outside the pipeline (chunk rollover). */
  private checkpointTail: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<(w: CommittedWrite) => void>();
  private readonly lastNumberCache = new BoundedCache<string, number>(200_000);
  private readonly metadataCache = new BoundedCache<string, { version: number; metadata: StreamMetadata }>(100_000);
  readonly recentEventIds = new BoundedCache<string, { stream: string; eventNumber: number }>(100_000);
  private readonly reader: LogReader;
  private readonly hasher: StreamHasher;
  private readonly nowMs: () => number;
  private chaserTimer: NodeJS.Timeout | undefined;
  /** The lock on the data (and index) directory, released last at close; none with --mem-db. */
  directoryLock: DirectoryLock | undefined;
  private readonly flushStats = { last: 0, total: 0, max: 0, count: 0, lastDelayMs: 0, totalDelayMs: 0, maxDelayMs: 0, recentMeanBytes: 0 };
  private readonly cacheStats = { cachedRecord: 0, notCachedRecord: 0, cachedStreamInfo: 0, notCachedStreamInfo: 0, hashCollisions: 0 };

  constructor(
    private readonly options: EventDbOptions,
    private readonly deps: EventDbDeps,
    private readonly registry: ChunkRegistry,
    private readonly index: StreamIndex,
    private readonly checkpoints: EngineCheckpoints,
    hasher: StreamHasher,
    private readonly existence: ExistenceFilter,
  ) {
    this.hasher = hasher;
    this.nowMs = deps.nowMs ?? Date.now;
    this.writerThread = options.memDb || deps.logWriterThread === false ? undefined : LogWriterThread.start(deps.log.child({ component: 'log-writer' }));
    this.writerPos = Math.max(checkpoints.writer.read(), registry.active.startPosition);
    this.committedPos = this.writerPos;
    this.summaryStore = options.memDb
      ? new MemoryChunkSummaryStore()
      : new DirectoryChunkSummaryStore(path.join(options.indexPath, SCAVENGE_STATE_DIRECTORY, 'chunk-summaries'),
        (err, file) => deps.log.warn({ err, file }, 'could not save a chunk summary (accumulation will read the chunk)'));
    // The chunk active at start-up may hold records written before: no summary for it.
    this.summaryNotes = new ChunkSummaryNotes(registry.active.header.chunkStartNumber, this.writerPos === registry.active.startPosition);
    this.reader = new LogReader(registry, () => this.committedPos);
  }

  get writerPosition(): number {
    return this.writerPos;
  }

  // ---------------------------------------------------------------- start-up

  /**
   * Brings the index and the stream existence filter up to the writer checkpoint, reading only
   * the log past the older of the two (never the whole log after a clean shutdown).
   */
  catchUpIndex(): { records: number; fromPosition: number } {
    const indexFrom = this.index.addedLogPosition;
    const existenceFrom = Math.min(this.existence.coveredLogPosition, this.writerPos);
    const from = Math.min(indexFrom, existenceFrom);
    let pending: IndexEntry[] = [];
    let records = 0;
    this.reader.scan(from, this.writerPos, (record, nextPosition) => {
      records += 1;
      if (record.type === RecordType.Prepare) {
        if (record.logPosition >= existenceFrom) this.existence.add(record.stream);
        if (record.logPosition >= indexFrom) {
          pending.push({ streamHash: this.hasher(record.stream), eventNumber: record.eventNumber, logPosition: record.logPosition });
        }
      } else if (record.type === RecordType.Commit && record.logPosition >= indexFrom) {
        this.index.add(pending, nextPosition);
        pending = [];
      }
    });
    // Prepares without a commit below writer.chk cannot happen: a batch is durable whole or not at all.
    assert(pending.length === 0, `log ends with ${pending.length} uncommitted records below the writer checkpoint`);
    if (this.writerPos > this.existence.coveredLogPosition) this.existence.advance(this.writerPos);
    return { records, fromPosition: from };
  }

  startBackgroundWork(): void {
    this.chaserTimer = setInterval(() => void this.writeChaser(), 1000);
    this.chaserTimer.unref();
  }

  private async writeChaser(): Promise<void> {
    const position = this.index.addedLogPosition;
    if (this.failed || position === this.checkpoints.chaser.read()) return;
    try {
      await this.checkpoints.chaser.write(position);
    } catch (err: unknown) {
      this.fail(err);
    }
  }

  /** The number of the epoch whose record is at `epochPosition` (-1 when none or unreadable). */
  readEpochNumber(epochPosition: number): number {
    if (epochPosition < 0) return -1;
    const r = this.registry.readRecord(epochPosition, this.committedPos);
    if (r.kind !== 'record' || r.record.type !== RecordType.System) return -1;
    try {
      const parsed = JSON.parse(r.record.data.toString('utf8')) as { epochNumber?: unknown };
      return typeof parsed.epochNumber === 'number' ? parsed.epochNumber : -1;
    } catch {
      return -1;
    }
  }

  async writeEpoch(): Promise<void> {
    const epochNumber = this.checkpoints.epochNumber + 1;
    const data = Buffer.from(JSON.stringify({ epochNumber, epochPosition: this.writerPos, prevEpochPosition: this.checkpoints.epoch.read(), timeStamp: new Date(this.nowMs()).toISOString() }));
    const result = await this.enqueue(() => [{ kind: 'system', systemRecordType: SystemRecordType.Epoch, data }]);
    if (result.kind === 'success') {
      await this.checkpoints.epoch.write(result.commitPosition);
      this.checkpoints.epochNumber = epochNumber;
    }
  }

  // ---------------------------------------------------------------- writes

  async append(stream: string, expectedVersion: number, events: readonly NewEvent[]): Promise<AppendResult> {
    this.validateWrite(stream, expectedVersion, events);
    return this.enqueue((ctx) => this.buildAppend(ctx, stream, expectedVersion, events));
  }

  async deleteStream(stream: string, expectedVersion: number, hard: boolean): Promise<AppendResult> {
    this.validateWrite(stream, expectedVersion, []);
    return this.enqueue((ctx) => this.buildDelete(ctx, stream, expectedVersion, hard));
  }

  setStreamMetadata(stream: string, expectedVersion: number, raw: Record<string, unknown>, eventId?: string): Promise<AppendResult> {
    const event: NewEvent = {
      eventId: eventId ?? crypto.randomUUID(), eventType: METADATA_EVENT_TYPE,
      data: Buffer.from(JSON.stringify(raw)), metadata: Buffer.alloc(0), isJson: true,
    };
    return this.append(metastreamOf(stream), expectedVersion, [event]);
  }

  /**
   * Writes a scavenge point: completes the active chunk (so everything before the point is in
   * completed chunks), then writes `$scavengePoint` #expectedNumber at the start of a new chunk.
   */
  async writeScavengePoint(threshold: number): Promise<AppendResult> {
    const stream = SCAVENGE_POINTS_STREAM;
    const event: NewEvent = {
      eventId: crypto.randomUUID(), eventType: SCAVENGE_POINT_EVENT_TYPE, isJson: true, metadata: Buffer.alloc(0),
      data: Buffer.from(JSON.stringify(threshold === 0 ? {} : { threshold })),
    };
    this.validateWrite(stream, ExpectedVersion.Any, [event]);
    return this.enqueue((ctx) => this.buildAppend(ctx, stream, ExpectedVersion.Any, [event]), true);
  }

  private validateWrite(stream: string, expectedVersion: number, events: readonly NewEvent[]): void {
    if (this.closed) throw new EventDbError('EDB_CLOSED', 'the database is shutting down', { httpStatus: 503 });
    if (stream.length === 0) throw badRequest('stream name must not be empty');
    if (Buffer.byteLength(stream) > STREAM_NAME_BYTES_MAX) throw badRequest(`stream name is longer than ${STREAM_NAME_BYTES_MAX} bytes`);
    if (stream === '$all') throw badRequest('cannot write to $all');
    if (!Number.isSafeInteger(expectedVersion) || expectedVersion < -4 || expectedVersion === -3) {
      throw badRequest(`invalid expected version ${expectedVersion}`);
    }
    if (events.length > APPEND_EVENT_COUNT_MAX) throw badRequest(`an append may carry at most ${APPEND_EVENT_COUNT_MAX} events`);
    let total = 0;
    for (const e of events) {
      if (!isUuid(e.eventId)) throw badRequest(`event id '${e.eventId}' is not a UUID`);
      if (e.eventType.length === 0) throw badRequest('event type must not be empty');
      if (utf8LengthBytes(e.eventType) > EVENT_TYPE_BYTES_MAX) throw badRequest(`event type is longer than ${EVENT_TYPE_BYTES_MAX} bytes`);
      const size = e.data.length + e.metadata.length;
      if (size > this.options.maxEventSizeBytes) {
        throw new EventDbError('EDB_EVENT_TOO_LARGE', `event ${e.eventId} is ${size} bytes; the limit is ${this.options.maxEventSizeBytes}`, { httpStatus: 400 });
      }
      total += size + 256;
    }
    if (total > Math.min(WRITE_BATCH_BYTES_MAX, this.options.chunkSizeBytes - CHUNK_HEADER_SIZE_BYTES - 256)) {
      throw new EventDbError('EDB_APPEND_TOO_LARGE', `append of ${total} bytes does not fit one write`, { httpStatus: 400 });
    }
  }

  private buildAppend(ctx: BatchContext, stream: string, expectedVersion: number, events: readonly NewEvent[]): PlannedRecordGroup[] | AppendResult {
    if (isMetastream(stream) && ctx.lastEventNumber(originalStreamOf(stream)) === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
    const state = ctx.writeState(stream);
    const decision = decideAppend(state, expectedVersion, events.map((e) => e.eventId), {
      idAt: (n) => ctx.idAt(stream, n),
      recentNumberOf: (id) => ctx.recentNumberOf(stream, id),
    });
    switch (decision.kind) {
      case 'stream-deleted': return { kind: 'stream-deleted' };
      case 'wrong-expected-version': return { kind: 'wrong-expected-version', currentVersion: state.lastEventNumber };
      case 'idempotent':
        return { kind: 'success', firstEventNumber: decision.firstEventNumber, lastEventNumber: decision.lastEventNumber, commitPosition: -1, idempotent: true };
      case 'write': break;
    }
    const groups: PlannedRecordGroup[] = [];
    if (decision.recreate) groups.push(this.planRecreate(ctx, stream, decision.firstEventNumber));
    if (events.length === 0) {
      return { kind: 'success', firstEventNumber: decision.firstEventNumber, lastEventNumber: decision.firstEventNumber - 1, commitPosition: -1, idempotent: false };
    }
    const planned = events.map((event, i) => ({
      event, eventNumber: decision.firstEventNumber + i, flags: PrepareFlags.Data | PrepareFlags.IsCommitted | (event.isJson ? PrepareFlags.IsJson : 0),
    }));
    groups.push({ kind: 'events', stream, events: planned });
    return groups;
  }

  /** A write to a soft-deleted stream sets `$tb` to its first new event (EventStoreDB's undelete). */
  private planRecreate(ctx: BatchContext, stream: string, firstEventNumber: number): PlannedRecordGroup {
    const meta = ctx.streamMetadata(stream);
    const raw = { ...meta.metadata.raw, $tb: firstEventNumber };
    return this.planMetadataWrite(ctx, stream, meta.version, raw);
  }

  private planMetadataWrite(ctx: BatchContext, stream: string, metaVersion: number, raw: Record<string, unknown>): PlannedRecordGroup {
    const metastream = metastreamOf(stream);
    const event: NewEvent = { eventId: crypto.randomUUID(), eventType: METADATA_EVENT_TYPE, data: Buffer.from(JSON.stringify(raw)), metadata: Buffer.alloc(0), isJson: true };
    const planned = [{ event, eventNumber: Math.max(metaVersion, ctx.lastEventNumber(metastream)) + 1, flags: PrepareFlags.Data | PrepareFlags.IsCommitted | PrepareFlags.IsJson }];
    return { kind: 'events', stream: metastream, events: planned };
  }

  private buildDelete(ctx: BatchContext, stream: string, expectedVersion: number, hard: boolean): PlannedRecordGroup[] | AppendResult {
    const state = ctx.writeState(stream);
    if (state.lastEventNumber === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
    const decision = decideAppend(state, expectedVersion, [], { idAt: () => undefined, recentNumberOf: () => undefined });
    if (decision.kind === 'wrong-expected-version') return { kind: 'wrong-expected-version', currentVersion: state.lastEventNumber };
    if (decision.kind !== 'write') return { kind: 'stream-deleted' };
    if (!hard && state.lastEventNumber === -1 && ctx.streamMetadata(stream).version === -1) {
      // Nothing to delete: EventStoreDB answers wrong expected version (current -1).
      return { kind: 'wrong-expected-version', currentVersion: -1 };
    }
    if (!hard) {
      const meta = ctx.streamMetadata(stream);
      const raw = { ...meta.metadata.raw, $tb: SOFT_DELETED_TRUNCATE_BEFORE };
      return [this.planMetadataWrite(ctx, stream, meta.version, raw)];
    }
    const event: NewEvent = { eventId: crypto.randomUUID(), eventType: TOMBSTONE_EVENT_TYPE, data: Buffer.alloc(0), metadata: Buffer.alloc(0), isJson: false };
    const planned = [{ event, eventNumber: TOMBSTONE_EVENT_NUMBER, flags: PrepareFlags.StreamDelete | PrepareFlags.IsCommitted }];
    return [{ kind: 'events', stream, events: planned }];
  }

  private enqueue(build: WriteRequest['build'], requiresFreshChunk = false): Promise<AppendResult> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ build, resolve, reject, requiresFreshChunk });
      if (!this.writing) {
        // Start on the next turn of the event loop: every append arriving in this turn (all the
        // writers woken by one acknowledgement, all the requests read in one poll) joins the batch.
        this.writing = true;
        setImmediate(() => void this.runWriter());
      }
    });
  }

  /**
   * The single writer loop. Each batch is one write and one fdatasync of the chunk; the loop goes
   * on to the next batch while it flushes (see writeBatch), and the commit pipeline moves
   * writer.chk and applies batches in log order (see commitPipeline). Nothing is acknowledged
   * before its writer.chk is durable. A chunk rollover first drains the pipeline.
   */
  private async runWriter(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0 && !this.failed) {
        const startedMs = performance.now();
        const batch = this.formBatch();
        if (batch.outcomes.length === 0 && batch.needsNewChunk) {
          await this.drainPipeline();
          await this.checkpointTail;
          const completed = this.registry.active;
          await this.registry.completeActiveAndStartNext();
          this.writerPos = this.registry.active.startPosition;
          const summary = this.summaryNotes.finish(completed.header.chunkId, completed.physicalDataSizeBytes, this.registry.active.header.chunkStartNumber);
          if (summary) void this.summaryStore.save(summary);
          const pos = this.writerPos;
          this.checkpointTail = this.checkpointTail.then(() => this.checkpoints.writer.write(pos)).then(() => { this.committedPos = Math.max(this.committedPos, pos); });
          await this.checkpointTail;
          continue;
        }
        await this.writeBatch(batch, startedMs);
      }
    } catch (err: unknown) {
      this.fail(err);
    } finally {
      this.writing = false;
    }
  }

  private formBatch(): { outcomes: QueuedOutcome[]; needsNewChunk: boolean; sizeBytes: number; ctx: BatchContext } {
    const ctx = new BatchContext(this, this.pipeline.map((b) => b.ctx));
    const outcomes: QueuedOutcome[] = [];
    const active = this.registry.active;
    const spaceBytes = active.endPosition - this.writerPos;
    let sizeBytes = 0;
    while (this.queue.length > 0) {
      const request = this.queue[0]!;
      if (request.requiresFreshChunk === true) {
        if (outcomes.length > 0) return { outcomes, needsNewChunk: false, sizeBytes, ctx };
        if (this.writerPos > active.startPosition) return { outcomes, needsNewChunk: true, sizeBytes, ctx };
      }
      let built: PlannedRecordGroup[] | AppendResult;
      try {
        built = request.build(ctx);
      } catch (err: unknown) {
        this.queue.shift();
        request.reject(err);
        continue;
      }
      if (!Array.isArray(built)) {
        this.queue.shift();
        if (built.kind === 'success' && built.idempotent) outcomes.push({ request, groups: [], result: built });
        else if (built.kind === 'success') outcomes.push({ request, groups: [], result: { ...built, commitPosition: this.writerPos } });
        else request.resolve(built);
        continue;
      }
      const size = built.reduce((n, g) => n + plannedSizeBytes(g), 0);
      if (sizeBytes + size > spaceBytes || (sizeBytes > 0 && sizeBytes + size > GROUP_COMMIT_BYTES_TARGET)) {
        // The request stays queued and is decided again, against a fresh context, next batch.
        return { outcomes, needsNewChunk: sizeBytes + size > spaceBytes, sizeBytes, ctx };
      }
      this.queue.shift();
      sizeBytes += size;
      // Only an accepted request's effects enter the context: a request that did not fit is
      // decided again next batch, and must not find its own ids "already written".
      for (const g of built) if (g.kind === 'events') ctx.place(g.stream, g.events);
      outcomes.push({ request, groups: built, result: { kind: 'success', firstEventNumber: 0, lastEventNumber: 0, commitPosition: 0, idempotent: false } });
    }
    return { outcomes, needsNewChunk: false, sizeBytes, ctx };
  }

  private async writeBatch(batch: { outcomes: QueuedOutcome[]; sizeBytes: number; ctx: BatchContext }, startedMs: number): Promise<void> {
    // With the log writer thread the batch goes into a buffer of its own that moves to the
    // thread (and comes back for reuse once written). Without it, the batch is in the file
    // before appendDurably returns, so one scratch buffer serves every batch. Either way no
    // fresh megabyte per batch for the GC to account and the kernel to fault in.
    const thread = this.writerThread;
    let buf: Buffer;
    if (thread && batch.sizeBytes > 0) {
      buf = thread.takeBuffer(Math.max(batch.sizeBytes, BATCH_BUFFER_BYTES)).subarray(0, batch.sizeBytes);
    } else {
      if (this.batchScratch.length < batch.sizeBytes) {
        this.batchScratch = Buffer.allocUnsafe(Math.max(batch.sizeBytes, Math.min(2 * this.batchScratch.length, WRITE_BATCH_BYTES_MAX)));
      }
      buf = this.batchScratch.subarray(0, batch.sizeBytes);
    }
    const nowMs = this.nowMs();
    let offset = 0;
    const encoded: { outcome: QueuedOutcome; groups: EncodedGroup[] }[] = [];
    for (const outcome of batch.outcomes) {
      const groups: EncodedGroup[] = [];
      for (const g of outcome.groups) {
        const group = encodeGroup(buf, offset, this.writerPos + offset, g, nowMs);
        groups.push(group);
        this.noteForSummary(group, nowMs);
        offset += group.sizeBytes;
      }
      encoded.push({ outcome, groups });
    }
    assert(offset === batch.sizeBytes, `batch encoded ${offset} bytes, planned ${batch.sizeBytes}`);
    let durable: Promise<void> = Promise.resolve();
    let checkpointed = false;
    if (offset > 0) {
      const active = this.registry.active;
      assert(active.startPosition + active.physicalDataSizeBytes === this.writerPos, 'active chunk end matches the writer position');
      // With the thread, writer.chk over this batch is written there too, right after its data is
      // durable: no hop back to this thread and out to libuv's pool on the commit path.
      const handover = thread ? this.checkpoints.writer.reserve?.(this.writerPos + offset) : undefined;
      checkpointed = handover !== undefined;
      durable = active.appendDurably(buf, thread, handover).then(() => handover?.landed()).catch((err: unknown) => {
        throw err instanceof FatalError ? err : new FatalError('EDB_WRITE_FAILED', `write to ${active.file.path} failed`, { cause: err });
      });
      this.writerPos += offset;
    }
    const inflight: InflightBatch = {
      ctx: batch.ctx, encoded, outcomes: batch.outcomes, endPosition: this.writerPos, sizeBytes: offset, startedMs, durable: false, checkpointed,
    };
    this.pipeline.push(inflight);
    durable.then(
      () => { inflight.durable = true; void this.commitPipeline(); },
      (err: unknown) => this.fail(err),
    );
    // Backpressure: a bounded number of batches fsyncing at once.
    const pipelineMax = thread ? PIPELINE_BATCHES_MAX_THREAD : PIPELINE_BATCHES_MAX_INLINE;
    while (this.pipeline.length >= pipelineMax && !this.failed) await this.pipelineProgress.promise;
  }

  /** Notes a write's stream and time, and where its metadata records or tombstone are (chunk-summary.ts). */
  private noteForSummary(group: EncodedGroup, nowMs: number): void {
    const events = group.events;
    if (events.length === 0) return;
    const notes = this.summaryNotes;
    const chunkNumber = Math.floor(events[0]!.logPosition / this.options.chunkSizeBytes);
    if (notes.chunkNumber !== chunkNumber) {
      // Never expected (batches do not span chunks); if it happens, no summary for this chunk.
      this.summaryNotes = new ChunkSummaryNotes(chunkNumber, false);
      return;
    }
    const stream = events[0]!.stream;
    notes.noteWrite(stream, nowMs);
    const metadata = isMetastream(stream);
    for (const e of events) {
      if (metadata || isTombstonePrepare(e.flags, e.eventNumber)) notes.notePosition(e.logPosition);
    }
  }

  /**
   * Moves writer.chk over every batch whose data is durable, in log order, and applies them.
   * Data fsyncs of consecutive batches overlap; one writer.chk update covers all the batches
   * that became durable while the previous update was being fsynced.
   */
  private async commitPipeline(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    try {
      while (!this.failed && this.pipeline[0]?.durable === true) {
        let n = 0;
        while (n < this.pipeline.length && this.pipeline[n]!.durable) n++;
        const batches = this.pipeline.slice(0, n);
        const end = batches[n - 1]!.endPosition;
        if (batches.some((b) => b.sizeBytes > 0 && !b.checkpointed)) {
          // Ordered after any rollover checkpoint write.
          await this.checkpointTail;
          await this.checkpoints.writer.write(end);
        }
        if (this.failed) return;
        this.committedPos = end;
        for (const b of batches) {
          this.recordFlush(b.sizeBytes, performance.now() - b.startedMs);
          this.applyCommitted(b.encoded);
        }
        this.pipeline.splice(0, n);
        this.signalPipelineProgress();
      }
    } catch (err: unknown) {
      this.fail(err);
    } finally {
      this.committing = false;
    }
  }

  private signalPipelineProgress(): void {
    const current = this.pipelineProgress;
    this.pipelineProgress = deferred();
    current.resolve();
  }

  /** Waits until every written batch is applied (or the engine failed). */
  private async drainPipeline(): Promise<void> {
    while (this.pipeline.length > 0 && !this.failed) await this.pipelineProgress.promise;
  }

  /** Everything in the batch is durable: index it, update caches, tell listeners, answer. */
  private applyCommitted(encoded: { outcome: QueuedOutcome; groups: EncodedGroup[] }[]): void {
    const entries: IndexEntry[] = [];
    const writes: CommittedWrite[] = [];
    for (const { groups } of encoded) {
      for (const g of groups) {
        const first = g.events[0];
        if (!first) continue;
        const streamHash = this.hasher(first.stream); // one stream per write: hash it once
        for (const e of g.events) entries.push({ streamHash, eventNumber: e.eventNumber, logPosition: e.logPosition });
      }
    }
    this.index.add(entries, this.committedPos);
    this.flushIndexIfFarBehind();
    for (const { groups } of encoded) for (const g of groups) if (g.events[0]) this.existence.add(g.events[0].stream);
    this.existence.advance(this.committedPos);
    for (const { outcome, groups } of encoded) {
      let result = outcome.result;
      for (const g of groups) {
        const first = g.events[0];
        const last = g.events[g.events.length - 1];
        if (!first || !last) {
          result = { kind: 'success', firstEventNumber: -1, lastEventNumber: -1, commitPosition: g.commitPosition, idempotent: false };
          continue;
        }
        this.noteCommitted(first.stream, g);
        writes.push({ stream: first.stream, firstEventNumber: first.eventNumber, lastEventNumber: last.eventNumber, commitPosition: g.commitPosition });
        result = { kind: 'success', firstEventNumber: first.eventNumber, lastEventNumber: last.eventNumber, commitPosition: g.commitPosition, idempotent: false };
      }
      outcome.request.resolve(result);
    }
    for (const w of writes) for (const l of this.listeners) l(w);
  }

  private indexFlushRunning = false;

  private existencePersistRunning = false;

  /**
   * Keeps crash recovery short: the log past the durable index tables, and past the persisted
   * stream existence filter, stays under a bound.
   */
  private flushIndexIfFarBehind(): void {
    if (this.options.memDb) return;
    const chunkAt = (position: number): ChunkExtent | undefined => this.registry.chunkAt(position);
    if (!this.existencePersistRunning && replayLogBytes(this.existence.checkpoint, this.committedPos, chunkAt) >= INDEX_REPLAY_BYTES_MAX) {
      this.existencePersistRunning = true;
      this.existence.persist().then(() => { this.existencePersistRunning = false; }, (err: unknown) => this.fail(err));
    }
    if (this.indexFlushRunning) return;
    if (replayLogBytes(this.index.persistedLogPosition, this.committedPos, chunkAt) < INDEX_REPLAY_BYTES_MAX) return;
    this.indexFlushRunning = true;
    this.index.flush().then(
      () => { this.indexFlushRunning = false; },
      (err: unknown) => this.fail(err),
    );
  }

  private noteCommitted(stream: string, g: EncodedGroup): void {
    const last = g.events[g.events.length - 1]!;
    this.lastNumberCache.set(stream, last.eventNumber);
    const first = g.events[0]!;
    this.recentEventIds.set(first.event.eventId, { stream, eventNumber: first.eventNumber });
    if (isMetastream(stream)) {
      this.metadataCache.set(originalStreamOf(stream), { version: last.eventNumber, metadata: parseStreamMetadata(last.event.data) });
    }
  }

  private recordFlush(sizeBytes: number, delayMs: number): void {
    const s = this.flushStats;
    s.last = sizeBytes; s.total += sizeBytes; s.max = Math.max(s.max, sizeBytes); s.count += 1;
    s.recentMeanBytes = s.count === 1 ? sizeBytes : s.recentMeanBytes + (sizeBytes - s.recentMeanBytes) * RECENT_FLUSH_WEIGHT;
    s.lastDelayMs = delayMs; s.totalDelayMs += delayMs; s.maxDelayMs = Math.max(s.maxDelayMs, delayMs);
  }

  /**
   * Whether the next chunk file is worth zero-filling ahead (ChunkRegistry.prepareNext): yes
   * while recent flushes are small, where fsync latency is what appends wait for; no for bulk
   * writes, where the zero-fill would double the bytes written and steal the second core.
   */
  wantsPreallocation(): boolean {
    // Not while a scavenge runs: its scavenge point starts a chunk, and zero-filling the next one
    // (256 MiB by default) competed with the scavenge's own copies for the disk (the scavenge of
    // a 2 GB log took 0.3-0.65 s longer, almost all of it in execution).
    if (this.runningScavenge !== undefined) return false;
    return this.flushStats.count === 0 || this.flushStats.recentMeanBytes < PREALLOCATE_FLUSH_BYTES_MAX;
  }

  private fail(err: unknown): void {
    if (this.failed) return;
    const error = err instanceof Error ? err : new Error(String(err));
    this.failed = error;
    // Every write not yet acknowledged fails: queued ones and the batches in flight (a failed
    // write or fsync, of data or of writer.chk, may have left any of them not durable).
    for (const r of this.queue.splice(0)) r.reject(error);
    for (const b of this.pipeline.splice(0)) for (const o of b.outcomes) o.request.reject(error);
    this.signalPipelineProgress();
    this.deps.onFatal(error);
  }

  // ---------------------------------------------------------------- committed state lookups

  committedLastEventNumber(stream: string): number {
    const cached = this.lastNumberCache.get(stream);
    if (cached !== undefined) { this.cacheStats.cachedStreamInfo += 1; return cached; }
    this.cacheStats.notCachedStreamInfo += 1;
    if (!this.existence.mightExist(stream)) {
      this.lastNumberCache.set(stream, -1);
      return -1;
    }
    let last = -1;
    let walked = 0;
    for (const entry of this.index.iterateDescending(this.hasher(stream))) {
      if (walked++ >= this.options.hashCollisionReadLimit) break;
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
  private readPrepareAt(logPosition: number): PrepareRecord | undefined {
    this.cacheStats.notCachedRecord += 1;
    const frame = this.registry.readRecord(logPosition, this.committedPos);
    if (frame.kind !== 'record' && this.registry.isScavengedAway(logPosition)) return undefined;
    if (frame.kind !== 'record' || frame.record.type !== RecordType.Prepare) {
      const reason = frame.kind === 'torn' ? frame.reason : frame.kind === 'end' ? 'no record' : 'not an event record';
      throw new FatalError('EDB_INDEX_CORRUPT', `index points at log position ${logPosition} but the log has ${reason} there`);
    }
    return frame.record;
  }

  /** The record of `stream`'s event `eventNumber`, confirming the stream name (hash collisions). */
  private findEventRecord(stream: string, eventNumber: number): PrepareRecord | undefined {
    const candidates = this.index.getRange(this.hasher(stream), eventNumber, eventNumber);
    for (const c of candidates) {
      const record = this.readPrepareAt(c.logPosition);
      if (record === undefined) continue;
      if (record.stream === stream) return record;
      this.cacheStats.hashCollisions += 1;
    }
    return undefined;
  }

  // ---------------------------------------------------------------- reads

  async streamState(stream: string): Promise<StreamState> {
    const last = this.committedLastEventNumber(stream);
    if (last === TOMBSTONE_EVENT_NUMBER) return { kind: 'hard-deleted' };
    if (last === -1) return { kind: 'no-stream' };
    const softDeleted = !isMetastream(stream) && isSoftDeleted(this.committedMetadata(stream).metadata);
    return { kind: 'exists', lastEventNumber: last, softDeleted };
  }

  async getStreamMetadata(stream: string): Promise<{ metadata: StreamMetadata; metastreamVersion: number }> {
    const m = this.committedMetadata(stream);
    return { metadata: m.metadata, metastreamVersion: m.version };
  }

  async readStream(stream: string, fromEventNumber: number, maxCount: number, direction: ReadDirection): Promise<ReadStreamResult> {
    this.checkReadable();
    const view = this.visibleRange(stream);
    if (view.kind !== 'ok') return { kind: view.kind };
    const { last, first, meta } = view;
    const count = Math.max(0, Math.floor(maxCount));
    if (direction === 'forward') {
      const from = Math.max(fromEventNumber, first);
      const to = Math.min(last, from + count - 1);
      const events = this.collectEvents(stream, from, to, meta).reverse();
      const next = Math.min(from + count, last + 1);
      return { kind: 'success', events, lastEventNumber: last, nextEventNumber: next, isEndOfStream: from + count > last };
    }
    const from = fromEventNumber < 0 ? last : Math.min(fromEventNumber, last);
    const to = Math.max(first, from - count + 1);
    const events = from < first ? [] : this.collectEvents(stream, to, from, meta);
    const next = from - count;
    return { kind: 'success', events, lastEventNumber: last, nextEventNumber: next < first ? -1 : next, isEndOfStream: next < first };
  }

  async readEvent(stream: string, eventNumber: number): Promise<ReadEventResult> {
    this.checkReadable();
    const view = this.visibleRange(stream);
    if (view.kind !== 'ok') return { kind: view.kind };
    const n = eventNumber === -1 ? view.last : eventNumber;
    if (n < view.first || n > view.last) return { kind: 'event-not-found' };
    const [event] = this.collectEvents(stream, n, n, view.meta);
    return event ? { kind: 'success', event } : { kind: 'event-not-found' };
  }

  private visibleRange(stream: string):
    | { kind: 'ok'; last: number; first: number; meta: StreamMetadata }
    | { kind: 'stream-not-found' } | { kind: 'stream-deleted' } {
    const last = this.committedLastEventNumber(stream);
    if (last === TOMBSTONE_EVENT_NUMBER) return { kind: 'stream-deleted' };
    if (last === -1) return { kind: 'stream-not-found' };
    const meta = isMetastream(stream) ? EMPTY_METADATA : this.committedMetadata(stream).metadata;
    if (isSoftDeleted(meta)) return { kind: 'stream-not-found' };
    return { kind: 'ok', last, first: firstVisibleEventNumber(meta, last, isMetastream(stream)), meta };
  }

  /** Events from..to (inclusive), descending, with hash collisions and expired events filtered out. */
  private collectEvents(stream: string, from: number, to: number, meta: StreamMetadata): RecordedEvent[] {
    if (to < from) return [];
    const nowMs = this.nowMs();
    const out: RecordedEvent[] = [];
    let previous = Number.NaN;
    for (const entry of this.index.getRange(this.hasher(stream), from, to)) {
      if (entry.eventNumber === previous) continue;
      const record = this.readPrepareAt(entry.logPosition);
      if (record === undefined) continue;
      if (record.stream !== stream) { this.cacheStats.hashCollisions += 1; continue; }
      previous = entry.eventNumber;
      if (isExpired(meta, record.timestampMs, nowMs)) continue;
      out.push(toRecordedEvent(record));
    }
    return out;
  }

  async readAll(from: AllPosition | undefined, maxCount: number, direction: ReadDirection): Promise<ReadAllResult> {
    this.checkReadable();
    const count = Math.max(0, Math.floor(maxCount));
    const events: RecordedEvent[] = [];
    if (direction === 'forward') {
      let pos = from ? from.preparePosition : 0;
      while (events.length < count) {
        const r = this.reader.readForward(pos);
        if (!r) break;
        pos = r.nextPosition;
        if (r.record.type === RecordType.Prepare) events.push(toRecordedEvent(r.record));
      }
      const isEnd = pos >= this.committedPos || this.reader.readForward(pos) === undefined;
      return { events, nextPosition: { commitPosition: pos, preparePosition: pos }, isEnd };
    }
    let pos = from && from.preparePosition >= 0 ? from.preparePosition : this.committedPos;
    while (events.length < count) {
      const r = this.reader.readBackward(pos);
      if (!r) { pos = 0; break; }
      pos = r.position;
      if (r.record.type === RecordType.Prepare) events.push(toRecordedEvent(r.record));
    }
    return { events, nextPosition: { commitPosition: pos, preparePosition: pos }, isEnd: pos <= 0 || this.reader.readBackward(pos) === undefined };
  }

  private checkReadable(): void {
    if (this.failed) throw this.failed;
  }

  onCommitted(listener: (write: CommittedWrite) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async mergeIndexes(): Promise<void> {
    await this.index.mergeAll();
  }

  // ---------------------------------------------------------------- scavenging

  private runningScavenge: { handle: ScavengeHandle; controller: AbortController } | undefined;
  private memoryScavengeStore: ReturnType<typeof createMemoryScavengeStore> | undefined;

  startScavenge(scavengeId: string, params: ScavengeParams, listener: ScavengeListener): ScavengeHandle {
    if (this.runningScavenge) throw new EventDbError('EDB_SCAVENGE_RUNNING', 'Scavenge is already running', { httpStatus: 400 });
    if (this.closed) throw new EventDbError('EDB_CLOSED', 'the database is shutting down', { httpStatus: 503 });
    const controller = new AbortController();
    const done = runScavenge(this.scavengeAccess(), {
      scavengeId, params, listener, signal: controller.signal, onFatal: (err) => this.fail(err),
    }).finally(() => { this.runningScavenge = undefined; });
    const handle: ScavengeHandle = {
      scavengeId, done,
      stop: async () => { controller.abort(); return done; },
    };
    this.runningScavenge = { handle, controller };
    return handle;
  }

  private scavengeAccess(): ScavengeAccess {
    const o = this.options;
    return {
      log: this.deps.log.child({ component: 'storage.scavenge' }),
      registry: this.registry, index: this.index, hasher: this.hasher, chunkSizeBytes: o.chunkSizeBytes,
      disableMerging: o.disableScavengeMerging ?? false,
      latestScavengePoint: () => this.latestScavengePoint(),
      writeScavengePoint: async (threshold) => {
        const r = await this.writeScavengePoint(threshold);
        if (r.kind !== 'success') throw new FatalError('EDB_INVARIANT', `could not write a scavenge point: ${r.kind}`);
        const point = this.scavengePointAt(r.firstEventNumber);
        assert(point !== undefined, 'the scavenge point just written is readable');
        return point;
      },
      lastEventNumberBefore: (stream, position) => this.lastEventNumberBefore(stream, position),
      openState: () => this.openScavengeState(),
      chunkSummary: (n) => this.summaryStore.load(n),
      dropChunkSummary: (n) => this.summaryStore.drop(n),
    };
  }

  private openScavengeState(): ScavengeState {
    const o = this.options;
    if (o.memDb) {
      // One store for the life of the process; each run opens a handle on it.
      this.memoryScavengeStore ??= createMemoryScavengeStore();
      return openMemoryScavengeState({ store: this.memoryScavengeStore, hashUsersCacheCapacity: o.scavengeHashUsersCacheCapacity ?? 100_000 });
    }
    return openSqliteScavengeState({
      indexPath: o.indexPath, log: this.deps.log.child({ component: 'storage.scavenge.state' }),
      ...(o.scavengeBackendPageSizeBytes !== undefined ? { pageSizeBytes: o.scavengeBackendPageSizeBytes } : {}),
      ...(o.scavengeBackendCacheSizeBytes !== undefined ? { cacheSizeBytes: o.scavengeBackendCacheSizeBytes } : {}),
      ...(o.scavengeHashUsersCacheCapacity !== undefined ? { hashUsersCacheCapacity: o.scavengeHashUsersCacheCapacity } : {}),
    });
  }

  private latestScavengePoint(): ScavengePoint | undefined {
    const last = this.committedLastEventNumber(SCAVENGE_POINTS_STREAM);
    return last >= 0 ? this.scavengePointAt(last) : undefined;
  }

  private scavengePointAt(eventNumber: number): ScavengePoint | undefined {
    const record = this.findEventRecord(SCAVENGE_POINTS_STREAM, eventNumber);
    if (!record) return undefined;
    let threshold = 0;
    try {
      const parsed = JSON.parse(record.data.toString('utf8')) as { threshold?: unknown };
      if (typeof parsed.threshold === 'number' && Number.isInteger(parsed.threshold)) threshold = parsed.threshold;
    } catch {
      // A scavenge point with unreadable data keeps the default threshold.
    }
    return { number: eventNumber, position: record.logPosition, effectiveNowMs: record.timestampMs, threshold };
  }

  /** The stream's last event number among records before `position` (-1 when none). */
  private lastEventNumberBefore(stream: string, position: number): number {
    let walked = 0;
    for (const entry of this.index.iterateDescending(this.hasher(stream))) {
      if (entry.logPosition >= position) continue;
      if (walked++ >= this.options.hashCollisionReadLimit) break;
      const record = this.readPrepareAt(entry.logPosition);
      if (record !== undefined && record.stream === stream) return entry.eventNumber;
    }
    return -1;
  }

  stats(): EngineStats {
    const f = this.flushStats;
    const index = this.index.stats();
    return {
      writerCheckpoint: this.committedPos,
      chaserCheckpoint: this.checkpoints.chaser.read(),
      writer: {
        lastFlushSizeBytes: f.last, meanFlushSizeBytes: f.count ? f.total / f.count : 0, maxFlushSizeBytes: f.max,
        lastFlushDelayMs: f.lastDelayMs, meanFlushDelayMs: f.count ? f.totalDelayMs / f.count : 0, maxFlushDelayMs: f.maxDelayMs,
        queuedFlushMessages: this.queue.length, flushCount: f.count, onWriterThread: this.writerThread !== undefined,
      },
      readIndex: { ...this.cacheStats },
      diskIo: { ...ioCounters },
      index: { memTableEntries: index.memTableEntries, tableCount: index.tableCount },
      chunkCount: this.registry.chunkCount,
    };
  }

  /** Clean shutdown: wait for queued writes, persist the index, close files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.chaserTimer) clearInterval(this.chaserTimer);
    if (this.runningScavenge) await this.runningScavenge.handle.stop().catch(() => undefined);
    for (let i = 0; i < 1000 && (this.writing || this.queue.length > 0) && !this.failed; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await this.drainPipeline();
    await this.checkpointTail.catch(() => undefined);
    if (!this.failed) {
      await this.index.flush();
      await this.writeChaser();
      await this.existence.close();
    }
    await this.index.close();
    await this.registry.close();
    await this.checkpoints.close();
    await this.writerThread?.close();
    this.directoryLock?.release();
  }
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

function badRequest(message: string): EventDbError {
  return new EventDbError('EDB_BAD_REQUEST', message, { httpStatus: 400 });
}

export function toRecordedEvent(r: PrepareRecord): RecordedEvent {
  return {
    stream: r.stream, eventNumber: r.eventNumber, eventId: r.eventId, eventType: r.eventType,
    data: r.data, metadata: r.metadata, isJson: (r.flags & PrepareFlags.IsJson) !== 0,
    createdMs: r.timestampMs, logPosition: r.logPosition, commitPosition: r.logPosition,
  };
}

// -------------------------------------------------------------------- opening

export class EngineCheckpoints {
  epochNumber = -1;
  constructor(
    readonly writer: Checkpoint, readonly chaser: Checkpoint, readonly epoch: Checkpoint,
    readonly proposal: Checkpoint, readonly truncate: Checkpoint,
  ) {}
  async close(): Promise<void> {
    for (const c of [this.writer, this.chaser, this.epoch, this.proposal, this.truncate]) await c.close();
  }
}

async function openCheckpoints(options: EventDbOptions): Promise<EngineCheckpoints> {
  if (options.memDb) {
    return new EngineCheckpoints(new MemoryCheckpoint('writer.chk', 0), new MemoryCheckpoint('chaser.chk', 0),
      new MemoryCheckpoint('epoch.chk', -1), new MemoryCheckpoint('proposal.chk', -1), new MemoryCheckpoint('truncate.chk', -1));
  }
  const dir = options.dbPath;
  return new EngineCheckpoints(
    await FileCheckpoint.open(dir, 'writer.chk', 0), await FileCheckpoint.open(dir, 'chaser.chk', 0),
    await FileCheckpoint.open(dir, 'epoch.chk', -1), await FileCheckpoint.open(dir, 'proposal.chk', -1),
    await FileCheckpoint.open(dir, 'truncate.chk', -1),
  );
}

/**
 * Opens (and recovers) the database: applies truncate.chk, discards the log past writer.chk,
 * verifies completed chunks, brings the index up to the log, writes a new epoch record.
 */
export async function openEventDb(options: EventDbOptions, deps: EventDbDeps): Promise<EventDb> {
  return openEngine(options, deps);
}

export async function openEngine(options: EventDbOptions, deps: EventDbDeps): Promise<Engine> {
  const log = deps.log.child({ component: 'storage' });
  const startedMs = performance.now();
  // Taken before any file is opened for writing, held until close (or the process ends).
  const lock = options.memDb ? undefined : lockDatabaseDirectories(options.dbPath, options.indexPath);
  try {
    const engine = await openLockedEngine(options, deps, log, startedMs);
    engine.directoryLock = lock;
    return engine;
  } catch (err: unknown) {
    lock?.release();
    throw err;
  }
}

async function openLockedEngine(options: EventDbOptions, deps: EventDbDeps, log: Logger, startedMs: number): Promise<Engine> {
  const checkpoints = await openCheckpoints(options);
  const storage = deps.chunkStorage ?? (options.memDb ? new MemoryChunkStorage() : new DirectoryChunkStorage(options.dbPath));
  let opened: Engine | undefined;
  const registry = await ChunkRegistry.open(storage, options.chunkSizeBytes, checkpoints.writer.read(), log, () => opened?.wantsPreallocation() ?? true);
  const truncateTo = checkpoints.truncate.read();
  // The root logger: the index names its own component (a child of `log` would repeat the key).
  const { index, existence } = await openIndexForEngine(options, deps.log, deps.hasher);
  if (truncateTo >= 0) await applyTruncation(truncateTo, registry, index, checkpoints, log);
  const engine = new Engine(options, deps, registry, index, checkpoints, index.hasher, existence);
  opened = engine;
  const caught = engine.catchUpIndex();
  checkpoints.epochNumber = engine.readEpochNumber(checkpoints.epoch.read());
  await checkpoints.chaser.write(engine.writerPosition);
  await engine.writeEpoch();
  engine.startBackgroundWork();
  log.info({
    dbPath: options.memDb ? '(memory)' : path.resolve(options.dbPath), writerPosition: engine.writerPosition,
    chunkCount: registry.chunkCount, indexReplayRecords: caught.records, indexReplayFromPosition: caught.fromPosition,
    openDurationMs: Math.round(performance.now() - startedMs),
  }, 'database opened');
  return engine;
}

async function applyTruncation(position: number, registry: ChunkRegistry, index: StreamIndex, checkpoints: EngineCheckpoints, log: Logger): Promise<void> {
  const writer = checkpoints.writer.read();
  if (position < writer) {
    log.warn({ truncatePosition: position, writerPosition: writer }, 'truncating the log (truncate.chk is set)');
    await registry.truncateTo(position);
    await checkpoints.writer.write(position);
    if (checkpoints.chaser.read() > position) await checkpoints.chaser.write(position);
    if (checkpoints.epoch.read() >= position) await checkpoints.epoch.write(-1);
    if (index.persistedLogPosition > position || index.addedLogPosition > position) {
      assert(index.resetAbove !== undefined, 'index supports reset');
      await index.resetAbove(position);
    }
  }
  await checkpoints.truncate.write(-1);
}



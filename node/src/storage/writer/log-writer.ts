/**
 * The single writer of the log: group commit, a pipeline of batches being made durable, and the
 * commit step that applies them in log order only once they are.
 *
 * append-like requests queue here; the writer loop takes every queued request (group commit) and
 * decides each against the stream state as of all writes before it (BatchContext), encodes the
 * accepted ones into one buffer and hands it to the active chunk (on the log writer thread where
 * there is one: seal, write, fdatasync, writer.chk). The commit pipeline takes the batches, in
 * log order, whose data and writer.chk are durable and, once the commit gate allows (a cluster
 * leader waits for a quorum of replicas), applies them (CommitApplier) and answers. A failed write
 * or fsync is fatal: nothing is acknowledged that cannot be guaranteed.
 */
import type { Logger } from 'pino';
import { FatalError, assert } from '../../errors.js';
import type { AppendResult } from '../event-db-types.js';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import { ChunkSummaryNotes, type ChunkSummaryStore } from '../chunk/chunk-summary.js';
import { WRITE_BATCH_BYTES_MAX } from '../limits.js';
import { isMetastream, isTombstonePrepare } from '../stream-metadata.js';
import type { AppliedWrite, CommitApplier } from '../engine/commit-applier.js';
import { BatchContext, type CommittedView } from './batch-context.js';
import type { LogWriterThread } from './log-writer-thread.js';
import { encodeGroup, plannedSizeBytes, type EncodedGroup, type PlannedRecordGroup } from './write-batch.js';
import type { WritePlan } from './write-planner.js';

/** The positions the writers move; readers see the log up to `committed`. */
export interface LogPositions {
  /** End of the log as written (durable or on its way): new records start here. */
  writer: number;
  /** End of the log covered by a durable writer.chk: what may be replicated. */
  durable: number;
  /**
   * End of the log applied and visible to readers: durable and, in a cluster, held by a quorum
   * (or, on a follower, committed by the leader).
   */
  committed: number;
}

/**
 * The engine's failure state, shared by its parts: the first failure is kept, reported once
 * (`onFirstFailure`), and stops everything; later ones are ignored.
 */
export class EngineFailure {
  private first: Error | undefined;

  constructor(private readonly onFirstFailure: (error: Error) => void) {}

  get current(): Error | undefined {
    return this.first;
  }

  fail(err: unknown): void {
    if (this.first) return;
    this.first = err instanceof Error ? err : new Error(String(err));
    this.onFirstFailure(this.first);
  }
}

export interface LogWriterDeps {
  readonly log: Logger;
  readonly registry: ChunkRegistry;
  readonly writerCheckpoint: Checkpoint;
  readonly committed: CommittedView;
  readonly applier: CommitApplier;
  readonly positions: LogPositions;
  readonly failure: EngineFailure;
  readonly thread: LogWriterThread | undefined;
  readonly chunkSizeBytes: number;
  readonly nowMs: () => number;
  readonly summaryStore: ChunkSummaryStore;
  /**
   * Highest position batches may be applied (made visible and answered) up to. Alone: no limit.
   * A cluster leader: what a quorum holds (cluster/replication/commit-tracker.ts); call
   * `gateMoved` whenever it grows.
   */
  readonly commitGate?: () => number;
  /** Called whenever `positions.durable` grows (a leader ships the new bytes). */
  readonly onDurable?: () => void;
  /**
   * A system record (an epoch) became durable: awaited before its batch counts as recorded, so it
   * runs even when the request that wrote it was refused meanwhile (a leader stepping down), and
   * before `refuse` resolves. The engine moves epoch.chk here.
   */
  readonly onSystemRecordDurable?: (systemRecordType: number, position: number, data: Buffer) => Promise<void>;
}

type WriteRequest = {
  readonly build: (ctx: BatchContext) => WritePlan;
  /** The write must start a chunk of its own (a scavenge point completes the active chunk). */
  readonly requiresFreshChunk?: boolean;
  /** Answer once durable here, before it is applied (a new leader's epoch record). */
  readonly answerWhenDurable?: boolean;
  readonly resolve: (r: AppendResult) => void;
  readonly reject: (e: unknown) => void;
};

interface QueuedOutcome {
  readonly request: WriteRequest;
  readonly groups: readonly PlannedRecordGroup[];
  /** The result to answer with once the batch is durable (positions filled in after encoding). */
  readonly result: AppendResult;
}

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
  /** writer.chk covers it (by the thread or by commitPipeline): it may be replicated. */
  recorded: boolean;
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
export const BATCH_BUFFER_BYTES = GROUP_COMMIT_BYTES_TARGET + 64 * 1024;

/** Weight of the newest flush in the moving mean of flush sizes. */
const RECENT_FLUSH_WEIGHT = 1 / 16;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

/** The answer to a written request: its last group's numbers and commit position. */
function resultOf(outcome: QueuedOutcome, groups: readonly EncodedGroup[]): AppendResult {
  let result = outcome.result;
  for (const g of groups) {
    const first = g.events[0];
    const last = g.events[g.events.length - 1];
    result = !first || !last
      ? { kind: 'success', firstEventNumber: -1, lastEventNumber: -1, commitPosition: g.commitPosition, idempotent: false }
      : { kind: 'success', firstEventNumber: first.eventNumber, lastEventNumber: last.eventNumber, commitPosition: g.commitPosition, idempotent: false, lastEventPosition: last.logPosition };
  }
  return result;
}

export class LogWriter {
  private queue: WriteRequest[] = [];
  private writing = false;
  /**
   * Batches written but not yet applied, in log order (see writeBatch / commitPipeline); their
   * contexts are the overlay later batches are decided against.
   */
  private readonly pipeline: InflightBatch[] = [];
  private committing = false;
  private batchScratch = Buffer.allocUnsafe(BATCH_BUFFER_BYTES);
  /** What scavenge accumulation needs of the active chunk, noted as it is written (chunk-summary.ts). */
  private summaryNotes: ChunkSummaryNotes;
  /** Resolved whenever the pipeline shrinks (writer backpressure and drains wait on it). */
  private pipelineProgress: { promise: Promise<void>; resolve: () => void } = deferred();
  /** Serialises writer.chk updates made outside the pipeline (chunk rollover). */
  private checkpointTail: Promise<void> = Promise.resolve();
  readonly flushStats = { last: 0, total: 0, max: 0, count: 0, lastDelayMs: 0, totalDelayMs: 0, maxDelayMs: 0, recentMeanBytes: 0 };
  /** Set while this node may not write (a cluster node that is not the leader): the refusal. */
  private refusal: Error | undefined;

  constructor(private readonly deps: LogWriterDeps) {
    const { registry, positions } = deps;
    // The chunk active at start-up may hold records written before: no summary for it.
    this.summaryNotes = new ChunkSummaryNotes(registry.active.header.chunkStartNumber, positions.writer === registry.active.startPosition);
  }

  get queuedCount(): number {
    return this.queue.length;
  }

  /** True while a request is queued or a batch is being written. */
  get busy(): boolean {
    return this.writing || this.queue.length > 0;
  }

  /**
   * Stops writing (a leader steps down): queued requests and the batches in flight are refused
   * with `refusal` (an in-flight batch may still become durable; it is never applied or answered
   * here, and a new leader's log decides whether it stays), and so is every later request until
   * `accept`. Resolves once no batch is in flight, so the log can be handed to replication.
   */
  async refuse(refusal: Error): Promise<void> {
    this.refusal = refusal;
    for (const r of this.queue.splice(0)) r.reject(refusal);
    for (const b of this.pipeline) for (const o of b.outcomes) o.request.reject(refusal);
    // In-flight batches become durable (and recorded) but are never applied; once they are, the
    // pipeline empties, which also frees a writer loop waiting for room in it.
    while (this.pipeline.some((b) => !b.recorded) && !this.deps.failure.current) await this.pipelineProgress.promise;
    this.pipeline.splice(0);
    this.signalPipelineProgress();
    while (this.writing) await new Promise((r) => setTimeout(r, 1));
  }

  /** Writes again (this node became the leader). */
  accept(): void {
    this.refusal = undefined;
  }

  get accepting(): boolean {
    return this.refusal === undefined;
  }

  /** The commit gate moved: apply what it now allows. */
  gateMoved(): void {
    void this.commitPipeline();
  }

  enqueue(build: WriteRequest['build'], requiresFreshChunk = false, answerWhenDurable = false): Promise<AppendResult> {
    const failed = this.deps.failure.current;
    if (failed) return Promise.reject(failed);
    if (this.refusal) return Promise.reject(this.refusal);
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ build, resolve, reject, requiresFreshChunk, answerWhenDurable });
      if (!this.writing) {
        // Start on the next turn of the event loop: every append arriving in this turn (all the
        // writers woken by one acknowledgement, all the requests read in one poll) joins the batch.
        this.writing = true;
        setImmediate(() => void this.runWriter());
      }
    });
  }

  /** Rejects every request not yet acknowledged (the engine failed). */
  rejectAll(error: Error): void {
    for (const r of this.queue.splice(0)) r.reject(error);
    for (const b of this.pipeline.splice(0)) for (const o of b.outcomes) o.request.reject(error);
    this.signalPipelineProgress();
  }

  /**
   * The single writer loop. Each batch is one write and one fdatasync of the chunk; the loop goes
   * on to the next batch while it flushes (see writeBatch), and the commit pipeline moves
   * writer.chk and applies batches in log order (see commitPipeline). Nothing is acknowledged
   * before its writer.chk is durable. A chunk rollover first drains the pipeline.
   */
  private async runWriter(): Promise<void> {
    this.writing = true;
    const { registry, positions, failure } = this.deps;
    try {
      while (this.queue.length > 0 && !failure.current) {
        const startedMs = performance.now();
        const batch = this.formBatch();
        if (batch.outcomes.length === 0 && batch.needsNewChunk) {
          await this.drainPipeline();
          await this.checkpointTail;
          // Refused meanwhile (a leader stepping down): the log is replication's now.
          if (this.refusal) continue;
          const completed = registry.active;
          await registry.completeActiveAndStartNext();
          positions.writer = registry.active.startPosition;
          const summary = this.summaryNotes.finish(completed.header.chunkId, completed.physicalDataSizeBytes, registry.active.header.chunkStartNumber);
          if (summary) void this.deps.summaryStore.save(summary);
          const pos = positions.writer;
          this.checkpointTail = this.checkpointTail.then(() => this.deps.writerCheckpoint.write(pos)).then(() => {
            positions.durable = Math.max(positions.durable, pos);
            positions.committed = Math.max(positions.committed, pos);
          });
          await this.checkpointTail;
          this.deps.onDurable?.();
          continue;
        }
        await this.writeBatch(batch, startedMs);
      }
    } catch (err: unknown) {
      failure.fail(err);
    } finally {
      this.writing = false;
    }
  }

  private formBatch(): { outcomes: QueuedOutcome[]; needsNewChunk: boolean; sizeBytes: number; ctx: BatchContext } {
    const { registry, positions } = this.deps;
    const ctx = new BatchContext(this.deps.committed, this.pipeline.map((b) => b.ctx));
    const outcomes: QueuedOutcome[] = [];
    const active = registry.active;
    const spaceBytes = active.endPosition - positions.writer;
    let sizeBytes = 0;
    while (this.queue.length > 0) {
      const request = this.queue[0]!;
      if (request.requiresFreshChunk === true) {
        if (outcomes.length > 0) return { outcomes, needsNewChunk: false, sizeBytes, ctx };
        if (positions.writer > active.startPosition) return { outcomes, needsNewChunk: true, sizeBytes, ctx };
      }
      let built: WritePlan;
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
        else if (built.kind === 'success') outcomes.push({ request, groups: [], result: { ...built, commitPosition: positions.writer } });
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
    const { registry, positions, failure, thread } = this.deps;
    // With the log writer thread the batch goes into a buffer of its own that moves to the
    // thread (and comes back for reuse once written). Without it, the batch is in the file
    // before appendDurably returns, so one scratch buffer serves every batch. Either way no
    // fresh megabyte per batch for the GC to account and the kernel to fault in.
    let buf: Buffer;
    if (thread && batch.sizeBytes > 0) {
      buf = thread.takeBuffer(Math.max(batch.sizeBytes, BATCH_BUFFER_BYTES)).subarray(0, batch.sizeBytes);
    } else {
      if (this.batchScratch.length < batch.sizeBytes) {
        this.batchScratch = Buffer.allocUnsafe(Math.max(batch.sizeBytes, Math.min(2 * this.batchScratch.length, WRITE_BATCH_BYTES_MAX)));
      }
      buf = this.batchScratch.subarray(0, batch.sizeBytes);
    }
    const nowMs = this.deps.nowMs();
    let offset = 0;
    const encoded: { outcome: QueuedOutcome; groups: EncodedGroup[] }[] = [];
    for (const outcome of batch.outcomes) {
      const groups: EncodedGroup[] = [];
      for (const g of outcome.groups) {
        const group = encodeGroup(buf, offset, positions.writer + offset, g, nowMs);
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
      const active = registry.active;
      assert(active.startPosition + active.physicalDataSizeBytes === positions.writer, 'active chunk end matches the writer position');
      // With the thread, writer.chk over this batch is written there too, right after its data is
      // durable: no hop back to this thread and out to libuv's pool on the commit path.
      const handover = thread ? this.deps.writerCheckpoint.reserve?.(positions.writer + offset) : undefined;
      checkpointed = handover !== undefined;
      durable = active.appendDurably(buf, thread, handover).then(() => handover?.landed()).catch((err: unknown) => {
        throw err instanceof FatalError ? err : new FatalError('EDB_WRITE_FAILED', `write to ${active.file.path} failed`, { cause: err });
      });
      positions.writer += offset;
      registry.noteAppended();
    }
    const inflight: InflightBatch = {
      ctx: batch.ctx, encoded, outcomes: batch.outcomes, endPosition: positions.writer, sizeBytes: offset, startedMs, durable: false, checkpointed,
      recorded: false,
    };
    this.pipeline.push(inflight);
    durable.then(
      () => { inflight.durable = true; void this.commitPipeline(); },
      (err: unknown) => failure.fail(err),
    );
    // Backpressure: a bounded number of batches fsyncing at once.
    const pipelineMax = thread ? PIPELINE_BATCHES_MAX_THREAD : PIPELINE_BATCHES_MAX_INLINE;
    while (this.pipeline.length >= pipelineMax && !failure.current) await this.pipelineProgress.promise;
  }

  /** Notes a write's stream and time, and where its metadata records or tombstone are (chunk-summary.ts). */
  private noteForSummary(group: EncodedGroup, nowMs: number): void {
    const events = group.events;
    if (events.length === 0) return;
    const notes = this.summaryNotes;
    const chunkNumber = Math.floor(events[0]!.logPosition / this.deps.chunkSizeBytes);
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
   * Moves writer.chk over every batch whose data is durable, in log order, then applies the
   * recorded batches the commit gate allows. Data fsyncs of consecutive batches overlap; one
   * writer.chk update covers all the batches that became durable while the previous update was
   * being fsynced.
   */
  private async commitPipeline(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    const { positions, failure } = this.deps;
    try {
      for (;;) {
        if (failure.current) return;
        let recorded = 0;
        while (recorded < this.pipeline.length && this.pipeline[recorded]!.recorded) recorded++;
        let durable = recorded;
        while (durable < this.pipeline.length && this.pipeline[durable]!.durable) durable++;
        if (durable > recorded) {
          const batches = this.pipeline.slice(recorded, durable);
          const end = batches[batches.length - 1]!.endPosition;
          if (batches.some((b) => b.sizeBytes > 0 && !b.checkpointed)) {
            // Ordered after any rollover checkpoint write.
            await this.checkpointTail;
            await this.deps.writerCheckpoint.write(end);
          }
          if (failure.current) return;
          await this.noteSystemRecords(batches);
          if (failure.current) return;
          for (const b of batches) {
            b.recorded = true;
            for (const e of b.encoded) if (e.outcome.request.answerWhenDurable) e.outcome.request.resolve(resultOf(e.outcome, e.groups));
          }
          positions.durable = Math.max(positions.durable, end);
          this.deps.onDurable?.();
          this.signalPipelineProgress();
        }
        // Refused batches (a leader stepping down) are recorded but never applied or answered.
        const gate = this.refusal ? Number.NEGATIVE_INFINITY : (this.deps.commitGate?.() ?? Number.POSITIVE_INFINITY);
        let n = 0;
        while (n < this.pipeline.length && this.pipeline[n]!.recorded && this.pipeline[n]!.endPosition <= gate) n++;
        if (n === 0) {
          if (durable > recorded) continue;
          return;
        }
        const batches = this.pipeline.slice(0, n);
        const end = batches[n - 1]!.endPosition;
        positions.committed = Math.max(positions.committed, end);
        for (const b of batches) {
          this.recordFlush(b.sizeBytes, performance.now() - b.startedMs);
          this.apply(b.encoded, positions.committed);
        }
        this.pipeline.splice(0, n);
        this.signalPipelineProgress();
      }
    } catch (err: unknown) {
      failure.fail(err);
    } finally {
      this.committing = false;
    }
  }

  private async noteSystemRecords(batches: readonly InflightBatch[]): Promise<void> {
    const hook = this.deps.onSystemRecordDurable;
    if (!hook) return;
    for (const b of batches) {
      for (const { outcome, groups } of b.encoded) {
        for (let i = 0; i < outcome.groups.length; i++) {
          const planned = outcome.groups[i]!;
          if (planned.kind === 'system') await hook(planned.systemRecordType, groups[i]!.commitPosition, planned.data);
        }
      }
    }
  }

  /** Everything in the batch is durable: make it visible (CommitApplier), then answer. */
  private apply(encoded: readonly { outcome: QueuedOutcome; groups: EncodedGroup[] }[], committedPosition: number): void {
    const writes: AppliedWrite[] = [];
    for (const { groups } of encoded) {
      for (const g of groups) {
        const first = g.events[0];
        const last = g.events[g.events.length - 1];
        if (!first || !last) continue;
        writes.push({
          stream: first.stream, events: g.events, firstEventId: first.event.eventId,
          lastEventData: last.event.data, commitPosition: g.commitPosition,
        });
      }
    }
    this.deps.applier.apply(writes, committedPosition);
    for (const { outcome, groups } of encoded) outcome.request.resolve(resultOf(outcome, groups));
  }

  private signalPipelineProgress(): void {
    const current = this.pipelineProgress;
    this.pipelineProgress = deferred();
    current.resolve();
  }

  /** Waits until every written batch is applied (or the engine failed). */
  async drainPipeline(): Promise<void> {
    while (this.pipeline.length > 0 && !this.deps.failure.current) await this.pipelineProgress.promise;
  }

  /** Waits for queued writes and the batches in flight, and for writer.chk updates. */
  async drain(): Promise<void> {
    for (let i = 0; i < 1000 && this.busy && !this.deps.failure.current; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await this.drainPipeline();
    await this.checkpointTail.catch(() => undefined);
  }

  private recordFlush(sizeBytes: number, delayMs: number): void {
    const s = this.flushStats;
    s.last = sizeBytes; s.total += sizeBytes; s.max = Math.max(s.max, sizeBytes); s.count += 1;
    s.recentMeanBytes = s.count === 1 ? sizeBytes : s.recentMeanBytes + (sizeBytes - s.recentMeanBytes) * RECENT_FLUSH_WEIGHT;
    s.lastDelayMs = delayMs; s.totalDelayMs += delayMs; s.maxDelayMs = Math.max(s.maxDelayMs, delayMs);
  }
}

/**
 * One scavenge run as the admin module sees it: the engine's listener for that run. Each
 * callback logs one progress line and queues the matching history event; the queue keeps the
 * events in callback order and never blocks the engine (the callbacks return at once, so a
 * history append can never wait on something the scavenger holds).
 *
 * If the engine ends a run without calling `completed` (it crashed, or it reported only through
 * its handle), `finish` writes `$scavengeCompleted` from the outcome, so every run that wrote
 * `$scavengeStarted` also gets its end.
 */
import type { Logger } from 'pino';

import type {
  ScavengeListener,
  ScavengeOutcome,
  ScavengeResult,
} from '../storage/event-db-types.js';
import { ScavengeEventType, type ScavengeHistory } from './scavenge-history.js';
import { formatTimeSpan } from './time-span.js';

type ListenerInfo<K extends keyof ScavengeListener> = Parameters<NonNullable<ScavengeListener[K]>>[0];

/** Where a running scavenge is, for `GET /admin/scavenge/current` and `/admin/scavenge/{id}`. */
export interface ScavengeProgress {
  /** The engine's stage (Accumulating, Calculating, ExecutingChunks, MergingChunks, ExecutingIndex, Cleaning, Done); Starting before the first. */
  readonly stage: string;
  /** Logical chunks executed so far, of `chunksTotal` (the chunks below the scavenge point). */
  readonly chunksDone: number;
  readonly chunksTotal: number;
  /** chunksDone of chunksTotal, in percent with one decimal (100 once past chunk execution). */
  readonly percent: number;
}

const PAST_CHUNK_EXECUTION = new Set(['MergingChunks', 'ExecutingIndex', 'Cleaning', 'Done']);

/** The progress figures from what the run has reported (pure). */
export function scavengeProgress(stage: string, chunksDone: number, chunksTotal: number): ScavengeProgress {
  const past = PAST_CHUNK_EXECUTION.has(stage);
  const done = past ? Math.max(chunksDone, chunksTotal) : Math.min(chunksDone, chunksTotal);
  const percent = past || chunksTotal === 0 ? (past ? 100 : 0) : Math.floor((done / chunksTotal) * 1000) / 10;
  return { stage, chunksDone: done, chunksTotal, percent };
}

export interface ScavengeRunOptions {
  readonly scavengeId: string;
  readonly history: ScavengeHistory;
  readonly log: Logger;
  readonly nodeEndpoint: string;
}

export class ScavengeRun implements ScavengeListener {
  readonly scavengeId: string;
  private readonly history: ScavengeHistory;
  private readonly nodeEndpoint: string;
  private log: Logger;
  private writes: Promise<void> = Promise.resolve();
  private completedReceived = false;
  private maxChunkScavenged = 0;
  private indexTableCount = 0;
  private stage = 'Starting';
  private chunksTotal = 0;
  private chunksDone = 0;

  constructor(options: ScavengeRunOptions) {
    this.scavengeId = options.scavengeId;
    this.history = options.history;
    this.nodeEndpoint = options.nodeEndpoint;
    this.log = options.log.child({ scavengeId: options.scavengeId });
  }

  /** Stage and chunks done of this run so far. */
  progress(): ScavengeProgress {
    return scavengeProgress(this.stage, this.chunksDone, this.chunksTotal);
  }

  stageStarted(info: { stage: string; chunksInScope: number }): void {
    this.stage = info.stage;
    this.chunksTotal = info.chunksInScope;
  }

  /** The last chunk number scavenged so far in this run (its progress, for /metrics). */
  get chunksScavengedUpTo(): number {
    return this.maxChunkScavenged;
  }

  async started(info: ListenerInfo<'started'>): Promise<void> {
    const point = info.scavengePoint;
    if (point !== undefined) this.log = this.log.child({ scavengePoint: `SP-${point.number}` });
    this.log.info(
      { threshold: point?.threshold, scavengePointPosition: point?.position },
      'scavenge started',
    );
    this.enqueue(() => this.history.started(this.scavengeId, this.nodeEndpoint));
  }

  async chunkExecuted(info: ListenerInfo<'chunkExecuted'>): Promise<void> {
    this.maxChunkScavenged = Math.max(this.maxChunkScavenged, info.chunkEndNumber);
    this.chunksDone += info.chunkEndNumber - info.chunkStartNumber + 1;
    const fields = {
      chunkStartNumber: info.chunkStartNumber,
      chunkEndNumber: info.chunkEndNumber,
      weight: info.weight,
      spaceSavedBytes: info.spaceSavedBytes,
      timeTakenMs: info.timeTakenMs,
    };
    if (info.wasScavenged) this.log.info(fields, 'chunks scavenged');
    else this.log.warn({ ...fields, errorMessage: info.errorMessage }, 'chunks not scavenged');
    this.enqueue(() =>
      this.history.write(this.scavengeId, ScavengeEventType.ChunksCompleted, {
        scavengeId: this.scavengeId,
        chunkStartNumber: info.chunkStartNumber,
        chunkEndNumber: info.chunkEndNumber,
        timeTaken: formatTimeSpan(info.timeTakenMs),
        wasScavenged: info.wasScavenged,
        spaceSaved: info.wasScavenged ? info.spaceSavedBytes : 0,
        nodeEndpoint: this.nodeEndpoint,
        errorMessage: info.errorMessage,
      }),
    );
  }

  async chunksMerged(info: ListenerInfo<'chunksMerged'>): Promise<void> {
    const fields = {
      chunkStartNumber: info.chunkStartNumber,
      chunkEndNumber: info.chunkEndNumber,
      spaceSavedBytes: info.spaceSavedBytes,
      timeTakenMs: info.timeTakenMs,
    };
    if (info.wasMerged) this.log.info(fields, 'chunks merged');
    else this.log.warn({ ...fields, errorMessage: info.errorMessage }, 'chunks not merged');
    this.enqueue(() =>
      this.history.write(this.scavengeId, ScavengeEventType.MergeCompleted, {
        scavengeId: this.scavengeId,
        chunkStartNumber: info.chunkStartNumber,
        chunkEndNumber: info.chunkEndNumber,
        timeTaken: formatTimeSpan(info.timeTakenMs),
        spaceSaved: info.wasMerged ? info.spaceSavedBytes : 0,
        wasMerged: info.wasMerged,
        nodeEndpoint: this.nodeEndpoint,
        errorMessage: info.errorMessage,
      }),
    );
  }

  /**
   * The engine reports the index stage as a whole; EventStoreDB reports per index table, so
   * `level` is 0 and `index` counts the reports of this run.
   */
  async indexExecuted(info: ListenerInfo<'indexExecuted'>): Promise<void> {
    const index = this.indexTableCount++;
    this.log.info(
      {
        entriesDeleted: info.entriesDeleted,
        entriesKept: info.entriesKept,
        timeTakenMs: info.timeTakenMs,
      },
      'index scavenged',
    );
    this.enqueue(() =>
      this.history.write(this.scavengeId, ScavengeEventType.IndexCompleted, {
        scavengeId: this.scavengeId,
        level: 0,
        index,
        timeTaken: formatTimeSpan(info.timeTakenMs),
        entriesDeleted: info.entriesDeleted,
        entriesKept: info.entriesKept,
        spaceSaved: 0,
        wasScavenged: true,
        nodeEndpoint: this.nodeEndpoint,
        errorMessage: '',
      }),
    );
  }

  async completed(info: ListenerInfo<'completed'>): Promise<void> {
    if (this.completedReceived) return;
    this.completedReceived = true;
    this.maxChunkScavenged = Math.max(this.maxChunkScavenged, info.maxChunkScavenged);
    this.logCompleted(info.result, info.error, info.timeTakenMs, info.spaceSavedBytes);
    this.enqueue(() =>
      this.history.completed({
        scavengeId: this.scavengeId,
        nodeEndpoint: this.nodeEndpoint,
        result: info.result,
        error: info.error,
        timeTakenMs: info.timeTakenMs,
        spaceSavedBytes: info.spaceSavedBytes,
        // EventStoreDB starts the high watermark at 0; the engine may report -1 for "none".
        maxChunkScavenged: this.maxChunkScavenged,
      }),
    );
  }

  /** Called once the engine's run has ended; resolves when every history write is done. */
  async finish(outcome: ScavengeOutcome): Promise<void> {
    if (!this.completedReceived) {
      this.log.warn({ result: outcome.result }, 'the engine ended the scavenge without reporting');
      await this.completed({
        scavengeId: this.scavengeId,
        result: outcome.result,
        error: outcome.error,
        timeTakenMs: outcome.timeTakenMs,
        spaceSavedBytes: outcome.spaceSavedBytes,
        maxChunkScavenged: this.maxChunkScavenged,
      });
    }
    await this.writes;
  }

  private logCompleted(
    result: ScavengeResult,
    error: string | null,
    timeTakenMs: number,
    spaceSavedBytes: number,
  ): void {
    const maxChunkScavenged = this.maxChunkScavenged;
    const fields = { result, timeTakenMs, spaceSavedBytes, maxChunkScavenged };
    if (result === 'Errored') this.log.error({ ...fields, error }, 'scavenge completed');
    else this.log.info(fields, 'scavenge completed');
  }

  /** Chains a history write after the previous ones; a failure is logged, never propagated. */
  private enqueue(write: () => Promise<void>): void {
    this.writes = this.writes.then(write).catch((err: unknown) => {
      this.log.error({ err }, 'scavenge history write failed');
    });
  }
}

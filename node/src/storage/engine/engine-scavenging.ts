/**
 * The engine's side of scavenging: at most one run at a time, the access the scavenger gets to
 * the log, the index and the state database, and scavenge points (written through the writer,
 * each starting a chunk of its own).
 */
import type { Logger } from 'pino';
import { EventDbError, FatalError, assert } from '../../errors.js';
import { ExpectedVersion, type AppendResult, type EventDbOptions, type NewEvent } from '../event-db-types.js';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import type { ChunkSummaryStore } from '../chunk/chunk-summary.js';
import type { StreamHasher, StreamIndex } from '../index/stream-index-port.js';
import { runScavenge } from '../scavenge/scavenger.js';
import type { ScavengeAccess } from '../scavenge/scavenge-access.js';
import { createMemoryScavengeStore, openMemoryScavengeState } from '../scavenge/memory-scavenge-state.js';
import { openSqliteScavengeState } from '../scavenge/sqlite-scavenge-state.js';
import {
  SCAVENGE_POINT_EVENT_TYPE, SCAVENGE_POINTS_STREAM,
  type ScavengeHandle, type ScavengeListener, type ScavengeParams, type ScavengePoint, type ScavengeState,
} from '../scavenge/scavenge-types.js';
import type { LogWriter } from '../writer/log-writer.js';
import { planAppend, validateWrite } from '../writer/write-planner.js';
import type { CommittedState } from './committed-state.js';

export interface EngineScavengingDeps {
  readonly options: EventDbOptions;
  readonly log: Logger;
  readonly registry: ChunkRegistry;
  readonly index: StreamIndex;
  readonly hasher: StreamHasher;
  readonly state: CommittedState;
  readonly writer: LogWriter;
  readonly summaryStore: ChunkSummaryStore;
  readonly isClosed: () => boolean;
  readonly fail: (err: unknown) => void;
  /**
   * A cluster member that is not the leader asks the leader to write the scavenge point (the log
   * is the leader's to write), then waits for it here.
   */
  readonly remoteScavengePoint?: (threshold: number) => Promise<AppendResult>;
  /** Resolves once this node has applied the log up to `position`. */
  readonly committedReaches?: (position: number) => Promise<void>;
}

export class EngineScavenging {
  private runningScavenge: { handle: ScavengeHandle; controller: AbortController } | undefined;
  private memoryScavengeStore: ReturnType<typeof createMemoryScavengeStore> | undefined;

  constructor(private readonly deps: EngineScavengingDeps) {}

  get running(): boolean {
    return this.runningScavenge !== undefined;
  }

  start(scavengeId: string, params: ScavengeParams, listener: ScavengeListener): ScavengeHandle {
    if (this.runningScavenge) throw new EventDbError('EDB_SCAVENGE_RUNNING', 'Scavenge is already running', { httpStatus: 400 });
    if (this.deps.isClosed()) throw new EventDbError('EDB_CLOSED', 'the database is shutting down', { httpStatus: 503 });
    const controller = new AbortController();
    const done = runScavenge(this.access(), {
      scavengeId, params, listener, signal: controller.signal, onFatal: (err) => this.deps.fail(err),
    }).finally(() => { this.runningScavenge = undefined; });
    const handle: ScavengeHandle = {
      scavengeId, done,
      stop: async () => { controller.abort(); return done; },
    };
    this.runningScavenge = { handle, controller };
    return handle;
  }

  /** Stops a running scavenge (engine close); never throws. */
  async stop(): Promise<void> {
    if (this.runningScavenge) await this.runningScavenge.handle.stop().catch(() => undefined);
  }

  /**
   * Writes a scavenge point: completes the active chunk (so everything before the point is in
   * completed chunks), then writes `$scavengePoint` #expectedNumber at the start of a new chunk.
   */
  async writeScavengePoint(threshold: number): Promise<AppendResult> {
    const { remoteScavengePoint, committedReaches } = this.deps;
    if (!this.deps.writer.accepting && remoteScavengePoint !== undefined && committedReaches !== undefined) {
      const result = await remoteScavengePoint(threshold);
      if (result.kind === 'success') await committedReaches(result.commitPosition + 1);
      return result;
    }
    const stream = SCAVENGE_POINTS_STREAM;
    const event: NewEvent = {
      eventId: crypto.randomUUID(), eventType: SCAVENGE_POINT_EVENT_TYPE, isJson: true, metadata: Buffer.alloc(0),
      data: Buffer.from(JSON.stringify(threshold === 0 ? {} : { threshold })),
    };
    validateWrite(this.deps.options, stream, ExpectedVersion.Any, [event]);
    return this.deps.writer.enqueue((ctx) => planAppend(ctx, stream, ExpectedVersion.Any, [event]), true);
  }

  private access(): ScavengeAccess {
    const { options: o, registry, index, hasher, state, summaryStore } = this.deps;
    return {
      log: this.deps.log.child({ component: 'storage.scavenge' }),
      registry, index, hasher, chunkSizeBytes: o.chunkSizeBytes,
      disableMerging: o.disableScavengeMerging ?? false,
      latestScavengePoint: () => this.latestScavengePoint(),
      writeScavengePoint: async (threshold) => {
        const r = await this.writeScavengePoint(threshold);
        if (r.kind !== 'success') throw new FatalError('EDB_INVARIANT', `could not write a scavenge point: ${r.kind}`);
        const point = this.scavengePointAt(r.firstEventNumber);
        assert(point !== undefined, 'the scavenge point just written is readable');
        return point;
      },
      lastEventNumberBefore: (stream, position) => state.lastEventNumberBefore(stream, position),
      openState: () => this.openState(),
      chunkSummary: (n) => summaryStore.load(n),
      dropChunkSummary: (n) => summaryStore.drop(n),
    };
  }

  private openState(): ScavengeState {
    const o = this.deps.options;
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
    const last = this.deps.state.committedLastEventNumber(SCAVENGE_POINTS_STREAM);
    return last >= 0 ? this.scavengePointAt(last) : undefined;
  }

  private scavengePointAt(eventNumber: number): ScavengePoint | undefined {
    const record = this.deps.state.findEventRecord(SCAVENGE_POINTS_STREAM, eventNumber);
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
}

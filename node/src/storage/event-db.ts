/**
 * The storage engine facade: the only storage module imported from outside storage/. It
 * composes the engine's parts and owns its lifecycle (open, recovery, failure, close):
 *
 * - `writer/log-writer.ts`: the single writer (group commit, the durable pipeline, commit);
 * - `writer/write-planner.ts`: what a client write becomes in the log;
 * - `engine/committed-state.ts`: what is known of the committed log (caches, record lookups);
 * - `engine/commit-applier.ts`: makes committed writes visible (index, filter, caches, listeners);
 * - `engine/stream-reader.ts`: stream and `$all` reads;
 * - `engine/engine-scavenging.ts`: scavenge runs and scavenge points.
 *
 * Data flow of a write: append() validates and queues a request -> the writer decides, encodes,
 * writes and fdatasyncs each batch, moves writer.chk -> only then the applier indexes it and the
 * promise resolves. Reads never see past the committed position. A failed write or fsync is
 * fatal: the node stops instead of acknowledging anything it cannot guarantee.
 */
import type { Logger } from 'pino';
import path from 'node:path';
import { EventDbError, assert } from '../errors.js';
import type {
  AllPosition, AppendResult, CommittedWrite, EngineStats, EventDb, EventDbOptions, FatalHandler, NewEvent,
  ReadAllResult, ReadDirection, ReadEventResult, ReadStreamResult, StreamMetadata, StreamState,
} from './event-db-types.js';
import { ChunkRegistry } from './chunk/chunk-registry.js';
import { DirectoryChunkStorage, MemoryChunkStorage, type ChunkStorage } from './chunk/chunk-storage.js';
import { FileCheckpoint, MemoryCheckpoint, type Checkpoint } from './checkpoint/checkpoint.js';
import { LogReader } from './reader/log-reader.js';
import { RecordType, SystemRecordType } from './format/record.js';
import { LogWriterThread } from './writer/log-writer-thread.js';
import { EngineFailure, LogWriter, type LogPositions } from './writer/log-writer.js';
import { planAppend, planDelete, validateWrite } from './writer/write-planner.js';
import { metastreamOf, METADATA_EVENT_TYPE } from './stream-metadata.js';
import type { IndexEntry, StreamHasher, StreamIndex } from './index/stream-index-port.js';
import { ioCounters } from '../platform/block-file.js';
import { lockDatabaseDirectories, type DirectoryLock } from '../platform/directory-lock.js';
import { openIndexForEngine, type ExistenceFilter } from './index-adapter.js';
import type { ScavengeHandle, ScavengeListener, ScavengeParams } from './scavenge/scavenge-types.js';
import { SCAVENGE_STATE_DIRECTORY } from './scavenge/sqlite-scavenge-state.js';
import { DirectoryChunkSummaryStore, MemoryChunkSummaryStore } from './chunk/chunk-summary.js';
import { CommittedState } from './engine/committed-state.js';
import { decodeEpoch, encodeEpoch, walkEpochs, type EpochRecord } from './epochs.js';
import { ReplicaWriter } from './replica/replica-writer.js';
import { LogSource } from './replica/log-source.js';
import { CommitApplier } from './engine/commit-applier.js';
import { StreamReader } from './engine/stream-reader.js';
import { EngineScavenging } from './engine/engine-scavenging.js';

export { replayLogBytes, type ChunkExtent } from './engine/commit-applier.js';
export { toRecordedEvent } from './engine/stream-reader.js';
export type { EpochRecord } from './epochs.js';

/** The refusal of a write on a cluster member that is not the leader. */
export function notLeader(message = 'this node is not the leader'): EventDbError {
  return new EventDbError('EDB_NOT_LEADER', message, { httpStatus: 503 });
}

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
  /**
   * A member of a cluster: the engine opens without writing an epoch and refuses writes until
   * `becomeLeader`; replication drives it (see ClusterStorage). Absent: a node alone, which
   * writes a new epoch at every start and accepts writes at once.
   */
  readonly cluster?: {
    readonly instanceId: string;
    /** Asks the leader to write a scavenge point (a scavenge on a follower). */
    readonly remoteScavengePoint?: (threshold: number) => Promise<AppendResult>;
  };
}

/** What a cluster member's replication and elections need of its storage. */
export interface ClusterStorage {
  /** End of the durable log (writer.chk). */
  readonly durablePosition: number;
  /** End of the log visible to readers. */
  readonly committedPosition: number;
  readonly chaserPosition: number;
  /** The epochs of this log, newest first, at most `maxCount`. */
  epochs(maxCount: number): EpochRecord[];
  /** The highest election proposal this node accepted (proposal.chk), -1 when none. */
  readonly proposalNumber: number;
  writeProposalNumber(proposal: number): Promise<void>;
  /** Starts writing as the leader of a new epoch: its record is the first thing written. */
  becomeLeader(epochNumber: number, leaderInstanceId: string): Promise<EpochRecord>;
  /** Stops writing: pending writes are refused with `refusal`; resolves once nothing is in flight. */
  stopLeading(refusal: Error): Promise<void>;
  readonly leading: boolean;
  /** How far a leader may apply (the quorum's position); call when it grows. */
  setCommitGate(gate: () => number): void;
  commitGateMoved(): void;
  /** Called whenever the durable position grows. */
  onDurable(listener: () => void): () => void;
  /** The follower's writer of replicated data. */
  readonly replica: ReplicaWriter;
  /** The leader's reader of its own log, for shipping. */
  readonly source: LogSource;
  /** Sets truncate.chk: the next open cuts the log back to `position`. */
  requestTruncation(position: number): Promise<void>;
  /** `position`, or the start of the scavenged chunk holding it (a log can only be cut between records it still has). */
  truncationPointFor(position: number): number;
}

/**
 * Next chunk files are zero-filled ahead only while the recent flushes average less than this.
 * Measured here: the zero-fill shortens a 16 KiB fdatasync by about a third, but with 1 KiB
 * events in batches of 100 it cost 45-80% of the append bandwidth (every byte written twice).
 */
const PREALLOCATE_FLUSH_BYTES_MAX = 256 * 1024;

export class Engine implements EventDb, ClusterStorage {
  private readonly failure: EngineFailure;
  private closed = false;
  private readonly positions: LogPositions;
  /** Seals and writes batches on the second core (chunk files only); see log-writer-thread.ts. */
  private readonly writerThread: LogWriterThread | undefined;
  private readonly state: CommittedState;
  private readonly applier: CommitApplier;
  private readonly writer: LogWriter;
  private readonly reads: StreamReader;
  private readonly scavenging: EngineScavenging;
  private readonly reader: LogReader;
  private readonly nowMs: () => number;
  private chaserTimer: NodeJS.Timeout | undefined;
  /** The lock on the data (and index) directory, released last at close; none with --mem-db. */
  directoryLock: DirectoryLock | undefined;
  private commitGate: () => number = () => Number.POSITIVE_INFINITY;
  private readonly durableListeners = new Set<() => void>();
  readonly replica: ReplicaWriter;
  readonly source: LogSource;

  constructor(
    private readonly options: EventDbOptions,
    private readonly deps: EventDbDeps,
    private readonly registry: ChunkRegistry,
    private readonly index: StreamIndex,
    private readonly checkpoints: EngineCheckpoints,
    private readonly hasher: StreamHasher,
    private readonly existence: ExistenceFilter,
  ) {
    this.nowMs = deps.nowMs ?? Date.now;
    this.writerThread = options.memDb || deps.logWriterThread === false ? undefined : LogWriterThread.start(deps.log.child({ component: 'log-writer' }));
    const start = Math.max(checkpoints.writer.read(), registry.active.startPosition);
    this.positions = { writer: start, durable: start, committed: start };
    const committedPosition = (): number => this.positions.committed;
    // Every write not yet acknowledged fails: queued ones and the batches in flight (a failed
    // write or fsync, of data or of writer.chk, may have left any of them not durable).
    const failure = new EngineFailure((error) => {
      this.writer.rejectAll(error);
      deps.onFatal(error);
    });
    this.failure = failure;
    this.state = new CommittedState({ registry, index, existence, hasher, hashCollisionReadLimit: options.hashCollisionReadLimit, committedPosition });
    this.applier = new CommitApplier({ index, existence, hasher, state: this.state, registry, memDb: options.memDb, fail: (err) => this.fail(err) });
    this.reader = new LogReader(registry, committedPosition);
    this.reads = new StreamReader({ state: this.state, index, hasher, reader: this.reader, nowMs: this.nowMs, committedPosition });
    const summaryStore = options.memDb
      ? new MemoryChunkSummaryStore()
      : new DirectoryChunkSummaryStore(path.join(options.indexPath, SCAVENGE_STATE_DIRECTORY, 'chunk-summaries'),
        (err, file) => deps.log.warn({ err, file }, 'could not save a chunk summary (accumulation will read the chunk)'));
    this.writer = new LogWriter({
      log: deps.log, registry, writerCheckpoint: checkpoints.writer, committed: this.state, applier: this.applier,
      positions: this.positions, failure, thread: this.writerThread, chunkSizeBytes: options.chunkSizeBytes,
      nowMs: this.nowMs, summaryStore, commitGate: () => this.commitGate(), onDurable: () => this.notifyDurable(),
      onSystemRecordDurable: async (type, position, data) => {
        const epoch = type === SystemRecordType.Epoch ? decodeEpoch(data, position) : undefined;
        if (epoch) await this.noteDurableEpoch(epoch);
      },
    });
    const durableReader = new LogReader(registry, () => this.positions.durable);
    this.replica = new ReplicaWriter({
      log: deps.log.child({ component: 'storage.replica' }), registry, writerCheckpoint: checkpoints.writer,
      positions: this.positions, failure, thread: this.writerThread, applier: this.applier, durableReader,
      onEpoch: async (epoch) => {
        await this.noteDurableEpoch(epoch);
        this.notifyDurable();
      },
    });
    this.source = new LogSource(registry, () => this.positions.durable);
    if (deps.cluster) void this.writer.refuse(notLeader());
    this.scavenging = new EngineScavenging({
      options, log: deps.log, registry, index, hasher, state: this.state, writer: this.writer, summaryStore,
      isClosed: () => this.closed, fail: (err) => this.fail(err),
      ...(deps.cluster?.remoteScavengePoint === undefined ? {} : {
        remoteScavengePoint: deps.cluster.remoteScavengePoint,
        committedReaches: (position: number) => this.committedReaches(position),
      }),
    });
  }

  get writerPosition(): number {
    return this.positions.writer;
  }

  // ---------------------------------------------------------------- start-up

  /**
   * Brings the index and the stream existence filter up to the writer checkpoint, reading only
   * the log past the older of the two (never the whole log after a clean shutdown).
   */
  catchUpIndex(): { records: number; fromPosition: number; lastEpoch: EpochRecord | undefined } {
    const writerPos = this.positions.writer;
    const epochCheckpoint = this.checkpoints.epoch.read();
    let lastSystemPosition = -1;
    const indexFrom = this.index.addedLogPosition;
    const existenceFrom = Math.min(this.existence.coveredLogPosition, writerPos);
    const from = Math.min(indexFrom, existenceFrom);
    let pending: IndexEntry[] = [];
    let records = 0;
    this.reader.scan(from, writerPos, (record, nextPosition) => {
      records += 1;
      if (record.type === RecordType.Prepare) {
        if (record.logPosition >= existenceFrom) this.existence.add(record.stream);
        if (record.logPosition >= indexFrom) {
          pending.push({ streamHash: this.hasher(record.stream), eventNumber: record.eventNumber, logPosition: record.logPosition });
        }
      } else if (record.type === RecordType.Commit && record.logPosition >= indexFrom) {
        this.index.add(pending, nextPosition);
        pending = [];
      } else if (record.type === RecordType.System && record.logPosition > epochCheckpoint) {
        lastSystemPosition = record.logPosition;
      }
    });
    // System records are epochs (the one kind written); read whole only when one follows epoch.chk
    const lastEpoch = lastSystemPosition > epochCheckpoint ? this.epochAt(lastSystemPosition) : undefined;
    // Prepares without a commit below writer.chk cannot happen: a batch is durable whole or not at all.
    assert(pending.length === 0, `log ends with ${pending.length} uncommitted records below the writer checkpoint`);
    if (writerPos > this.existence.coveredLogPosition) this.existence.advance(writerPos);
    return { records, fromPosition: from, lastEpoch };
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
    const r = this.registry.readRecord(epochPosition, this.positions.committed);
    if (r.kind !== 'record' || r.record.type !== RecordType.System) return -1;
    try {
      const parsed = JSON.parse(r.record.data.toString('utf8')) as { epochNumber?: unknown };
      return typeof parsed.epochNumber === 'number' ? parsed.epochNumber : -1;
    } catch {
      return -1;
    }
  }

  /**
   * Writes the record of a new epoch (alone: the next number; a cluster leader: the elected one)
   * and resolves once it is durable here (a cluster leader applies it once a quorum holds it).
   */
  async writeEpoch(epochNumber = this.checkpoints.epochNumber + 1, leaderInstanceId = this.deps.cluster?.instanceId ?? ''): Promise<EpochRecord> {
    const epochId = crypto.randomUUID();
    const prevEpochPosition = this.checkpoints.epoch.read();
    const timeStamp = new Date(this.nowMs()).toISOString();
    const data = encodeEpoch({ epochNumber, epochId, prevEpochPosition, leaderInstanceId, timeStamp });
    const result = await this.writer.enqueue(() => [{ kind: 'system', systemRecordType: SystemRecordType.Epoch, data }], false, true);
    assert(result.kind === 'success', 'an epoch record is always written');
    // epoch.chk already points at it (noteDurableEpoch, called by the writer once it was durable)
    return { epochNumber, epochId, epochPosition: result.commitPosition, prevEpochPosition, leaderInstanceId, timeStamp };
  }

  /**
   * An epoch record is durable in this log: epoch.chk points at it. Called for every epoch record
   * that becomes durable, whoever wrote it (this node as leader, even when it stepped down before
   * the write was answered; replication; the start-up scan of the log's tail), so the chain of
   * epochs this node reports always includes the last epoch its log holds. A node that left a
   * durable epoch record out of its chain would report an older epoch to the next leader, which
   * would then see no divergence and ship records over a log that differs from its own.
   */
  async noteDurableEpoch(epoch: EpochRecord): Promise<void> {
    if (epoch.epochPosition <= this.checkpoints.epoch.read()) return;
    await this.checkpoints.epoch.write(epoch.epochPosition);
    this.checkpoints.epochNumber = epoch.epochNumber;
  }

  // ---------------------------------------------------------------- cluster (ClusterStorage)

  get durablePosition(): number {
    return this.positions.durable;
  }

  get committedPosition(): number {
    return this.positions.committed;
  }

  get chaserPosition(): number {
    return this.checkpoints.chaser.read();
  }

  epochs(maxCount: number): EpochRecord[] {
    return walkEpochs(this.checkpoints.epoch.read(), (position) => this.epochAt(position), maxCount);
  }

  private epochAt(position: number): EpochRecord | undefined {
    const r = this.registry.readRecord(position, this.positions.durable);
    if (r.kind !== 'record' || r.record.type !== RecordType.System || r.record.systemRecordType !== SystemRecordType.Epoch) return undefined;
    return decodeEpoch(r.record.data, position);
  }

  get proposalNumber(): number {
    return this.checkpoints.proposal.read();
  }

  async writeProposalNumber(proposal: number): Promise<void> {
    if (proposal > this.checkpoints.proposal.read()) await this.checkpoints.proposal.write(proposal);
  }

  async becomeLeader(epochNumber: number, leaderInstanceId: string): Promise<EpochRecord> {
    this.writer.accept();
    return this.writeEpoch(epochNumber, leaderInstanceId);
  }

  async stopLeading(refusal: Error): Promise<void> {
    await this.writer.refuse(refusal);
  }

  get leading(): boolean {
    return this.writer.accepting;
  }

  setCommitGate(gate: () => number): void {
    this.commitGate = gate;
    this.writer.gateMoved();
  }

  commitGateMoved(): void {
    this.writer.gateMoved();
  }

  onDurable(listener: () => void): () => void {
    this.durableListeners.add(listener);
    return () => this.durableListeners.delete(listener);
  }

  private notifyDurable(): void {
    for (const listener of this.durableListeners) listener();
  }

  /**
   * Installs a completed chunk file the leader sent whole: already in the chunk storage under
   * `tempName`, or given as bytes (in memory, --mem-db).
   */
  async installChunkFile(file: { readonly tempName?: string; readonly bytes?: Buffer }): Promise<void> {
    let tempName = file.tempName;
    if (tempName === undefined) {
      assert(file.bytes !== undefined, 'a chunk file to install');
      tempName = `replica-${crypto.randomUUID()}.tmp`;
      const created = this.registry.storage.create(tempName);
      await created.write(file.bytes, 0);
      await created.sync();
      await created.close();
    }
    await this.replica.installChunk(tempName);
  }

  /** Where a whole chunk file from the leader is written before installation (undefined in memory). */
  get chunkTempDirectory(): string | undefined {
    return this.options.memDb ? undefined : this.options.dbPath;
  }

  /** Resolves once the log is applied up to `position` (a follower waiting for replication). */
  async committedReaches(position: number, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.positions.committed < position) {
      if (this.failed) throw this.failed;
      if (this.closed || Date.now() > deadline) throw notLeader(`the log did not reach position ${position} here`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async requestTruncation(position: number): Promise<void> {
    await this.checkpoints.truncate.write(position);
  }

  truncationPointFor(position: number): number {
    const chunk = this.registry.chunkAt(position);
    return chunk !== undefined && chunk.header.isScavenged && position > chunk.startPosition ? chunk.startPosition : position;
  }

  // ---------------------------------------------------------------- writes

  async append(stream: string, expectedVersion: number, events: readonly NewEvent[]): Promise<AppendResult> {
    this.validateWrite(stream, expectedVersion, events);
    return this.writer.enqueue((ctx) => planAppend(ctx, stream, expectedVersion, events));
  }

  async deleteStream(stream: string, expectedVersion: number, hard: boolean): Promise<AppendResult> {
    this.validateWrite(stream, expectedVersion, []);
    return this.writer.enqueue((ctx) => planDelete(ctx, stream, expectedVersion, hard));
  }

  setStreamMetadata(stream: string, expectedVersion: number, raw: Record<string, unknown>, eventId?: string): Promise<AppendResult> {
    const event: NewEvent = {
      eventId: eventId ?? crypto.randomUUID(), eventType: METADATA_EVENT_TYPE,
      data: Buffer.from(JSON.stringify(raw)), metadata: Buffer.alloc(0), isJson: true,
    };
    return this.append(metastreamOf(stream), expectedVersion, [event]);
  }

  /** See EngineScavenging.writeScavengePoint. */
  writeScavengePoint(threshold: number): Promise<AppendResult> {
    return this.scavenging.writeScavengePoint(threshold);
  }

  private validateWrite(stream: string, expectedVersion: number, events: readonly NewEvent[]): void {
    if (this.closed) throw new EventDbError('EDB_CLOSED', 'the database is shutting down', { httpStatus: 503 });
    validateWrite(this.options, stream, expectedVersion, events);
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
    if (this.scavenging.running) return false;
    const f = this.writer.flushStats;
    return f.count === 0 || f.recentMeanBytes < PREALLOCATE_FLUSH_BYTES_MAX;
  }

  private fail(err: unknown): void {
    this.failure.fail(err);
  }

  private get failed(): Error | undefined {
    return this.failure.current;
  }

  // ---------------------------------------------------------------- reads

  async streamState(stream: string): Promise<StreamState> {
    return this.reads.streamState(stream);
  }

  async getStreamMetadata(stream: string): Promise<{ metadata: StreamMetadata; metastreamVersion: number }> {
    const m = this.state.committedMetadata(stream);
    return { metadata: m.metadata, metastreamVersion: m.version };
  }

  async readStream(stream: string, fromEventNumber: number, maxCount: number, direction: ReadDirection): Promise<ReadStreamResult> {
    this.checkReadable();
    return this.reads.readStream(stream, fromEventNumber, maxCount, direction);
  }

  async readEvent(stream: string, eventNumber: number): Promise<ReadEventResult> {
    this.checkReadable();
    return this.reads.readEvent(stream, eventNumber);
  }

  async readAll(from: AllPosition | undefined, maxCount: number, direction: ReadDirection): Promise<ReadAllResult> {
    this.checkReadable();
    return this.reads.readAll(from, maxCount, direction);
  }

  private checkReadable(): void {
    if (this.failed) throw this.failed;
  }

  onCommitted(listener: (write: CommittedWrite) => void): () => void {
    return this.applier.onCommitted(listener);
  }

  async mergeIndexes(): Promise<void> {
    await this.index.mergeAll();
  }

  startScavenge(scavengeId: string, params: ScavengeParams, listener: ScavengeListener): ScavengeHandle {
    return this.scavenging.start(scavengeId, params, listener);
  }

  stats(): EngineStats {
    const f = this.writer.flushStats;
    const index = this.index.stats();
    return {
      writerCheckpoint: this.positions.committed,
      chaserCheckpoint: this.checkpoints.chaser.read(),
      writer: {
        lastFlushSizeBytes: f.last, meanFlushSizeBytes: f.count ? f.total / f.count : 0, maxFlushSizeBytes: f.max,
        lastFlushDelayMs: f.lastDelayMs, meanFlushDelayMs: f.count ? f.totalDelayMs / f.count : 0, maxFlushDelayMs: f.maxDelayMs,
        queuedFlushMessages: this.writer.queuedCount, flushCount: f.count, onWriterThread: this.writerThread !== undefined,
      },
      readIndex: { ...this.state.cacheStats },
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
    await this.scavenging.stop();
    await this.writer.drain();
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
  // An epoch record made durable just before the process ended, before epoch.chk moved to it (the
  // index is never ahead of an epoch record epoch.chk misses: records after it are applied only
  // once epoch.chk points at it, so the replay above saw it).
  if (caught.lastEpoch) {
    log.warn({ epochNumber: caught.lastEpoch.epochNumber, epochPosition: caught.lastEpoch.epochPosition }, 'epoch.chk moved to the last epoch record in the log');
    await engine.noteDurableEpoch(caught.lastEpoch);
  }
  await checkpoints.chaser.write(engine.writerPosition);
  // Alone, every start is a new epoch; in a cluster only an elected leader writes one.
  if (!deps.cluster) await engine.writeEpoch();
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
    if (checkpoints.epoch.read() >= position) {
      // The last epoch that stays, found by walking the chain back before the log is cut.
      const read = (at: number): EpochRecord | undefined => {
        const r = registry.readRecord(at, writer);
        return r.kind === 'record' && r.record.type === RecordType.System ? decodeEpoch(r.record.data, at) : undefined;
      };
      const kept = walkEpochs(checkpoints.epoch.read(), read, Number.MAX_SAFE_INTEGER).find((e) => e.epochPosition < position);
      await checkpoints.epoch.write(kept?.epochPosition ?? -1);
    }
    await registry.truncateTo(position);
    await checkpoints.writer.write(position);
    if (checkpoints.chaser.read() > position) await checkpoints.chaser.write(position);
    if (index.persistedLogPosition > position || index.addedLogPosition > position) {
      assert(index.resetAbove !== undefined, 'index supports reset');
      await index.resetAbove(position);
    }
  }
  await checkpoints.truncate.write(-1);
}

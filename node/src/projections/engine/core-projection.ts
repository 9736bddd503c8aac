/**
 * One running projection: reads its sources from its last checkpoint, hands the events to its
 * handler (user JavaScript or a system projection), writes what it emits, its results and its
 * partition states, and checkpoints (EventStoreDB's CoreProjection and checkpoint manager).
 *
 * Checkpoints (continuous projections with checkpoints enabled): after
 * `checkpointHandledThreshold` handled events or `checkpointUnhandledBytesThreshold` bytes read
 * but not handled, and no sooner than `checkpointAfterMs` after the previous one, and when the
 * projection stops. A checkpoint waits until every emitted event is durable, writes the changed
 * partition states to `$projections-{name}-{partition}-checkpoint` (tagged with the event that last
 * changed them), waits again, then appends `$ProjectionCheckpoint` (data: the root state, metadata:
 * the tag) to `$projections-{name}-checkpoint`. A restart continues after that tag; what it
 * emits again is dropped by EmittedStreams, and partition states newer than the tag are skipped
 * when loaded. Processing waits while a checkpoint is written.
 *
 * Queries (one-time, transient) read to the end of the log, write every partition's result as
 * `Result` events, and complete.
 */
import type { Logger } from 'pino';
import type { EventDb } from '../../storage/event-db-types.js';
import {
  advanceTag,
  compareTags,
  parseTag,
  tagToJson,
  tagToString,
  zeroStreamsTag,
  ZERO_POSITION_TAG,
  type CheckpointTag,
  type ProjectionVersion,
} from '../checkpoint-tag.js';
import { EventTypes, ProjectionStreams } from '../names.js';
import type { CoreStatistics, CoreStatus } from '../projection-types.js';
import { ProjectionFault } from '../runtime/js-runtime.js';
import { isPartitioned, type ReaderKind, type SourceDefinition } from '../source-definition.js';
import type { EmittedSpec } from '../system/system-handlers.js';
import { EmittedStreams, type EmittedEvent } from './emitted-streams.js';
import { classify, eventBytes, streamPartition } from './event-filter.js';
import { CommitWatch, createReader, type EventReader, type LinkTargetCheck, type ReaderPage, type SourceEvent } from './event-reader.js';
import type { HandlerItem, HandlerOutput, ProjectionHandler } from './handler.js';

export interface CoreProjectionConfig {
  readonly checkpointHandledThreshold: number;
  readonly checkpointUnhandledBytesThreshold: number;
  readonly checkpointAfterMs: number;
  readonly pendingEventsThreshold: number;
  readonly maxWriteBatchLength: number;
  readonly maxAllowedWritesInFlight: number;
}

export interface CoreProjectionOptions {
  readonly name: string;
  readonly db: EventDb;
  readonly watch: CommitWatch;
  readonly log: Logger;
  readonly handler: ProjectionHandler;
  readonly reader: ReaderKind;
  /** Set for a projection run by a user outside `$admins`/`$ops`: which link targets it may read. */
  readonly mayReadLinkTarget?: LinkTargetCheck;
  readonly version: ProjectionVersion;
  readonly emitEnabled: boolean;
  readonly checkpointsEnabled: boolean;
  readonly trackEmittedStreams: boolean;
  /** Queries stop at the end of the log and write their results. */
  readonly stopOnEof: boolean;
  readonly config: CoreProjectionConfig;
  /** `Handler:` in fault messages. */
  readonly handlerTypeName: string;
  /** The projection faults when a state (with its result) is larger (MaxProjectionStateSize). */
  readonly maxStateSizeBytes: number;
  /** Called once when the run ends: completed (queries), stopped, or faulted with a reason. */
  readonly onEnded: (outcome: { kind: 'completed' | 'stopped' } | { kind: 'faulted'; reason: string }) => void;
}

/** Events read per round. */
const READ_BATCH = 500;
/** Longest wait for new events before reading again anyway. */
const IDLE_WAIT_MS = 1000;
/** Partition states kept on the handler's side; beyond, they are dropped after a checkpoint. */
const CACHED_PARTITIONS_MAX = 10_000;
const CHECKPOINT_STREAM_MAX_COUNT = 2;
const PARTITION_CHECKPOINT_MAX_COUNT = 2;

export class CoreProjection {
  private readonly streams: ProjectionStreams;
  private readonly definition: SourceDefinition;
  private readonly emitter: EmittedStreams;
  private readonly abort = new AbortController();
  private status: CoreStatus = 'Running';
  private reader: EventReader | undefined;
  private tag: CheckpointTag;
  private lastCheckpoint: CheckpointTag | undefined;
  private lastCheckpointAtMs = 0;
  private handledSinceCheckpoint = 0;
  private unhandledBytesSinceCheckpoint = 0;
  private eventsProcessed = 0;
  private processingMs = 0;
  private checkpointStatus = '';
  private readonly loadedPartitions = new Set<string>();
  private readonly partitionTags = new Map<string, CheckpointTag>();
  private readonly knownPartitions = new Set<string>();
  private group = 0;
  private running: Promise<void> | undefined;
  private stopRequested: 'stop' | 'abort' | undefined;
  private ended = false;
  private fault: string | undefined;

  constructor(private readonly options: CoreProjectionOptions) {
    this.definition = options.handler.definition;
    this.streams = new ProjectionStreams(
      options.name,
      this.definition.options.resultStreamName,
      this.definition.options.partitionResultStreamNamePattern,
    );
    this.tag = this.zeroTag();
    this.emitter = new EmittedStreams({
      db: options.db,
      version: options.version,
      maxWriteBatchLength: Math.max(1, options.config.maxWriteBatchLength),
      maxAllowedWritesInFlight: options.config.maxAllowedWritesInFlight,
      trackingStream: options.trackEmittedStreams && options.emitEnabled ? this.streams.emittedStreams : undefined,
      maxCountFor: (stream) =>
        stream.startsWith(`${this.streams.definition}-`) && stream.endsWith('-checkpoint') ? PARTITION_CHECKPOINT_MAX_COUNT : undefined,
      onFault: (message) => this.setFaulted(message),
    });
  }

  /** Starts the run (asynchronously); onEnded reports how it ends. */
  start(): void {
    this.running ??= this.run();
  }

  /** Stops after the batch in hand: drains the writes and writes a checkpoint. */
  async stop(): Promise<void> {
    this.stopRequested ??= 'stop';
    this.status = this.status === 'Running' || this.status === 'Running/Paused' ? 'Stopping' : this.status;
    this.abort.abort();
    await this.running;
  }

  /** Stops at once without a checkpoint. */
  async abortRun(): Promise<void> {
    this.stopRequested = 'abort';
    this.abort.abort();
    await this.running;
  }

  get faultReason(): string | undefined {
    return this.fault;
  }

  /** The tag of the last event read, as `ES-Position` shows it. */
  positionJson(): string {
    return tagToJson(this.tag);
  }

  statistics(): CoreStatistics {
    return {
      status: this.status,
      position: tagToString(this.tag),
      progress: this.reader?.progress() ?? 0,
      lastCheckpoint: this.lastCheckpoint === undefined ? '' : tagToString(this.lastCheckpoint),
      eventsProcessedAfterRestart: this.eventsProcessed,
      bufferedEvents: 0,
      writePendingEventsBeforeCheckpoint: 0,
      writePendingEventsAfterCheckpoint: this.emitter.pending,
      writesInProgress: this.emitter.writesInProgress,
      readsInProgress: 0,
      partitionsCached: this.loadedPartitions.size,
      coreProcessingTimeMs: Math.round(this.processingMs),
      checkpointStatus: this.checkpointStatus,
    };
  }

  /** The state of a partition as the handler holds it ('' when unknown); loads it when needed. */
  async state(partition: string): Promise<string> {
    if (partition !== '' && this.isPartitioned()) await this.ensureLoaded([partition]);
    // A partitioned bi-state projection's root partition is its shared state.
    if (partition === '' && this.isPartitioned() && this.definition.options.biState) return this.options.handler.shared();
    return this.options.handler.state(partition);
  }

  async result(partition: string): Promise<string> {
    if (partition !== '' && this.isPartitioned()) await this.ensureLoaded([partition]);
    return this.options.handler.result(partition);
  }

  private isPartitioned(): boolean {
    return isPartitioned(this.definition);
  }

  private zeroTag(): CheckpointTag {
    const reader = this.options.reader;
    if (reader.kind === 'all') return ZERO_POSITION_TAG;
    return zeroStreamsTag(reader.kind === 'stream' ? [reader.stream] : reader.streams);
  }

  private async run(): Promise<void> {
    try {
      await this.loadCheckpoint();
      this.reader = createReader(this.options.db, this.options.reader, this.tag, this.options.watch, this.options.mayReadLinkTarget);
      const reader = this.reader;
      let next: { since: number; page: Promise<ReaderPage> } | undefined;
      const readNext = (): { since: number; page: Promise<ReaderPage> } => {
        const read = { since: this.options.watch.position, page: reader.read(READ_BATCH) };
        // Awaited on the next round; if the run ends first, a failed read must not go unhandled.
        read.page.catch(() => undefined);
        return read;
      };
      while (this.stopRequested === undefined && this.fault === undefined) {
        const current = next ?? readNext();
        next = undefined;
        const since = current.since;
        const page = await current.page;
        if (this.stopRequested === 'abort' || this.fault !== undefined) break;
        // While the handler works on this page (on its own thread for user JavaScript), the next
        // one is read.
        const prefetch = page.eof ? undefined : (): void => void (next = readNext());
        if (page.events.length > 0) await this.processPage(page.events, prefetch);
        if (this.fault !== undefined) break;
        if (this.options.checkpointsEnabled && this.checkpointDue()) await this.checkpoint();
        if (page.eof) {
          if (this.options.stopOnEof) {
            await this.complete();
            return;
          }
          await this.options.watch.wait(this.abort.signal, since, IDLE_WAIT_MS);
        }
      }
      if (this.fault === undefined && this.stopRequested === 'stop') {
        await this.emitter.drain();
        if (this.options.checkpointsEnabled && this.eventsProcessedSinceCheckpoint()) await this.checkpoint();
      }
      this.end({ kind: 'stopped' });
    } catch (err: unknown) {
      this.setFaulted(err instanceof Error ? err.message : String(err));
    }
  }

  private eventsProcessedSinceCheckpoint(): boolean {
    return this.lastCheckpoint === undefined ? this.eventsProcessed > 0 : compareTags(this.tag, this.lastCheckpoint) > 0;
  }

  private checkpointDue(): boolean {
    const c = this.options.config;
    const enough =
      this.handledSinceCheckpoint >= c.checkpointHandledThreshold ||
      this.unhandledBytesSinceCheckpoint >= c.checkpointUnhandledBytesThreshold;
    return enough && Date.now() - this.lastCheckpointAtMs >= c.checkpointAfterMs;
  }

  /** Reads the last checkpoint: where to continue from and the root (or shared) state. */
  private async loadCheckpoint(): Promise<void> {
    if (!this.options.checkpointsEnabled) return;
    const last = await this.options.db.readEvent(this.streams.checkpoint, -1);
    if (last.kind !== 'success') return;
    const parsed = parseTag(last.event.metadata);
    if (parsed === undefined || parsed.tag.mode !== this.tag.mode) return;
    if (parsed.version !== undefined && parsed.version.version < this.options.version.epoch) return;
    if (parsed.tag.mode === 'streams' && this.tag.mode === 'streams') {
      const expected = Object.keys(this.tag.streams).sort().join('\n');
      if (Object.keys(parsed.tag.streams).sort().join('\n') !== expected) return;
    }
    this.tag = parsed.tag;
    this.lastCheckpoint = parsed.tag;
    const data = parseStateArray(last.event.data.toString('utf8'));
    if (this.isPartitioned()) {
      if (this.definition.options.biState) await this.options.handler.load([], data[0] ?? null);
    } else {
      const shared = this.definition.options.biState ? (data[2] ?? null) : undefined;
      await this.options.handler.load([['', data[0] ?? null, data[1] ?? null]], shared);
      this.loadedPartitions.add('');
    }
  }

  private async processPage(events: readonly SourceEvent[], prefetch?: () => void): Promise<void> {
    const reader = this.options.reader;
    const categoryName = reader.kind === 'stream' ? (reader.category ?? null) : null;
    const candidates: Array<{ source: SourceEvent; category: string | null; deleted?: { soft: boolean; stream: string } }> = [];
    const tags: CheckpointTag[] = [];
    let tag = this.tag;
    for (const source of events) {
      tag = advanceTag(tag, source.position);
      const decision = classify(this.definition, reader, source);
      if (decision.kind === 'skip') {
        this.unhandledBytesSinceCheckpoint += eventBytes(source);
        continue;
      }
      candidates.push(
        decision.kind === 'deleted'
          ? { source, category: categoryName, deleted: { soft: decision.soft, stream: decision.stream } }
          : { source, category: categoryName },
      );
      tags.push(tag);
    }
    if (candidates.length === 0) {
      this.tag = tag;
      return;
    }
    const started = performance.now();
    const partitions = await this.partitionsOf(candidates);
    const items: HandlerItem[] = [];
    const itemTags: CheckpointTag[] = [];
    for (let index = 0; index < candidates.length; index++) {
      const partition = partitions[index];
      if (partition === null || partition === undefined) continue;
      const candidate = candidates[index] as (typeof candidates)[number];
      items.push(candidate.deleted === undefined
        ? { source: candidate.source, partition, category: candidate.category }
        : { source: candidate.source, partition, category: candidate.category, deleted: { soft: candidate.deleted.soft } });
      itemTags.push(tags[index] as CheckpointTag);
    }
    if (this.isPartitioned()) await this.ensureLoaded([...new Set(items.map((i) => i.partition))]);
    let outputs: Array<HandlerOutput | undefined>;
    try {
      const processing = this.options.handler.process(items);
      prefetch?.();
      outputs = await processing;
    } catch (err: unknown) {
      const index = err instanceof ProjectionFault ? err.index : undefined;
      const at = index !== undefined ? itemTags[index] : itemTags[0];
      throw new Error(this.processingFaultMessage(at ?? this.tag, err instanceof Error ? err.message : String(err)));
    }
    this.processingMs += performance.now() - started;
    const emits: EmittedEvent[] = [];
    for (let index = 0; index < items.length; index++) {
      const item = items[index] as HandlerItem;
      const itemTag = itemTags[index] as CheckpointTag;
      if (this.isPartitioned() || this.definition.options.biState) this.partitionTags.set(item.partition, itemTag);
      const output = outputs[index];
      if (output === undefined) continue;
      if (output.emitted.length > 0 && !this.options.emitEnabled) {
        throw new Error("'emit' is not allowed by the projection/configuration/mode");
      }
      const group = ++this.group;
      const cause = { causedBy: itemTag, causedById: item.source.event.eventId, correlationId: correlationIdOf(item.source), group };
      for (const spec of output.emitted) emits.push({ spec, ...cause });
      if (output.created && item.partition !== '' && this.definition.options.producesResults && !this.options.stopOnEof && !this.knownPartitions.has(item.partition)) {
        this.knownPartitions.add(item.partition);
        emits.push({ spec: { stream: this.streams.partitions, eventType: EventTypes.Partition, data: item.partition, isJson: false, extra: null }, ...cause });
      }
      if (output.resultChanged && this.definition.options.producesResults && !this.options.stopOnEof) {
        emits.push(this.resultEvent(item.partition, output.result, cause));
      }
    }
    this.tag = tag;
    this.eventsProcessed += items.length;
    this.handledSinceCheckpoint += items.length;
    if (emits.length > 0) this.emitter.emit(emits);
    // Too much waiting to be written: pause reading until it is down to half (the original's rule).
    const threshold = this.options.config.pendingEventsThreshold;
    if (this.emitter.pending >= threshold) {
      this.status = 'Running/Paused';
      await this.emitter.below(Math.max(1, Math.floor(threshold / 2)));
      if (this.status === 'Running/Paused') this.status = 'Running';
    }
  }

  private async partitionsOf(
    candidates: ReadonlyArray<{ source: SourceEvent; category: string | null; deleted?: { stream: string } }>,
  ): Promise<Array<string | null>> {
    if (this.definition.byStreams)
      return candidates.map((c) => c.deleted?.stream ?? streamPartition(c.source));
    if (this.options.handler.customPartitions) {
      try {
        return await this.options.handler.partitionsOf(candidates);
      } catch (err: unknown) {
        const index = err instanceof ProjectionFault ? err.index : undefined;
        const source = candidates[index ?? 0]?.source;
        const at = source === undefined ? this.tag : advanceTag(this.tag, source.position);
        throw new Error(this.processingFaultMessage(at, err instanceof Error ? err.message : String(err)));
      }
    }
    return candidates.map(() => '');
  }

  private processingFaultMessage(at: CheckpointTag, message: string): string {
    return `The ${this.options.name} projection failed to process an event.\r\nHandler: ${this.options.handlerTypeName}\r\nEvent Position: ${tagToString(at)}\r\n\r\nMessage:\r\n\r\n${message}`;
  }

  /**
   * `Result`/`ResultRemoved` in the partition's result stream; for a partition, once written, a
   * `$>` to it in the projection's result stream (ResultEventEmitter).
   */
  private resultEvent(partition: string, result: string | null, cause: Omit<EmittedEvent, 'spec'>): EmittedEvent {
    const stream = this.streams.partitionResult(partition);
    const spec: EmittedSpec =
      result === null
        ? { stream, eventType: EventTypes.ResultRemoved, data: '', isJson: true, extra: null }
        : { stream, eventType: EventTypes.Result, data: result, isJson: true, extra: null };
    if (partition === '') return { spec, ...cause };
    const resultStream = this.streams.result;
    return {
      spec,
      ...cause,
      then: (eventNumber) => ({ stream: resultStream, eventType: EventTypes.LinkTo, data: `${eventNumber}@${stream}`, isJson: false, extra: null }),
    };
  }

  /** Loads partition states not held yet, from their checkpoint streams (at or before the last checkpoint). */
  private async ensureLoaded(partitions: readonly string[]): Promise<void> {
    const missing = partitions.filter((p) => !this.loadedPartitions.has(p));
    if (missing.length === 0) return;
    const states: Array<[string, string | null, string | null]> = [];
    for (const partition of missing) {
      const stored = this.options.checkpointsEnabled && this.lastCheckpoint !== undefined
        ? await this.readPartitionState(partition, this.lastCheckpoint)
        : undefined;
      if (stored !== undefined) this.knownPartitions.add(partition);
      states.push([partition, stored?.state ?? null, stored?.result ?? null]);
      this.loadedPartitions.add(partition);
    }
    await this.options.handler.load(states);
  }

  private async readPartitionState(partition: string, bound: CheckpointTag): Promise<{ state: string | null; result: string | null } | undefined> {
    const page = await this.options.db.readStream(this.streams.partitionCheckpoint(partition), -1, 10, 'backward');
    if (page.kind !== 'success') return undefined;
    for (const event of page.events) {
      const parsed = parseTag(event.metadata);
      if (parsed === undefined || parsed.tag.mode !== bound.mode) continue;
      if (parsed.version !== undefined && parsed.version.version < this.options.version.epoch) continue;
      if (compareTags(parsed.tag, bound) > 0) continue;
      const data = parseStateArray(event.data.toString('utf8'));
      return { state: data[0] ?? null, result: data[1] ?? null };
    }
    return undefined;
  }

  private async checkpoint(): Promise<void> {
    this.checkpointStatus = 'Requested';
    const tag = this.tag;
    await this.emitter.drain();
    const dirty = await this.options.handler.takeDirty();
    const emits: EmittedEvent[] = [];
    const partitioned = this.isPartitioned();
    if (partitioned) {
      for (const [partition, state, result] of dirty.partitions) {
        if (partition === '') continue;
        this.checkStateSize(partition, state.length + (result?.length ?? 0));
        const causedBy = this.partitionTags.get(partition) ?? tag;
        const data = result === null ? `[${asJsonValue(state)}]` : `[${asJsonValue(state)},${asJsonValue(result)}]`;
        emits.push({
          spec: { stream: this.streams.partitionCheckpoint(partition), eventType: EventTypes.PartitionCheckpoint, data, isJson: true, extra: null },
          causedBy,
          causedById: undefined,
          correlationId: undefined,
          group: ++this.group,
        });
      }
    }
    const tagJson = tagToJson(tag);
    for (const spec of this.options.handler.checkpointEvents(tagJson))
      emits.push({ spec, causedBy: tag, causedById: undefined, correlationId: undefined, group: ++this.group });
    if (emits.length > 0) {
      this.emitter.emit(emits);
      await this.emitter.drain();
    }
    this.checkpointStatus = 'Writing (1)';
    const data = await this.rootStateData(partitioned, dirty.shared);
    this.checkStateSize('', data.length);
    await this.writeCheckpointEvent(tag, data);
    this.lastCheckpoint = tag;
    this.lastCheckpointAtMs = Date.now();
    this.handledSinceCheckpoint = 0;
    this.unhandledBytesSinceCheckpoint = 0;
    this.checkpointStatus = '';
    if (partitioned && this.loadedPartitions.size > CACHED_PARTITIONS_MAX) {
      const drop = [...this.loadedPartitions];
      await this.options.handler.unload(drop);
      this.loadedPartitions.clear();
    }
  }

  private checkStateSize(partition: string, size: number): void {
    const max = this.options.maxStateSizeBytes;
    if (size <= max) return;
    const where = partition === '' ? '' : ` in partition '${partition}'`;
    const n = (v: number): string => v.toLocaleString('en-US');
    throw new Error(
      `The state size of projection '${this.options.name}'${where} is ${n(size)} bytes which exceeds the configured MaxProjectionStateSize of ${n(max)} bytes.`,
    );
  }

  /** `[state]`, `[state,result]` (`[state,result,shared]` bi-state) for the root; `[shared]` / `[]` when partitioned. */
  private async rootStateData(partitioned: boolean, dirtyShared: string | null): Promise<string> {
    const handler = this.options.handler;
    if (partitioned) {
      if (!this.definition.options.biState) return '[]';
      const shared = dirtyShared ?? (await handler.shared());
      return shared === '' ? '[]' : `[${shared}]`;
    }
    const state = await handler.state('');
    if (state === '') return '[]';
    const stateJson = asJsonValue(state);
    const resultText = this.definition.options.definesStateTransform ? await handler.result('') : '';
    const result = resultText === '' ? 'null' : asJsonValue(resultText);
    if (this.definition.options.biState) {
      const shared = await handler.shared();
      return `[${stateJson},${result},${shared === '' ? 'null' : asJsonValue(shared)}]`;
    }
    return resultText === '' ? `[${stateJson}]` : `[${stateJson},${result}]`;
  }

  private async writeCheckpointEvent(tag: CheckpointTag, data: string): Promise<void> {
    const { db, version } = this.options;
    const stream = this.streams.checkpoint;
    const state = await db.streamState(stream);
    if (state.kind === 'no-stream') {
      await db.setStreamMetadata(stream, -2, {
        $maxCount: CHECKPOINT_STREAM_MAX_COUNT,
        $acl: { $r: '$admins', $w: '$admins', $d: '$admins', $mr: '$all', $mw: '$admins' },
      });
    }
    const result = await db.append(stream, -2, [
      {
        eventId: crypto.randomUUID(),
        eventType: EventTypes.ProjectionCheckpoint,
        data: Buffer.from(data, 'utf8'),
        metadata: Buffer.from(tagToJson(tag, version), 'utf8'),
        isJson: true,
      },
    ]);
    if (result.kind !== 'success') throw new Error(`Failed to write the checkpoint of ${this.options.name}: ${result.kind}`);
  }

  /** End of a query: every partition's result as a `Result` event, then Completed. */
  private async complete(): Promise<void> {
    await this.emitter.drain();
    const results = await this.options.handler.results();
    const emits: EmittedEvent[] = [];
    for (const [, result] of results) {
      if (result === null) continue;
      emits.push({
        spec: { stream: this.streams.result, eventType: EventTypes.Result, data: result, isJson: true, extra: null },
        causedBy: this.tag,
        causedById: undefined,
        correlationId: undefined,
        group: ++this.group,
      });
    }
    if (emits.length > 0) {
      this.emitter.emit(emits);
      await this.emitter.drain();
    }
    this.status = 'Stopped';
    this.end({ kind: 'completed' });
  }

  private setFaulted(reason: string): void {
    if (this.fault !== undefined || this.ended) return;
    this.fault = reason;
    this.status = 'Faulted';
    this.abort.abort();
    this.options.log.error({ projection: this.options.name, reason }, 'projection faulted');
    this.end({ kind: 'faulted', reason });
  }

  private end(outcome: { kind: 'completed' | 'stopped' } | { kind: 'faulted'; reason: string }): void {
    if (this.ended) return;
    this.ended = true;
    if (outcome.kind === 'stopped') this.status = 'Stopped';
    this.options.onEnded(outcome);
  }
}

/** `[a, b, ...]` as the raw JSON text of each element (state texts may be plain strings). */
export function parseStateArray(text: string): Array<string | null> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return value === null || value === undefined ? [] : [JSON.stringify(value)];
  return value.map((v: unknown) => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v)));
}

/** A state text as a JSON value: JSON text stays, a plain string (a raw-body state) is quoted. */
function asJsonValue(text: string): string {
  try {
    JSON.parse(text);
    return text;
  } catch {
    return JSON.stringify(text);
  }
}

const CORRELATION_ID = Buffer.from('$correlationId');

function correlationIdOf(source: SourceEvent): string | undefined {
  const metadata = source.event.metadata;
  if (metadata.byteLength === 0 || metadata.indexOf(CORRELATION_ID) < 0) return undefined;
  try {
    const parsed = JSON.parse(metadata.toString('utf8')) as Record<string, unknown> | null;
    const value = parsed?.['$correlationId'];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

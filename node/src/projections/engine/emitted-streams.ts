/**
 * Writes a projection's emitted events (emit, linkTo, results, partition states, system
 * projections' links) to their streams, so that a restart from the last checkpoint neither
 * duplicates nor loses any, after EventStoreDB's EmittedStream:
 *
 * - every event's metadata is the checkpoint tag of the source event that caused it (with `$v`,
 *   `$causedBy`, `$correlationId` and any extra metadata);
 * - a stream is opened on its first write of a run: its last event is read; if our projection
 *   (same id and epoch) wrote it, events caused at or before that tag are already in the stream and
 *   are dropped when they come again (the run after a crash reprocesses from the checkpoint);
 *   otherwise the stream starts anew (after a reset, older events are hidden with `$tb`);
 * - all events one source event emits to one stream go in one append (appends are atomic), and
 *   appends to a stream are sequential with an exact expected version, so a stream written by
 *   someone else faults the projection instead of interleaving.
 *
 * The projection checkpoints only after `drain()`: everything caused at or before a checkpoint is
 * durable before the checkpoint is.
 */
import { randomUUID } from 'node:crypto';
import type { EventDb, NewEvent } from '../../storage/event-db-types.js';
import { compareTags, parseTag, tagMembers, versionMember, type CheckpointTag, type ProjectionVersion } from '../checkpoint-tag.js';
import { EventTypes } from '../names.js';
import type { EmittedSpec } from '../system/system-handlers.js';

export interface EmittedEvent {
  readonly spec: EmittedSpec;
  readonly causedBy: CheckpointTag;
  /** Event id of the source event (`$causedBy`). */
  readonly causedById: string | undefined;
  /** `$correlationId` of the source event's metadata, when it has one. */
  readonly correlationId: string | undefined;
  /** Same for all events caused by one source event: they are never split across appends. */
  readonly group: number;
  /** An event to emit once this one is written, from its event number (a result's link). */
  readonly then?: (eventNumber: number) => EmittedSpec;
}

export interface EmittedStreamsOptions {
  readonly db: EventDb;
  readonly version: ProjectionVersion;
  readonly maxWriteBatchLength: number;
  /** 0 = unbounded. */
  readonly maxAllowedWritesInFlight: number;
  /** Stream where `$StreamTracked` events record each stream written (trackEmittedStreams). */
  readonly trackingStream: string | undefined;
  /** `$maxCount` for streams that keep only recent events (partition checkpoints keep 2). */
  readonly maxCountFor?: (stream: string) => number | undefined;
  readonly onFault: (message: string) => void;
}

interface StreamWriter {
  readonly stream: string;
  queue: EmittedEvent[];
  writing: boolean;
  opened: boolean;
  /** The stream's last event number (-1: none): the expected version of the next append. */
  expectedVersion: number;
  /** The newest tag our projection wrote to the stream; events caused at or before it are dropped. */
  lastTag: CheckpointTag | undefined;
}

/** Idle streams remembered; beyond this the least recently used are forgotten (and re-opened). */
const OPEN_STREAMS_MAX = 10_000;
const EMPTY = Buffer.alloc(0);

export class EmittedStreams {
  private readonly writers = new Map<string, StreamWriter>();
  private inFlight = 0;
  private pendingCount = 0;
  private failed: string | undefined;
  private drainWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private tracked: Set<string> | undefined;
  private trackingLoad: Promise<void> | undefined;
  /** Writers with events queued but no write of their own, held back by maxAllowedWritesInFlight. */
  private readonly held = new Set<StreamWriter>();
  private readonly metadataPrefix: string;
  private belowWaiters: Array<{ limit: number; resolve: () => void; reject: (err: Error) => void }> = [];

  constructor(private readonly options: EmittedStreamsOptions) {
    this.metadataPrefix = options.version.id > 0 ? `{${versionMember(options.version)},` : '{';
  }

  /** Events queued or being written. */
  get pending(): number {
    return this.pendingCount;
  }

  get writesInProgress(): number {
    return this.inFlight;
  }

  /** Queues the events (in order) and starts writing. */
  emit(events: readonly EmittedEvent[]): void {
    if (this.failed !== undefined) return;
    for (const event of events) {
      const writer = this.writerOf(event.spec.stream);
      writer.queue.push(event);
      this.pendingCount += 1;
    }
    for (const event of events) this.kick(this.writerOf(event.spec.stream));
  }

  /** Resolves when everything emitted so far is durable; rejects when a write faulted. */
  drain(): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(new Error(this.failed));
    if (this.pendingCount === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
  }

  private writerOf(stream: string): StreamWriter {
    let writer = this.writers.get(stream);
    if (writer === undefined) {
      writer = { stream, queue: [], writing: false, opened: false, expectedVersion: -1, lastTag: undefined };
      this.writers.set(stream, writer);
      if (this.writers.size > OPEN_STREAMS_MAX) this.forgetIdle();
    }
    return writer;
  }

  private forgetIdle(): void {
    for (const [stream, writer] of this.writers) {
      if (this.writers.size <= OPEN_STREAMS_MAX / 2) break;
      if (!writer.writing && writer.queue.length === 0) this.writers.delete(stream);
    }
  }

  /** Resolves once fewer than `limit` events are queued or being written (back-pressure). */
  below(limit: number): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(new Error(this.failed));
    if (this.pendingCount < limit) return Promise.resolve();
    return new Promise((resolve, reject) => this.belowWaiters.push({ limit, resolve, reject }));
  }

  private kick(writer: StreamWriter): void {
    if (writer.writing || writer.queue.length === 0 || this.failed !== undefined) return;
    const limit = this.options.maxAllowedWritesInFlight;
    if (limit > 0 && this.inFlight >= limit) {
      this.held.add(writer);
      return;
    }
    this.held.delete(writer);
    writer.writing = true;
    this.inFlight += 1;
    void this.writeLoop(writer)
      .catch((err: unknown) => this.fail(err instanceof Error ? err.message : String(err)))
      .finally(() => {
        writer.writing = false;
        this.inFlight -= 1;
        // Events queued after the loop saw an empty queue, and before this ran, go now.
        if (writer.queue.length > 0) this.kick(writer);
        this.kickWaiting();
        this.settle();
      });
  }

  private kickWaiting(): void {
    const limit = this.options.maxAllowedWritesInFlight;
    for (const writer of [...this.held]) {
      if (limit > 0 && this.inFlight >= limit) return;
      this.held.delete(writer);
      this.kick(writer);
    }
  }

  private async writeLoop(writer: StreamWriter): Promise<void> {
    while (writer.queue.length > 0 && this.failed === undefined) {
      if (!writer.opened) await this.open(writer);
      if (this.failed !== undefined) return;
      const batch = this.takeBatch(writer);
      if (batch.length === 0) continue;
      await this.track(writer.stream);
      const result = await this.options.db.append(writer.stream, writer.expectedVersion, batch.map((e) => this.toNewEvent(e)));
      if (result.kind === 'wrong-expected-version') {
        throw new Error(
          `The '${writer.stream}' stream has been written to from the outside. Expected Version: ${writer.expectedVersion}, Current Version: ${result.currentVersion}.`,
        );
      }
      if (result.kind === 'stream-deleted') throw new Error(`Stream : ${writer.stream} is deleted. Cannot emit events to it`);
      writer.expectedVersion = result.lastEventNumber;
      writer.lastTag = batch[batch.length - 1]?.causedBy;
      const followUps: EmittedEvent[] = [];
      batch.forEach((e, index) => {
        if (e.then !== undefined) followUps.push({ ...e, spec: e.then(result.firstEventNumber + index), then: undefined });
      });
      if (followUps.length > 0) this.emit(followUps);
      this.pendingCount -= batch.length;
      this.wakeBelow();
    }
  }

  /** Up to maxWriteBatchLength events, whole source-event groups only; drops what is already written. */
  private takeBatch(writer: StreamWriter): EmittedEvent[] {
    const batch: EmittedEvent[] = [];
    while (writer.queue.length > 0) {
      const next = writer.queue[0] as EmittedEvent;
      if (writer.lastTag !== undefined && compareTags(next.causedBy, writer.lastTag) <= 0) {
        writer.queue.shift();
        this.pendingCount -= 1;
        this.wakeBelow();
        continue;
      }
      const last = batch[batch.length - 1];
      if (batch.length >= this.options.maxWriteBatchLength && last !== undefined && last.group !== next.group) break;
      batch.push(next);
      writer.queue.shift();
    }
    return batch;
  }

  /** The event with its metadata: `$v`, the causing tag, extra metadata, `$causedBy`, `$correlationId`. */
  private toNewEvent(e: EmittedEvent): NewEvent {
    let metadata = this.metadataPrefix + tagMembers(e.causedBy);
    let hasCorrelation = false;
    const extra = e.spec.extra;
    if (extra !== null) {
      for (const key in extra) {
        if (key === '$causedBy') continue;
        if (key === '$correlationId') hasCorrelation = true;
        metadata += `,${JSON.stringify(key)}:${extra[key]}`;
      }
    }
    if (e.causedById !== undefined) metadata += `,"$causedBy":"${e.causedById}"`;
    if (!hasCorrelation && e.correlationId !== undefined) metadata += `,"$correlationId":${JSON.stringify(e.correlationId)}`;
    return {
      eventId: randomUUID(),
      eventType: e.spec.eventType,
      data: Buffer.from(e.spec.data, 'utf8'),
      metadata: Buffer.from(`${metadata}}`, 'utf8'),
      isJson: e.spec.isJson,
    };
  }

  /** Reads the stream's state and last event: where to append, and what is already there. */
  private async open(writer: StreamWriter): Promise<void> {
    const { db, version } = this.options;
    const state = await db.streamState(writer.stream);
    if (state.kind === 'hard-deleted') throw new Error(`Stream : ${writer.stream} is deleted. Cannot emit events to it`);
    let newLogicalStream = true;
    let truncateBefore: number | undefined;
    if (state.kind === 'exists' && !state.softDeleted) {
      writer.expectedVersion = state.lastEventNumber;
      const last = await db.readEvent(writer.stream, -1);
      if (last.kind === 'success') {
        const parsed = parseTag(last.event.metadata);
        if (parsed === undefined)
          throw new Error(`The '${writer.stream}' stream managed by projection ${version.id} has been written to from the outside.`);
        if (parsed.version === undefined || parsed.version.id !== version.id)
          throw new Error(
            `Multiple projections emitting to the same stream detected.  Stream: '${writer.stream}'. Last event projection: '${parsed.version?.id ?? -1}'.  Emitting projection: '${version.id}'`,
          );
        if (version.epoch > parsed.version.version) truncateBefore = state.lastEventNumber + 1;
        else {
          newLogicalStream = false;
          writer.lastTag = parsed.tag;
        }
      } else {
        truncateBefore = state.lastEventNumber + 1;
      }
    } else if (state.kind === 'exists') {
      writer.expectedVersion = -1;
    }
    if (newLogicalStream) await this.writeMetadata(writer.stream, truncateBefore);
    writer.opened = true;
  }

  /** EmittedStream.SubmitWriteMetadata: `$` streams readable by all; `$maxCount`; `$tb` after a reset. */
  private async writeMetadata(stream: string, truncateBefore: number | undefined): Promise<void> {
    const metadata: Record<string, unknown> = {};
    const maxCount = this.options.maxCountFor?.(stream);
    if (maxCount !== undefined) metadata['$maxCount'] = maxCount;
    if (truncateBefore !== undefined) metadata['$tb'] = truncateBefore;
    if (stream.startsWith('$')) metadata['$acl'] = { $r: '$all', $mr: '$all' };
    if (Object.keys(metadata).length === 0) return;
    const result = await this.options.db.setStreamMetadata(stream, -2, metadata);
    if (result.kind === 'stream-deleted') throw new Error(`Stream : ${stream} is deleted. Cannot emit events to it`);
  }

  /** `$StreamTracked` once per stream (the set is read from the tracking stream on first use). */
  private async track(stream: string): Promise<void> {
    const trackingStream = this.options.trackingStream;
    if (trackingStream === undefined) return;
    this.trackingLoad ??= this.loadTracked(trackingStream);
    await this.trackingLoad;
    if (this.tracked?.has(stream)) return;
    this.tracked?.add(stream);
    const event: NewEvent = {
      eventId: randomUUID(),
      eventType: EventTypes.StreamTracked,
      data: Buffer.from(stream, 'utf8'),
      metadata: EMPTY,
      isJson: false,
    };
    await this.options.db.append(trackingStream, -2, [event]);
  }

  private async loadTracked(trackingStream: string): Promise<void> {
    this.tracked = new Set(await readAllData(this.options.db, trackingStream));
  }

  private wakeBelow(): void {
    if (this.belowWaiters.length === 0) return;
    const still: typeof this.belowWaiters = [];
    for (const waiter of this.belowWaiters) {
      if (this.pendingCount < waiter.limit) waiter.resolve();
      else still.push(waiter);
    }
    this.belowWaiters = still;
  }

  private fail(message: string): void {
    if (this.failed !== undefined) return;
    this.failed = message;
    for (const writer of this.writers.values()) writer.queue = [];
    this.pendingCount = 0;
    const waiters = [...this.drainWaiters, ...this.belowWaiters];
    this.drainWaiters = [];
    this.belowWaiters = [];
    for (const waiter of waiters) waiter.reject(new Error(message));
    this.options.onFault(message);
  }

  private settle(): void {
    if (this.pendingCount !== 0 || this.inFlight !== 0 || this.drainWaiters.length === 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const waiter of waiters) waiter.resolve();
  }
}

/** Every event's data (as text) in a stream, oldest first. */
export async function readAllData(db: EventDb, stream: string): Promise<string[]> {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const page = await db.readStream(stream, from, 1000, 'forward');
    if (page.kind !== 'success') return out;
    for (const e of page.events) out.push(e.data.toString('utf8'));
    if (page.isEndOfStream || page.events.length === 0) return out;
    from = page.nextEventNumber;
  }
}

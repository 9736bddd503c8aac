/**
 * A small in-memory EventDb for API development and `inject` tests. It follows EventStoreDB's
 * write rules (IndexWriter.CheckCommit: expected versions, idempotency by event id, soft-delete
 * via `$tb`, hard-delete tombstones) and read-time visibility ($maxCount, $maxAge, $tb), so the
 * HTTP layer can be tested before, and independently of, the real engine.
 */
import type {
  AllPosition,
  AppendResult,
  CommittedWrite,
  EngineStats,
  EventDb,
  NewEvent,
  ReadAllResult,
  ReadDirection,
  ReadEventResult,
  ReadStreamResult,
  RecordedEvent,
  StreamMetadata,
  StreamState,
} from '../../node/src/storage/event-db-types.js';
import { TOMBSTONE_EVENT_NUMBER } from '../../node/src/storage/event-db-types.js';

const SOFT_DELETED_TB = Number.MAX_SAFE_INTEGER;
const RECORD_SPACING = 100;

interface StreamRecord {
  readonly events: RecordedEvent[];
  hardDeleted: boolean;
}

export class MemoryEventDb implements EventDb {
  private readonly streams = new Map<string, StreamRecord>();
  private readonly log: RecordedEvent[] = [];
  private readonly listeners = new Set<(write: CommittedWrite) => void>();
  private nextLogPosition = 0;
  private closed = false;

  constructor(private readonly nowMs: () => number = () => Date.now()) {}

  async append(
    stream: string,
    expectedVersion: number,
    events: readonly NewEvent[],
  ): Promise<AppendResult> {
    this.assertOpen();
    const record = this.streams.get(stream);
    if (record?.hardDeleted === true) return { kind: 'stream-deleted' };
    const current = lastNumber(record);
    const softDeleted = this.isSoftDeleted(stream);
    const check = this.checkCommit(stream, expectedVersion, events, { current, softDeleted });
    if (check !== 'ok') return check;
    const result = this.write(stream, events);
    if (softDeleted && !stream.startsWith('$$')) {
      const raw = { ...this.metadataOf(stream).raw, $tb: current + 1 };
      this.write(`$$${stream}`, [metadataEvent(raw)]);
    }
    return result;
  }

  private checkCommit(
    stream: string,
    expected: number,
    events: readonly NewEvent[],
    state: { current: number; softDeleted: boolean },
  ): AppendResult | 'ok' {
    const { current, softDeleted } = state;
    const wrong: AppendResult = { kind: 'wrong-expected-version', currentVersion: current };
    if (expected === -4) {
      if (softDeleted) return { kind: 'stream-deleted' };
      if (current < 0 && lastNumber(this.streams.get(`$$${stream}`)) < 0) return wrong;
    }
    const existing = this.streams.get(stream)?.events ?? [];
    if (expected === -2 || expected === -4) {
      const matches = events.map((event) => existing.find((e) => e.eventId === event.eventId));
      if (matches[0] === undefined) return 'ok';
      if (matches.some((m) => m === undefined)) return wrong;
      return this.idempotent(matches as RecordedEvent[]);
    }
    if (expected < current) {
      if (expected === -1 && softDeleted) return 'ok';
      const matches = events.map((event, i) =>
        existing.find((e) => e.eventNumber === expected + 1 + i && e.eventId === event.eventId),
      );
      if (matches.some((m) => m === undefined)) return wrong;
      return this.idempotent(matches as RecordedEvent[]);
    }
    return expected > current ? wrong : 'ok';
  }

  private idempotent(matches: readonly RecordedEvent[]): AppendResult {
    const first = matches[0];
    const last = matches[matches.length - 1];
    if (first === undefined || last === undefined)
      throw new Error('idempotent check on an empty batch');
    return {
      kind: 'success',
      firstEventNumber: first.eventNumber,
      lastEventNumber: last.eventNumber,
      commitPosition: last.commitPosition,
      idempotent: true,
    };
  }

  private write(stream: string, events: readonly NewEvent[], eventNumber?: number): AppendResult {
    const record = this.streams.get(stream) ?? { events: [], hardDeleted: false };
    this.streams.set(stream, record);
    const first = eventNumber ?? lastNumber(record) + 1;
    const commitPosition = this.nextLogPosition + events.length * RECORD_SPACING;
    const createdMs = this.nowMs();
    events.forEach((event, i) => {
      const recorded: RecordedEvent = {
        stream,
        eventNumber: first + i,
        eventId: event.eventId,
        eventType: event.eventType,
        data: Buffer.from(event.data),
        metadata: Buffer.from(event.metadata),
        isJson: event.isJson,
        createdMs,
        logPosition: this.nextLogPosition,
        commitPosition,
      };
      this.nextLogPosition += RECORD_SPACING;
      record.events.push(recorded);
      this.log.push(recorded);
    });
    this.nextLogPosition = commitPosition + RECORD_SPACING;
    const lastEventNumber = first + events.length - 1;
    const write = { stream, firstEventNumber: first, lastEventNumber, commitPosition };
    for (const listener of this.listeners) listener(write);
    return {
      kind: 'success',
      firstEventNumber: first,
      lastEventNumber,
      commitPosition,
      idempotent: false,
    };
  }

  async deleteStream(
    stream: string,
    expectedVersion: number,
    hard: boolean,
  ): Promise<AppendResult> {
    this.assertOpen();
    const record = this.streams.get(stream);
    if (record?.hardDeleted === true) return { kind: 'stream-deleted' };
    const current = lastNumber(record);
    const softDeleted = this.isSoftDeleted(stream);
    const metaVersion = lastNumber(this.streams.get(`$$${stream}`));
    const wrong: AppendResult = { kind: 'wrong-expected-version', currentVersion: current };
    if (expectedVersion === -4 && (softDeleted || current < 0))
      return softDeleted ? { kind: 'stream-deleted' } : wrong;
    if (expectedVersion >= -1 && expectedVersion !== current) return wrong;
    if (hard) {
      const tombstone: NewEvent = {
        eventId: zeroGuid(),
        eventType: '$streamDeleted',
        data: new Uint8Array(),
        metadata: new Uint8Array(),
        isJson: false,
      };
      const result = this.write(stream, [tombstone], TOMBSTONE_EVENT_NUMBER);
      (this.streams.get(stream) as StreamRecord).hardDeleted = true;
      return result.kind === 'success'
        ? { ...result, firstEventNumber: current, lastEventNumber: current }
        : result;
    }
    if (current < 0 && metaVersion < 0) return wrong;
    this.write(`$$${stream}`, [metadataEvent({ $tb: SOFT_DELETED_TB })]);
    return {
      kind: 'success',
      firstEventNumber: current,
      lastEventNumber: current,
      commitPosition: this.nextLogPosition,
      idempotent: false,
    };
  }

  async readStream(
    stream: string,
    from: number,
    maxCount: number,
    direction: ReadDirection,
  ): Promise<ReadStreamResult> {
    this.assertOpen();
    const record = this.streams.get(stream);
    if (record?.hardDeleted === true) return { kind: 'stream-deleted' };
    const last = lastNumber(record);
    if (record === undefined || last < 0 || this.isSoftDeleted(stream))
      return { kind: 'stream-not-found' };
    const visible = this.visibleEvents(stream, record);
    if (direction === 'forward') {
      const end = from + maxCount - 1;
      const events = visible.filter((e) => e.eventNumber >= from && e.eventNumber <= end);
      const isEndOfStream = end >= last;
      return {
        kind: 'success',
        events,
        lastEventNumber: last,
        nextEventNumber: isEndOfStream ? last + 1 : end + 1,
        isEndOfStream,
      };
    }
    const start = from < 0 ? last : from;
    const end = Math.max(0, start - maxCount + 1);
    const events = visible.filter((e) => e.eventNumber <= start && e.eventNumber >= end).reverse();
    const isEndOfStream = end === 0;
    return {
      kind: 'success',
      events,
      lastEventNumber: last,
      nextEventNumber: isEndOfStream ? -1 : end - 1,
      isEndOfStream,
    };
  }

  async readEvent(stream: string, eventNumber: number): Promise<ReadEventResult> {
    this.assertOpen();
    const record = this.streams.get(stream);
    if (record?.hardDeleted === true) return { kind: 'stream-deleted' };
    if (record === undefined || lastNumber(record) < 0 || this.isSoftDeleted(stream))
      return { kind: 'stream-not-found' };
    const wanted = eventNumber < 0 ? lastNumber(record) : eventNumber;
    const event = this.visibleEvents(stream, record).find((e) => e.eventNumber === wanted);
    return event === undefined ? { kind: 'event-not-found' } : { kind: 'success', event };
  }

  async readAll(
    from: AllPosition | undefined,
    maxCount: number,
    direction: ReadDirection,
  ): Promise<ReadAllResult> {
    this.assertOpen();
    const cmp = (e: RecordedEvent, p: AllPosition): number =>
      e.commitPosition - p.commitPosition || e.logPosition - p.preparePosition;
    if (direction === 'forward') {
      const start = from ?? { commitPosition: 0, preparePosition: 0 };
      const events = this.log.filter((e) => cmp(e, start) >= 0).slice(0, maxCount);
      const last = events[events.length - 1];
      const nextPosition =
        last === undefined
          ? start
          : { commitPosition: last.commitPosition, preparePosition: last.logPosition + 1 };
      return { events, nextPosition, isEnd: events.length < maxCount };
    }
    const events = this.log
      .filter((e) => from === undefined || cmp(e, from) < 0)
      .reverse()
      .slice(0, maxCount);
    const last = events[events.length - 1];
    const nextPosition =
      last === undefined
        ? { commitPosition: 0, preparePosition: 0 }
        : { commitPosition: last.commitPosition, preparePosition: last.logPosition };
    return { events, nextPosition, isEnd: events.length < maxCount };
  }

  async streamState(stream: string): Promise<StreamState> {
    const record = this.streams.get(stream);
    if (record?.hardDeleted === true) return { kind: 'hard-deleted' };
    const last = lastNumber(record);
    if (last < 0) return { kind: 'no-stream' };
    return { kind: 'exists', lastEventNumber: last, softDeleted: this.isSoftDeleted(stream) };
  }

  async getStreamMetadata(
    stream: string,
  ): Promise<{ metadata: StreamMetadata; metastreamVersion: number }> {
    return {
      metadata: this.metadataOf(stream),
      metastreamVersion: lastNumber(this.streams.get(`$$${stream}`)),
    };
  }

  async setStreamMetadata(
    stream: string,
    expectedVersion: number,
    raw: Record<string, unknown>,
    eventId?: string,
  ): Promise<AppendResult> {
    if (this.streams.get(stream)?.hardDeleted === true) return { kind: 'stream-deleted' };
    return this.append(`$$${stream}`, expectedVersion, [metadataEvent(raw, eventId)]);
  }

  onCommitted(listener: (write: CommittedWrite) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async mergeIndexes(): Promise<void> {}

  stats(): EngineStats {
    const zeroWriter = {
      lastFlushSizeBytes: 0,
      meanFlushSizeBytes: 0,
      maxFlushSizeBytes: 0,
      lastFlushDelayMs: 0,
      meanFlushDelayMs: 0,
      maxFlushDelayMs: 0,
      queuedFlushMessages: 0,
      flushCount: 0,
    };
    return {
      writerCheckpoint: this.nextLogPosition,
      chaserCheckpoint: this.nextLogPosition,
      writer: zeroWriter,
      readIndex: {
        cachedRecord: 0,
        notCachedRecord: 0,
        cachedStreamInfo: 0,
        notCachedStreamInfo: 0,
        hashCollisions: 0,
      },
      diskIo: { readBytes: 0, writtenBytes: 0, readOps: 0, writeOps: 0 },
      index: { memTableEntries: this.log.length, tableCount: 0 },
      chunkCount: 1,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('MemoryEventDb is closed');
  }

  private isSoftDeleted(stream: string): boolean {
    return !stream.startsWith('$$') && this.metadataOf(stream).truncateBefore === SOFT_DELETED_TB;
  }

  private metadataOf(stream: string): StreamMetadata {
    const last = this.streams.get(`$$${stream}`)?.events.at(-1);
    let raw: Record<string, unknown> = {};
    if (last?.isJson === true) {
      try {
        const parsed: unknown = JSON.parse(last.data.toString('utf8'));
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
          raw = parsed as Record<string, unknown>;
      } catch {
        raw = {};
      }
    }
    const positive = (v: unknown): number | undefined =>
      typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
    const tb = raw.$tb;
    return {
      raw,
      ...(positive(raw.$maxAge) !== undefined ? { maxAgeSeconds: positive(raw.$maxAge) } : {}),
      ...(positive(raw.$maxCount) !== undefined ? { maxCount: positive(raw.$maxCount) } : {}),
      ...(typeof tb === 'number' && tb >= 0
        ? { truncateBefore: Math.min(tb, SOFT_DELETED_TB) }
        : {}),
      ...(positive(raw.$cacheControl) !== undefined
        ? { cacheControlSeconds: positive(raw.$cacheControl) }
        : {}),
      ...(typeof raw.$acl === 'object' && raw.$acl !== null
        ? { acl: raw.$acl as StreamMetadata['acl'] }
        : {}),
    } as StreamMetadata;
  }

  private visibleEvents(stream: string, record: StreamRecord): RecordedEvent[] {
    const last = lastNumber(record);
    if (stream.startsWith('$$')) return record.events.filter((e) => e.eventNumber === last);
    const metadata = this.metadataOf(stream);
    const minNumber = Math.max(
      0,
      metadata.maxCount === undefined ? 0 : last - metadata.maxCount + 1,
      metadata.truncateBefore ?? 0,
    );
    const minCreatedMs =
      metadata.maxAgeSeconds === undefined
        ? -Infinity
        : this.nowMs() - metadata.maxAgeSeconds * 1000;
    return record.events.filter((e) => e.eventNumber >= minNumber && e.createdMs >= minCreatedMs);
  }
}

function lastNumber(record: StreamRecord | undefined): number {
  return record?.events.at(-1)?.eventNumber ?? -1;
}

function zeroGuid(): string {
  return '00000000-0000-0000-0000-000000000000';
}

function metadataEvent(raw: Record<string, unknown>, eventId?: string): NewEvent {
  return {
    eventId: eventId ?? crypto.randomUUID(),
    eventType: '$metadata',
    data: Buffer.from(JSON.stringify(raw)),
    metadata: new Uint8Array(),
    isJson: true,
  };
}

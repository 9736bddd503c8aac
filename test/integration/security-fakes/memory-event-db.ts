/**
 * A minimal in-memory EventDb for testing the security layer with fastify inject() before (and
 * independently of) the real engine. Implements the semantics the security layer relies on:
 * expected versions, soft delete and recreation, metadata as the last event of `$$stream`,
 * and commit notifications. Not a conformance-grade engine.
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
} from '../../../node/src/storage/event-db-types.js';

interface StreamData {
  events: RecordedEvent[];
  softDeleted: boolean;
  hardDeleted: boolean;
}

export class MemoryEventDb implements EventDb {
  private readonly streams = new Map<string, StreamData>();
  private readonly listeners = new Set<(write: CommittedWrite) => void>();
  private position = 0;
  mergeCount = 0;

  async append(stream: string, expectedVersion: number, events: readonly NewEvent[]): Promise<AppendResult> {
    const data = this.streams.get(stream) ?? { events: [], softDeleted: false, hardDeleted: false };
    if (data.hardDeleted) return { kind: 'stream-deleted' };
    const last = data.events.length - 1;
    const exists = last >= 0 && !data.softDeleted;
    const ok =
      expectedVersion === -2 ||
      (expectedVersion === -1 && !exists) ||
      (expectedVersion === -4 && exists) ||
      expectedVersion === last;
    if (!ok) return { kind: 'wrong-expected-version', currentVersion: exists ? last : -1 };
    data.softDeleted = false;
    const first = last + 1;
    for (const e of events) {
      this.position += 100;
      data.events.push({
        stream,
        eventNumber: data.events.length,
        eventId: e.eventId,
        eventType: e.eventType,
        data: Buffer.from(e.data),
        metadata: Buffer.from(e.metadata),
        isJson: e.isJson,
        createdMs: Date.now(),
        logPosition: this.position,
        commitPosition: this.position,
      });
    }
    this.streams.set(stream, data);
    const write = { stream, firstEventNumber: first, lastEventNumber: data.events.length - 1, commitPosition: this.position };
    for (const l of this.listeners) l(write);
    return { kind: 'success', firstEventNumber: first, lastEventNumber: write.lastEventNumber, commitPosition: this.position, idempotent: false };
  }

  async deleteStream(stream: string, expectedVersion: number, hard: boolean): Promise<AppendResult> {
    const data = this.streams.get(stream);
    if (data === undefined || data.events.length === 0) return { kind: 'wrong-expected-version', currentVersion: -1 };
    const last = data.events.length - 1;
    if (expectedVersion !== -2 && expectedVersion !== last) return { kind: 'wrong-expected-version', currentVersion: last };
    if (hard) data.hardDeleted = true;
    else data.softDeleted = true;
    const write = { stream: hard ? stream : `$$${stream}`, firstEventNumber: last, lastEventNumber: last, commitPosition: this.position };
    for (const l of this.listeners) l(write);
    return { kind: 'success', firstEventNumber: last, lastEventNumber: last, commitPosition: this.position, idempotent: false };
  }

  async readStream(stream: string, from: number, maxCount: number, direction: ReadDirection): Promise<ReadStreamResult> {
    const data = this.streams.get(stream);
    if (data?.hardDeleted === true) return { kind: 'stream-deleted' };
    if (data === undefined || data.softDeleted || data.events.length === 0) return { kind: 'stream-not-found' };
    const last = data.events.length - 1;
    if (direction === 'forward') {
      const events = data.events.slice(from, from + maxCount);
      const next = from + events.length;
      return { kind: 'success', events, lastEventNumber: last, nextEventNumber: next, isEndOfStream: next > last };
    }
    const start = Math.min(from, last);
    const events = data.events.slice(Math.max(0, start - maxCount + 1), start + 1).reverse();
    return { kind: 'success', events, lastEventNumber: last, nextEventNumber: start - events.length, isEndOfStream: start - events.length < 0 };
  }

  async readEvent(stream: string, eventNumber: number): Promise<ReadEventResult> {
    const data = this.streams.get(stream);
    if (data?.hardDeleted === true) return { kind: 'stream-deleted' };
    if (data === undefined || data.softDeleted || data.events.length === 0) return { kind: 'stream-not-found' };
    const event = eventNumber === -1 ? data.events.at(-1) : data.events[eventNumber];
    return event === undefined ? { kind: 'event-not-found' } : { kind: 'success', event };
  }

  async readAll(_from: AllPosition | undefined, _maxCount: number, _direction: ReadDirection): Promise<ReadAllResult> {
    return { events: [], nextPosition: { commitPosition: 0, preparePosition: 0 }, isEnd: true };
  }

  async streamState(stream: string): Promise<StreamState> {
    const data = this.streams.get(stream);
    if (data === undefined || data.events.length === 0) return { kind: 'no-stream' };
    if (data.hardDeleted) return { kind: 'hard-deleted' };
    return { kind: 'exists', lastEventNumber: data.events.length - 1, softDeleted: data.softDeleted };
  }

  async getStreamMetadata(stream: string): Promise<{ metadata: StreamMetadata; metastreamVersion: number }> {
    const last = await this.readEvent(`$$${stream}`, -1);
    if (last.kind !== 'success') return { metadata: { raw: {} }, metastreamVersion: -1 };
    const raw = JSON.parse(last.event.data.toString('utf8')) as Record<string, unknown>;
    const aclRaw = raw['$acl'] as Record<string, unknown> | undefined;
    const roles = (v: unknown): string[] | undefined =>
      typeof v === 'string' ? [v] : Array.isArray(v) ? (v as string[]) : undefined;
    const acl = aclRaw === undefined ? undefined : Object.fromEntries(
      (['r', 'w', 'd', 'mr', 'mw'] as const)
        .map((k) => [k, roles(aclRaw[`$${k}`])] as const)
        .filter(([, v]) => v !== undefined),
    );
    return { metadata: { raw, ...(acl === undefined ? {} : { acl }) }, metastreamVersion: last.event.eventNumber };
  }

  async setStreamMetadata(stream: string, expectedVersion: number, raw: Record<string, unknown>, eventId?: string): Promise<AppendResult> {
    return this.append(`$$${stream}`, expectedVersion, [
      { eventId: eventId ?? crypto.randomUUID(), eventType: '$metadata', data: Buffer.from(JSON.stringify(raw)), metadata: new Uint8Array(0), isJson: true },
    ]);
  }

  onCommitted(listener: (write: CommittedWrite) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async mergeIndexes(): Promise<void> {
    this.mergeCount += 1;
  }

  stats(): EngineStats {
    return {
      writerCheckpoint: this.position,
      chaserCheckpoint: this.position,
      writer: { lastFlushSizeBytes: 0, meanFlushSizeBytes: 0, maxFlushSizeBytes: 0, lastFlushDelayMs: 0, meanFlushDelayMs: 0, maxFlushDelayMs: 0, queuedFlushMessages: 0, flushCount: 0 },
      readIndex: { cachedRecord: 0, notCachedRecord: 0, cachedStreamInfo: 0, notCachedStreamInfo: 0, hashCollisions: 0 },
      diskIo: { readBytes: 0, writtenBytes: this.position, readOps: 0, writeOps: 0 },
      index: { memTableEntries: 0, tableCount: 0 },
      chunkCount: 1,
    };
  }

  async close(): Promise<void> {}
}

/**
 * Reads a projection's source events in order from a checkpoint tag, over the EventDb interface:
 *
 * - `all`: $all forward by log position, links not resolved (the tag is C:/P: of the record);
 * - `stream`: one stream (a category is its `$ce-` stream), `$>` links resolved to their targets
 *   (the tag is the number in the stream read);
 * - `streams`: several streams merged by log position, links resolved. A merge may only hand out
 *   an event once every stream has been read past it, so each round reads each stream up to the
 *   commit position known when the round began (`CommitWatch.position`): nothing below it can
 *   still appear.
 *
 * A page says `eof` when the reader has caught up with the log; `CommitWatch.wait` resolves on
 * the next durable write (or the abort signal), so continuous projections follow the log.
 */
import type { EventDb, RecordedEvent } from '../../storage/event-db-types.js';
import type { CheckpointTag } from '../checkpoint-tag.js';
import { EventTypes } from '../names.js';

/** One event as a projection sees it. */
export interface SourceEvent {
  /** The (resolved) event. */
  readonly event: RecordedEvent;
  /** The link it was read through, when it was resolved from one. */
  readonly link: RecordedEvent | undefined;
  /** The record actually read (the link when resolved): its stream, number and positions tag it. */
  readonly position: RecordedEvent;
}

export interface ReaderPage {
  readonly events: SourceEvent[];
  /** True when the reader has caught up with the log. */
  readonly eof: boolean;
}

export interface EventReader {
  read(maxCount: number): Promise<ReaderPage>;
  /** How far through the sources, 0-100. */
  progress(): number;
}

/** Durable-write notifications shared by the projections: the highest commit position and a wake-up. */
export class CommitWatch {
  private waiters = new Set<() => void>();
  private unsubscribe: () => void;
  position: number;

  constructor(db: EventDb) {
    this.position = db.stats().writerCheckpoint;
    this.unsubscribe = db.onCommitted((write) => {
      if (write.commitPosition > this.position) this.position = write.commitPosition;
      if (this.waiters.size === 0) return;
      const waiters = this.waiters;
      this.waiters = new Set();
      for (const wake of waiters) wake();
    });
  }

  /**
   * Resolves once a write past `sincePosition` is durable (at once if one already is), after
   * `timeoutMs`, or when `signal` aborts.
   */
  wait(signal: AbortSignal, sincePosition: number, timeoutMs: number): Promise<void> {
    if (signal.aborted || this.position > sincePosition) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }

  close(): void {
    this.unsubscribe();
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }
}

const LINK_SEPARATOR = '@';

/** `N@stream` of a link event, or undefined when the data is not a link. */
export function parseLinkTarget(data: Buffer): { stream: string; eventNumber: number } | undefined {
  const text = data.toString('utf8');
  const at = text.indexOf(LINK_SEPARATOR);
  if (at <= 0) return undefined;
  const eventNumber = Number(text.slice(0, at));
  if (!Number.isSafeInteger(eventNumber) || eventNumber < 0) return undefined;
  return { stream: text.slice(at + 1), eventNumber };
}

/** Resolves a `$>` event to its target; unresolvable links come back as themselves with no link. */
/**
 * May the projection's user read the target's stream? A projection run by a user outside
 * `$admins`/`$ops` resolves a link only to a target it may read; other links stay links, as
 * links whose target is gone do, so the projection never sees what the target's ACL denies.
 */
export type LinkTargetCheck = (stream: string) => Promise<boolean>;

export async function resolveLink(db: EventDb, record: RecordedEvent, mayRead?: LinkTargetCheck): Promise<SourceEvent> {
  if (record.eventType !== EventTypes.LinkTo) return { event: record, link: undefined, position: record };
  const target = parseLinkTarget(record.data);
  if (target === undefined) return { event: record, link: undefined, position: record };
  if (mayRead !== undefined && !(await mayRead(target.stream))) return { event: record, link: record, position: record };
  const result = await db.readEvent(target.stream, target.eventNumber);
  if (result.kind !== 'success') return { event: record, link: record, position: record };
  return { event: result.event, link: record, position: record };
}

class AllReader implements EventReader {
  private prepare: number;
  private caughtUp = false;

  constructor(private readonly db: EventDb, from: CheckpointTag & { mode: 'position' }, private readonly watch: CommitWatch) {
    this.prepare = from.prepare;
  }

  async read(maxCount: number): Promise<ReaderPage> {
    const start = Math.max(0, this.prepare);
    const result = await this.db.readAll({ commitPosition: start, preparePosition: start }, maxCount + 1, 'forward');
    const events: SourceEvent[] = [];
    for (const record of result.events) {
      if (record.logPosition <= this.prepare) continue;
      if (events.length >= maxCount) break;
      events.push({ event: record, link: undefined, position: record });
      this.prepare = record.logPosition;
    }
    const eof = result.isEnd && events.length < maxCount;
    this.caughtUp = eof;
    return { events, eof };
  }

  progress(): number {
    const end = this.watch.position;
    if (end <= 0 || this.caughtUp) return 100;
    return Math.min(100, (100 * Math.max(0, this.prepare)) / end);
  }
}

class StreamReader implements EventReader {
  private last: number;
  private lastEventNumber = -1;

  constructor(private readonly db: EventDb, private readonly stream: string, from: number, private readonly mayRead?: LinkTargetCheck) {
    this.last = from;
  }

  async read(maxCount: number): Promise<ReaderPage> {
    const result = await this.db.readStream(this.stream, this.last + 1, maxCount, 'forward');
    if (result.kind !== 'success') return { events: [], eof: true };
    this.lastEventNumber = result.lastEventNumber;
    const events: SourceEvent[] = [];
    for (const record of result.events) {
      if (record.eventNumber <= this.last) continue;
      events.push(await resolveLink(this.db, record, this.mayRead));
      this.last = record.eventNumber;
    }
    // Events expired or truncated away leave gaps: jump to where the read says the next one is.
    if (result.events.length === 0 && result.nextEventNumber - 1 > this.last) this.last = result.nextEventNumber - 1;
    return { events, eof: result.isEndOfStream };
  }

  progress(): number {
    if (this.lastEventNumber < 0) return 100;
    return Math.min(100, (100 * (this.last + 1)) / (this.lastEventNumber + 1));
  }
}

class MultiStreamReader implements EventReader {
  private readonly readers: Map<string, StreamReader>;
  private readonly buffers = new Map<string, SourceEvent[]>();

  constructor(db: EventDb, from: CheckpointTag & { mode: 'streams' }, streams: readonly string[], private readonly watch: CommitWatch, mayRead?: LinkTargetCheck) {
    this.readers = new Map(streams.map((s) => [s, new StreamReader(db, s, from.streams[s] ?? -1, mayRead)]));
    for (const s of streams) this.buffers.set(s, []);
  }

  async read(maxCount: number): Promise<ReaderPage> {
    const limit = this.watch.position;
    const caughtUp = new Set<string>();
    const out: SourceEvent[] = [];
    while (out.length < maxCount) {
      let refilled = false;
      for (const [stream, reader] of this.readers) {
        const buffer = this.buffers.get(stream) ?? [];
        if (buffer.length > 0 || caughtUp.has(stream)) continue;
        const page = await reader.read(maxCount);
        buffer.push(...page.events);
        if (page.eof) caughtUp.add(stream);
        refilled = true;
      }
      let best: { buffer: SourceEvent[]; event: SourceEvent } | undefined;
      let waiting = false;
      for (const [stream, buffer] of this.buffers) {
        const head = buffer[0];
        if (head === undefined) {
          if (!caughtUp.has(stream)) waiting = true;
          continue;
        }
        if (best === undefined || head.position.logPosition < best.event.position.logPosition) best = { buffer, event: head };
      }
      // A stream not caught up has an empty buffer: read it again before handing anything out.
      if (waiting && refilled) continue;
      if (best === undefined || best.event.position.logPosition >= limit) break;
      out.push(best.event);
      best.buffer.shift();
    }
    return { events: out, eof: out.length < maxCount };
  }

  progress(): number {
    let sum = 0;
    for (const reader of this.readers.values()) sum += reader.progress();
    return this.readers.size === 0 ? 100 : sum / this.readers.size;
  }
}

export type ReaderSource =
  | { readonly kind: 'all' }
  | { readonly kind: 'stream'; readonly stream: string }
  | { readonly kind: 'streams'; readonly streams: readonly string[] };

export function createReader(db: EventDb, source: ReaderSource, from: CheckpointTag, watch: CommitWatch, mayRead?: LinkTargetCheck): EventReader {
  if (source.kind === 'all') {
    if (from.mode !== 'position') throw new Error('a $all projection needs a position checkpoint');
    return new AllReader(db, from, watch);
  }
  if (from.mode !== 'streams') throw new Error('a stream projection needs a stream checkpoint');
  if (source.kind === 'stream') return new StreamReader(db, source.stream, from.streams[source.stream] ?? -1, mayRead);
  return new MultiStreamReader(db, from, source.streams, watch, mayRead);
}

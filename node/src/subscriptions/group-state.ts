/**
 * One subscription group's state machine: buffered messages, messages in flight with their
 * deadlines, retries, parking, consumers and the checkpoint. Pure: time comes in as `nowMs`,
 * reads come in as their results, and what needs I/O (park a message, write a checkpoint) comes
 * out as effects the caller drains and performs (group-runtime.ts).
 *
 * Rules (after EventStoreDB's PersistentSubscription):
 * - The stream is read in batches of `readBatchSize` while the buffer (retries included) has
 *   room for another batch below `bufferSize`.
 * - A pull takes retries first, then buffered messages, in stream order, as the consumer
 *   strategy allows, up to the count asked and the consumer's free slots.
 * - A message in flight longer than `messageTimeoutMs` (0 = never), or nacked with Retry, is
 *   retried with `retryCount + 1`; one already retried `maxRetryCount` times is parked instead,
 *   with the reason `Reached retry count of N`. Nack Park parks at once; Skip drops the message;
 *   Stop retries it and drops the consumer that sent it (the original leaves Stop unimplemented).
 * - Checkpoint: the position up to which every message read is done (acked, skipped or
 *   parked). Each message remembers the position read before it; the checkpoint candidate is
 *   the lowest unfinished message's previous position (or the last position read when all are
 *   done), so a message a strategy skipped or a retry never lets the checkpoint pass it. It is
 *   written when `checkPointAfterMs` has passed and at least `minCheckPointCount` messages are
 *   behind it (checked on ticks), or at once when `maxCheckPointCount` are. A restart resumes
 *   reading after the checkpoint: every message is delivered at least once.
 * - Replayed parked messages are retries with no stream position; they never move the checkpoint.
 */
import type { ConsumerStrategy } from './consumer-strategy.js';
import { createConsumerStrategy } from './consumer-strategy.js';
import { originalOf, type ResolvedEvent } from './resolved-event.js';
import type { SubscriptionSettings } from './settings.js';

export type NackAction = 'park' | 'retry' | 'skip' | 'stop' | 'unknown';

export interface Message {
  /** The original event's id (the link's, for messages read through links). */
  readonly id: string;
  readonly resolved: ResolvedEvent;
  /** Event number in the subscribed stream; undefined for a replayed parked message. */
  readonly position: number | undefined;
  /** Read order, for checkpoint counting; undefined for a replayed parked message. */
  readonly seq: number | undefined;
  /** Position of the message read just before this one (undefined: none since the start). */
  readonly previousPosition: number | undefined;
  retryCount: number;
}

/** A message handed to a consumer, with the retry count it was delivered with. */
export interface Delivery {
  readonly message: Message;
  readonly retryCount: number;
}

export interface ConsumerIdentity {
  /** Stable key: credentials plus connection. */
  readonly id: string;
  readonly username: string;
  /** Remote address and port. */
  readonly from: string;
  readonly connectionName: string;
}

export type GroupEffect =
  | { readonly kind: 'park'; readonly message: Message; readonly reason: string }
  | { readonly kind: 'checkpoint'; readonly position: number };

export const PARK_REASON_NACK = "Client explicitly NAK'ed message.\nNacked from HTTP";

export function retryCountReason(maxRetryCount: number): string {
  return `Reached retry count of ${maxRetryCount}`;
}

/** Acknowledgement latencies kept per consumer for `extraStatistics` (the original's window). */
const LATENCY_WINDOW = 1000;
/** A consumer that has not asked for anything for this long is dropped (no messageTimeout: this). */
const CONSUMER_IDLE_DEFAULT_MS = 30_000;
const CONSUMER_IDLE_MIN_MS = 1_000;

interface Consumer {
  readonly identity: ConsumerIdentity;
  readonly inFlight: Set<string>;
  readonly maxInFlight: number;
  totalItems: number;
  lastTotalItems: number;
  lastSeenMs: number;
  activeRequests: number;
  readonly latenciesMs: number[];
}

interface InFlight {
  readonly message: Message;
  consumerId: string | undefined;
  readonly deadlineMs: number;
  readonly deliveryNo: number;
  readonly startedMs: number;
}

export interface ConsumerStats {
  readonly from: string;
  readonly username: string;
  readonly connectionName: string;
  readonly averageItemsPerSecond: number;
  readonly totalItemsProcessed: number;
  readonly countSinceLastMeasurement: number;
  readonly availableSlots: number;
  readonly inFlightMessages: number;
  readonly extraStatistics: readonly { readonly key: string; readonly value: number }[];
}

export interface GroupStats {
  readonly status: string;
  readonly averageItemsPerSecond: number;
  readonly totalItemsProcessed: number;
  readonly countSinceLastMeasurement: number;
  readonly lastCheckpointedEventPosition: number | undefined;
  readonly lastKnownEventPosition: number | undefined;
  readonly readBufferCount: number;
  readonly liveBufferCount: number;
  readonly retryBufferCount: number;
  readonly totalInFlightMessages: number;
  readonly outstandingMessagesCount: number;
  readonly connections: readonly ConsumerStats[];
}

export type ConnectResult = 'ok' | 'max-subscribers';

export interface GroupStateOptions {
  readonly settings: SubscriptionSettings;
  /** First event number to read. */
  readonly readFrom: number;
  /** The checkpoint loaded from the checkpoint stream, if any. */
  readonly checkpoint: number | undefined;
  readonly nowMs: number;
}

export class GroupState {
  readonly settings: SubscriptionSettings;
  private readonly strategy: ConsumerStrategy;
  private readonly consumerIdleMs: number;

  private nextReadFrom: number;
  private knownLastEventNumber: number | undefined;
  private readOutstanding = false;
  /** A commit was notified while a read was out: a "no such stream" answer may be stale. */
  private notifiedDuringRead = false;
  private caughtUp = false;
  private replaying = false;

  private buffer: Message[] = [];
  private retry: Message[] = [];
  private readonly inFlight = new Map<string, InFlight>();
  private readonly deadlines: { id: string; deadlineMs: number; deliveryNo: number }[] = [];
  private deadlineHead = 0;
  private deliveryCount = 0;
  private readonly parking = new Map<string, Message>();
  /** Messages read and not yet done, by seq; insertion order is seq order. */
  private readonly pending = new Map<number, Message>();

  private lastReadPosition: number | undefined;
  private lastReadSeq: number;
  private lastCheckpointSeq: number;
  private lastCheckpointPosition: number | undefined;
  private lastCheckpointMs = Number.NEGATIVE_INFINITY;
  private lastKnownPosition: number | undefined;

  private readonly consumers = new Map<string, Consumer>();
  private totalItems = 0;
  private lastTotalItems = 0;
  private lastMeasurementMs: number;
  private effects: GroupEffect[] = [];

  constructor(options: GroupStateOptions) {
    this.settings = options.settings;
    this.strategy = createConsumerStrategy(options.settings.namedConsumerStrategy);
    this.consumerIdleMs =
      options.settings.messageTimeoutMs > 0
        ? Math.max(options.settings.messageTimeoutMs, CONSUMER_IDLE_MIN_MS)
        : CONSUMER_IDLE_DEFAULT_MS;
    this.nextReadFrom = options.readFrom;
    this.lastMeasurementMs = options.nowMs;
    if (options.checkpoint === undefined) {
      this.lastReadSeq = -1;
      this.lastCheckpointSeq = -1;
    } else {
      // The checkpointed event counts as the last one read: the next gets it as its previous.
      this.lastReadPosition = options.checkpoint;
      this.lastReadSeq = 0;
      this.lastCheckpointSeq = 0;
      this.lastCheckpointPosition = options.checkpoint;
      this.lastKnownPosition = options.checkpoint;
    }
  }

  // ---- reading -------------------------------------------------------------------------

  /** The next read to make, when the buffer has room and the stream may have more. */
  nextRead(): { readonly fromEventNumber: number; readonly count: number } | undefined {
    if (this.readOutstanding) return undefined;
    const room = this.settings.bufferSize - (this.buffer.length + this.retry.length);
    if (room <= this.settings.readBatchSize) return undefined;
    const known = this.knownLastEventNumber;
    if (known !== undefined && this.nextReadFrom > known) return undefined;
    return { fromEventNumber: this.nextReadFrom, count: this.settings.readBatchSize };
  }

  readStarted(): void {
    this.readOutstanding = true;
    this.notifiedDuringRead = false;
  }

  /** The read failed (the engine is closing, or an I/O error was logged): try again later. */
  readFailed(): void {
    this.readOutstanding = false;
  }

  /**
   * A read returned `events` (in stream order), the next event number to read, and the
   * stream's last event number (undefined when the stream does not exist or is deleted).
   */
  readCompleted(
    events: readonly ResolvedEvent[],
    nextEventNumber: number,
    lastEventNumber: number | undefined,
  ): void {
    this.readOutstanding = false;
    for (const resolved of events) {
      const position = originalOf(resolved).eventNumber;
      if (position < this.nextReadFrom) continue;
      this.lastReadSeq += 1;
      const message: Message = {
        id: originalOf(resolved).eventId,
        resolved,
        position,
        seq: this.lastReadSeq,
        previousPosition: this.lastReadPosition,
        retryCount: 0,
      };
      this.lastReadPosition = position;
      this.nextReadFrom = position + 1;
      this.buffer.push(message);
      this.pending.set(this.lastReadSeq, message);
      this.noteKnown(position);
    }
    this.nextReadFrom = Math.max(this.nextReadFrom, nextEventNumber);
    if (lastEventNumber !== undefined) {
      this.knownLastEventNumber = Math.max(this.knownLastEventNumber ?? -1, lastEventNumber);
      if (lastEventNumber >= 0) this.noteKnown(lastEventNumber);
    } else if (!this.notifiedDuringRead) {
      // No such stream (or deleted): nothing to read until a write says otherwise.
      this.knownLastEventNumber = this.nextReadFrom - 1;
    }
    this.caughtUp = this.nextReadFrom > (this.knownLastEventNumber ?? -1);
  }

  /** A write to the subscribed stream committed, up to `lastEventNumber`. */
  notifyCommitted(lastEventNumber: number): void {
    if (this.readOutstanding) this.notifiedDuringRead = true;
    this.knownLastEventNumber = Math.max(this.knownLastEventNumber ?? -1, lastEventNumber);
    this.caughtUp = this.nextReadFrom > this.knownLastEventNumber;
    if (lastEventNumber >= this.settings.startFrom) this.noteKnown(lastEventNumber);
  }

  private noteKnown(position: number): void {
    if (this.lastKnownPosition === undefined || position > this.lastKnownPosition)
      this.lastKnownPosition = position;
  }

  // ---- consumers -------------------------------------------------------------------------

  /** Registers the consumer (or notes it is alive); refused beyond `maxSubscriberCount`. */
  connect(identity: ConsumerIdentity, nowMs: number): ConnectResult {
    const known = this.consumers.get(identity.id);
    if (known !== undefined) {
      known.lastSeenMs = nowMs;
      return 'ok';
    }
    const max = this.settings.maxSubscriberCount;
    if (max > 0 && this.consumers.size >= max) return 'max-subscribers';
    this.consumers.set(identity.id, {
      identity,
      inFlight: new Set(),
      maxInFlight: this.settings.bufferSize,
      totalItems: 0,
      lastTotalItems: 0,
      lastSeenMs: nowMs,
      activeRequests: 0,
      latenciesMs: [],
    });
    this.strategy.added(identity.id);
    return 'ok';
  }

  /** The consumer's connection closed (or it went idle): its messages stay in flight until answered or timed out. */
  disconnect(consumerId: string): void {
    const consumer = this.consumers.get(consumerId);
    if (consumer === undefined) return;
    for (const id of consumer.inFlight) {
      const entry = this.inFlight.get(id);
      if (entry !== undefined) entry.consumerId = undefined;
    }
    this.consumers.delete(consumerId);
    this.strategy.removed(consumerId);
  }

  hasConsumer(consumerId: string): boolean {
    return this.consumers.has(consumerId);
  }

  /** A request of the consumer is in progress (a long poll keeps it from idling out). */
  requestStarted(consumerId: string, nowMs: number): void {
    const consumer = this.consumers.get(consumerId);
    if (consumer === undefined) return;
    consumer.activeRequests += 1;
    consumer.lastSeenMs = nowMs;
  }

  requestEnded(consumerId: string, nowMs: number): void {
    const consumer = this.consumers.get(consumerId);
    if (consumer === undefined) return;
    consumer.activeRequests = Math.max(0, consumer.activeRequests - 1);
    consumer.lastSeenMs = nowMs;
  }

  /** Takes up to `count` messages for the consumer, as the strategy allows. */
  take(consumerId: string, count: number, nowMs: number): Delivery[] {
    const consumer = this.consumers.get(consumerId);
    if (consumer === undefined) return [];
    consumer.lastSeenMs = nowMs;
    const deliveries: Delivery[] = [];
    const wanted = (): number =>
      Math.min(count - deliveries.length, consumer.maxInFlight - consumer.inFlight.size);
    if (wanted() <= 0) return deliveries;
    const slots = [...this.consumers.values()].map((c) => ({
      id: c.identity.id,
      get inFlight() {
        return c.inFlight.size;
      },
      maxInFlight: c.maxInFlight,
    }));
    const takeFrom = (list: Message[]): Message[] => {
      const kept: Message[] = [];
      for (let index = 0; index < list.length; index++) {
        const message = list[index] as Message;
        if (wanted() <= 0) return index === 0 ? list : kept.concat(list.slice(index));
        if (!this.strategy.mayTake(message.resolved, consumerId, slots)) {
          kept.push(message);
          continue;
        }
        if (this.inFlight.has(message.id) || this.parking.has(message.id)) {
          // The same event id is already in flight (the original skips such duplicates too).
          this.finish(message);
          continue;
        }
        this.deliver(message, consumer, nowMs);
        deliveries.push({ message, retryCount: message.retryCount });
      }
      return kept;
    };
    this.retry = takeFrom(this.retry);
    this.buffer = takeFrom(this.buffer);
    return deliveries;
  }

  /** Whether a pull by this consumer would get anything now (for long polls). */
  canTake(consumerId: string): boolean {
    const consumer = this.consumers.get(consumerId);
    if (consumer === undefined || consumer.inFlight.size >= consumer.maxInFlight) return false;
    if (this.retry.length === 0 && this.buffer.length === 0) return false;
    if (this.strategy.name === 'RoundRobin') return true;
    const slots = [...this.consumers.values()].map((c) => ({
      id: c.identity.id,
      inFlight: c.inFlight.size,
      maxInFlight: c.maxInFlight,
    }));
    return [...this.retry, ...this.buffer].some((m) =>
      this.strategy.mayTake(m.resolved, consumerId, slots),
    );
  }

  private deliver(message: Message, consumer: Consumer, nowMs: number): void {
    this.deliveryCount += 1;
    const timeoutMs = this.settings.messageTimeoutMs;
    const deadlineMs = timeoutMs > 0 ? nowMs + timeoutMs : Number.POSITIVE_INFINITY;
    this.inFlight.set(message.id, {
      message,
      consumerId: consumer.identity.id,
      deadlineMs,
      deliveryNo: this.deliveryCount,
      startedMs: nowMs,
    });
    if (timeoutMs > 0) {
      this.deadlines.push({ id: message.id, deadlineMs, deliveryNo: this.deliveryCount });
    }
    consumer.inFlight.add(message.id);
    consumer.totalItems += 1;
    this.totalItems += 1;
    this.strategy.delivered(message.resolved, consumer.identity.id);
  }

  // ---- answers ---------------------------------------------------------------------------

  /** Acknowledged: done. Unknown ids are ignored (acks are fire-and-forget). */
  ack(ids: readonly string[], nowMs: number): void {
    for (const id of ids) {
      const entry = this.inFlight.get(id);
      if (entry !== undefined) {
        this.release(entry, nowMs, true);
        this.finish(entry.message);
        continue;
      }
      // Acknowledged after it timed out but before it went out again: done after all.
      const index = this.retry.findIndex((m) => m.id === id);
      if (index >= 0) {
        const [message] = this.retry.splice(index, 1);
        if (message !== undefined) this.finish(message);
      }
    }
    this.tryCheckpoint(nowMs, false);
  }

  nack(
    ids: readonly string[],
    action: NackAction,
    consumerId: string | undefined,
    nowMs: number,
  ): void {
    for (const id of ids) {
      const entry = this.inFlight.get(id);
      if (entry === undefined) continue;
      this.release(entry, nowMs, false);
      const message = entry.message;
      switch (action) {
        case 'retry':
        case 'unknown':
          this.retryOrPark(message);
          break;
        case 'park':
          this.park(message, PARK_REASON_NACK);
          break;
        case 'skip':
          this.finish(message);
          break;
        case 'stop':
          this.retryMessage(message);
          break;
      }
    }
    if (action === 'stop' && consumerId !== undefined) this.disconnect(consumerId);
    this.tryCheckpoint(nowMs, false);
  }

  /** The park write for a message finished; a failed one puts the message back for retry. */
  parkCompleted(id: string, ok: boolean, nowMs: number): void {
    const message = this.parking.get(id);
    if (message === undefined) return;
    this.parking.delete(id);
    if (ok) this.finish(message);
    else this.insertRetry(message);
    this.tryCheckpoint(nowMs, false);
  }

  /** Times out messages, drops idle consumers, and checkpoints when it is time. */
  tick(nowMs: number): void {
    while (this.deadlineHead < this.deadlines.length) {
      const next = this.deadlines[this.deadlineHead];
      if (next === undefined || next.deadlineMs > nowMs) break;
      this.deadlineHead += 1;
      const entry = this.inFlight.get(next.id);
      if (entry === undefined || entry.deliveryNo !== next.deliveryNo) continue;
      this.release(entry, nowMs, false);
      this.retryOrPark(entry.message);
    }
    if (this.deadlineHead > 1024 && this.deadlineHead * 2 > this.deadlines.length) {
      this.deadlines.splice(0, this.deadlineHead);
      this.deadlineHead = 0;
    }
    for (const consumer of [...this.consumers.values()]) {
      if (consumer.activeRequests === 0 && nowMs - consumer.lastSeenMs > this.consumerIdleMs) {
        this.disconnect(consumer.identity.id);
      }
    }
    this.tryCheckpoint(nowMs, true);
  }

  // ---- parked messages -------------------------------------------------------------------

  /** Replayed parked messages go to the end of the retry queue, with retry count 0. */
  addReplayed(events: readonly ResolvedEvent[]): void {
    for (const resolved of events) {
      this.retry.push({
        id: originalOf(resolved).eventId,
        resolved,
        position: undefined,
        seq: undefined,
        previousPosition: undefined,
        retryCount: 0,
      });
    }
  }

  setReplaying(replaying: boolean): void {
    this.replaying = replaying;
  }

  get isReplaying(): boolean {
    return this.replaying;
  }

  // ---- checkpoints -----------------------------------------------------------------------

  /** Emits a checkpoint for whatever is done beyond the last one, whatever the counts (clean stop). */
  flushCheckpoint(nowMs: number): void {
    const candidate = this.checkpointCandidate();
    if (candidate === undefined || candidate.seq <= this.lastCheckpointSeq) return;
    this.emitCheckpoint(candidate, nowMs);
  }

  /** The position recorded by the last checkpoint write (or loaded at start). */
  get checkpointPosition(): number | undefined {
    return this.lastCheckpointPosition;
  }

  drainEffects(): GroupEffect[] {
    const effects = this.effects;
    this.effects = [];
    return effects;
  }

  // ---- statistics ------------------------------------------------------------------------

  /** Statistics; like the original, each call starts a new rate measurement. */
  stats(nowMs: number): GroupStats {
    const elapsedMs = nowMs - this.lastMeasurementMs;
    const rate = (items: number): number =>
      elapsedMs > 0 ? Math.floor((items * 1000) / elapsedMs) : 0;
    const sinceLast = this.totalItems - this.lastTotalItems;
    this.lastMeasurementMs = nowMs;
    this.lastTotalItems = this.totalItems;
    let totalInFlight = 0;
    const connections = [...this.consumers.values()].map((consumer): ConsumerStats => {
      const count = consumer.totalItems - consumer.lastTotalItems;
      consumer.lastTotalItems = consumer.totalItems;
      totalInFlight += consumer.inFlight.size;
      return {
        from: consumer.identity.from,
        username: consumer.identity.username,
        connectionName: consumer.identity.connectionName,
        averageItemsPerSecond: rate(count),
        totalItemsProcessed: consumer.totalItems,
        countSinceLastMeasurement: count,
        availableSlots: consumer.maxInFlight - consumer.inFlight.size,
        inFlightMessages: consumer.inFlight.size,
        extraStatistics: this.settings.extraStatistics ? latencySummary(consumer.latenciesMs) : [],
      };
    });
    return {
      status: this.status(),
      averageItemsPerSecond: rate(sinceLast),
      totalItemsProcessed: this.totalItems,
      countSinceLastMeasurement: sinceLast,
      lastCheckpointedEventPosition: this.lastCheckpointPosition,
      lastKnownEventPosition: this.lastKnownPosition,
      readBufferCount: this.buffer.length,
      liveBufferCount: 0,
      retryBufferCount: this.retry.length,
      totalInFlightMessages: totalInFlight,
      outstandingMessagesCount: this.inFlight.size + this.parking.size,
      connections,
    };
  }

  /** PersistentSubscriptionState flags as .NET renders them (`Behind, OutstandingPageRequest`). */
  status(): string {
    const flags: string[] = [];
    if (!this.caughtUp) flags.push('Behind');
    if (this.readOutstanding) flags.push('OutstandingPageRequest');
    if (this.replaying) flags.push('ReplayingParkedMessages');
    if (this.caughtUp) flags.push('Live');
    return flags.join(', ');
  }

  get consumerCount(): number {
    return this.consumers.size;
  }

  // ---- internals -------------------------------------------------------------------------

  /** Takes the message off its consumer and out of flight. */
  private release(entry: InFlight, nowMs: number, acknowledged: boolean): void {
    this.inFlight.delete(entry.message.id);
    if (entry.consumerId === undefined) return;
    const consumer = this.consumers.get(entry.consumerId);
    if (consumer === undefined) return;
    consumer.inFlight.delete(entry.message.id);
    this.strategy.settled(entry.message.resolved, entry.consumerId);
    if (acknowledged && this.settings.extraStatistics) {
      if (consumer.latenciesMs.length >= LATENCY_WINDOW) consumer.latenciesMs.shift();
      consumer.latenciesMs.push(Math.max(0, Math.round(nowMs - entry.startedMs)));
    }
  }

  private retryOrPark(message: Message): void {
    if (message.retryCount >= this.settings.maxRetryCount) {
      this.park(message, retryCountReason(this.settings.maxRetryCount));
    } else {
      this.retryMessage(message);
    }
  }

  private retryMessage(message: Message): void {
    message.retryCount += 1;
    this.insertRetry(message);
  }

  /** Retries are kept in stream order; replayed parked messages (no position) at the end. */
  private insertRetry(message: Message): void {
    const position = message.position;
    if (position === undefined) {
      this.retry.push(message);
      return;
    }
    let index = this.retry.length;
    while (index > 0) {
      const before = this.retry[index - 1]?.position;
      if (before !== undefined && before <= position) break;
      index -= 1;
    }
    this.retry.splice(index, 0, message);
  }

  private park(message: Message, reason: string): void {
    this.parking.set(message.id, message);
    this.effects.push({ kind: 'park', message, reason });
  }

  private finish(message: Message): void {
    if (message.seq !== undefined) this.pending.delete(message.seq);
  }

  private checkpointCandidate(): { position: number; seq: number } | undefined {
    const lowest = this.pending.values().next();
    if (!lowest.done) {
      const message = lowest.value;
      if (message.previousPosition === undefined || message.seq === undefined) return undefined;
      return { position: message.previousPosition, seq: message.seq - 1 };
    }
    if (this.lastReadPosition === undefined) return undefined;
    return { position: this.lastReadPosition, seq: this.lastReadSeq };
  }

  private tryCheckpoint(nowMs: number, isTimeCheck: boolean): void {
    const candidate = this.checkpointCandidate();
    if (candidate === undefined) return;
    const behind = candidate.seq - this.lastCheckpointSeq;
    if (behind <= 0) return;
    const afterMs = this.settings.checkPointAfterMs > 0 ? this.settings.checkPointAfterMs : Infinity;
    const max = this.settings.maxCheckPointCount;
    if (nowMs - this.lastCheckpointMs < afterMs && behind < max) return;
    if ((isTimeCheck && behind >= this.settings.minCheckPointCount) || behind >= max) {
      this.emitCheckpoint(candidate, nowMs);
    }
  }

  private emitCheckpoint(candidate: { position: number; seq: number }, nowMs: number): void {
    this.lastCheckpointMs = nowMs;
    this.lastCheckpointSeq = candidate.seq;
    this.lastCheckpointPosition = candidate.position;
    this.effects.push({ kind: 'checkpoint', position: candidate.position });
  }
}

/** The original's RequestStatistics measurements, in ms. */
export function latencySummary(latenciesMs: readonly number[]): { key: string; value: number }[] {
  if (latenciesMs.length === 0) return [];
  const items = [...latenciesMs].sort((a, b) => a - b);
  const at = (percent: number): number => {
    let index = Math.floor((percent / 100) * items.length);
    if (index === items.length) index -= 1;
    return items[index] ?? 0;
  };
  const sum = items.reduce((total, item) => total + item, 0);
  const measurements = [
    { key: 'Mean', value: Math.floor(sum / items.length) },
    { key: 'Median', value: items[Math.floor(items.length / 2)] ?? 0 },
    { key: 'Fastest', value: items[0] ?? 0 },
  ];
  for (let quintile = 0; quintile < 5; quintile++) {
    measurements.push({ key: `Quintile ${quintile + 1}`, value: at(quintile * 20) });
  }
  for (const percent of [90, 95, 99, 99.5, 99.9]) {
    measurements.push({ key: `${percent}%`, value: at(percent) });
  }
  measurements.push({ key: 'Highest', value: items[items.length - 1] ?? 0 });
  return measurements;
}

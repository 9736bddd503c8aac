/**
 * One subscription group at run time: drives its GroupState (group-state.ts) over the engine.
 * It loads the checkpoint and the parked-message counts, reads the stream into the buffer
 * (resolving links when the group asks for it), answers pulls (long polls wait for messages),
 * and performs the state's effects: parked messages are appended as links to
 * `$persistentsubscription-{stream}::{group}-parked`, checkpoints to `...-checkpoint`.
 *
 * Writes of one kind are serialized; a failed checkpoint write is logged and the next one
 * carries a later position anyway; a failed park puts the message back for retry.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

import { ExpectedVersion, type EventDb, type StreamState } from '../storage/event-db-types.js';
import {
  GroupState,
  type ConsumerIdentity,
  type Delivery,
  type GroupStats,
  type NackAction,
} from './group-state.js';
import {
  CHECKPOINT_EVENT_TYPE,
  checkpointStreamOf,
  LEGACY_CHECKPOINT_EVENT_TYPE,
  LINK_EVENT_TYPE,
  parkedStreamOf,
} from './names.js';
import { resolveLink } from './resolve-link.js';
import { originalOf, type ResolvedEvent } from './resolved-event.js';
import type { SubscriptionSettings } from './settings.js';

const EMPTY = new Uint8Array(0);

/** The checkpoint stream's metadata, as the original writes it before the first checkpoint. */
const CHECKPOINT_STREAM_METADATA = {
  $maxCount: 2,
  $acl: { $r: '$admins', $w: '$admins', $d: '$admins', $mr: '$all', $mw: '$admins' },
};
const PARKED_STREAM_ACL = {
  $r: '$admins',
  $w: '$admins',
  $d: '$admins',
  $mr: '$admins',
  $mw: '$admins',
};

export interface GroupRuntimeOptions {
  readonly db: EventDb;
  readonly log: Logger;
  readonly stream: string;
  readonly group: string;
  readonly settings: SubscriptionSettings;
  readonly nowMs: () => number;
}

export type PullResult =
  | { readonly kind: 'ok'; readonly deliveries: readonly Delivery[] }
  | { readonly kind: 'max-subscribers' };

export interface PullOptions {
  /** Wait this long for messages when none are there (the ES-LongPoll extension); 0 = answer at once. */
  readonly longPollMs: number;
  readonly signal: AbortSignal;
}

export interface GroupInfo {
  readonly stream: string;
  readonly group: string;
  readonly settings: SubscriptionSettings;
  readonly stats: GroupStats;
  readonly parkedMessageCount: number;
}

interface Waiter {
  readonly consumerId: string;
  readonly count: number;
  readonly done: (deliveries: readonly Delivery[]) => void;
}

export class GroupRuntime {
  readonly stream: string;
  readonly group: string;
  readonly settings: SubscriptionSettings;
  private readonly db: EventDb;
  private readonly log: Logger;
  private readonly nowMs: () => number;
  private readonly checkpointStream: string;
  private readonly parkedStream: string;

  private state: GroupState | undefined;
  private readonly ready: Promise<void>;
  private markReady!: () => void;
  private stopped = false;
  private reading: Promise<void> | undefined;
  private waiters: Waiter[] = [];

  private checkpointWrites: Promise<void> | undefined;
  private pendingCheckpoint: number | undefined;
  /** Metadata to write before the first checkpoint; undefined once the stream has it. */
  private checkpointMetadata: Record<string, unknown> | undefined;
  private readonly parkWrites = new Set<Promise<void>>();
  private parkQueue: Promise<void> = Promise.resolve();
  private lastParkedEventNumber = -1;
  private parkedTruncateBefore: number | undefined;

  constructor(options: GroupRuntimeOptions) {
    this.db = options.db;
    this.stream = options.stream;
    this.group = options.group;
    this.settings = options.settings;
    this.nowMs = options.nowMs;
    this.log = options.log.child({ subscription: `${options.stream}::${options.group}` });
    this.checkpointStream = checkpointStreamOf(options.stream, options.group);
    this.parkedStream = parkedStreamOf(options.stream, options.group);
    this.ready = new Promise((resolve) => (this.markReady = resolve));
  }

  /** Loads the checkpoint and parked counts, then starts reading. */
  async start(): Promise<void> {
    const checkpoint = await this.loadCheckpoint();
    await this.loadParkedCounts();
    let readFrom: number;
    if (checkpoint !== undefined) readFrom = checkpoint + 1;
    else if (this.settings.startFrom >= 0) readFrom = this.settings.startFrom;
    else readFrom = nextEventNumberOf(await this.db.streamState(this.stream));
    this.state = new GroupState({
      settings: this.settings,
      readFrom,
      checkpoint,
      nowMs: this.nowMs(),
    });
    this.log.debug({ checkpoint, readFrom }, 'subscription group started');
    this.markReady();
    this.afterChange();
  }

  /**
   * Stops the group: pending pulls get nothing, a checkpoint covering what is done is written
   * (unless `flush` is false), and every write under way is waited for.
   */
  async stop(flush: boolean): Promise<void> {
    this.stopped = true;
    for (const waiter of this.waiters.splice(0)) waiter.done([]);
    const state = this.state;
    if (state !== undefined && flush) {
      state.flushCheckpoint(this.nowMs());
      this.performEffects(state);
    }
    await this.reading;
    while (this.checkpointWrites !== undefined || this.parkWrites.size > 0) {
      await this.checkpointWrites;
      await Promise.all([...this.parkWrites]);
    }
  }

  // ---- consumers -------------------------------------------------------------------------

  async pull(consumer: ConsumerIdentity, count: number, options: PullOptions): Promise<PullResult> {
    await this.ready;
    const state = this.state;
    if (state === undefined || this.stopped) return { kind: 'ok', deliveries: [] };
    if (state.connect(consumer, this.nowMs()) === 'max-subscribers') {
      return { kind: 'max-subscribers' };
    }
    state.requestStarted(consumer.id, this.nowMs());
    try {
      let deliveries: readonly Delivery[] = state.take(consumer.id, count, this.nowMs());
      if (deliveries.length === 0 && this.reading !== undefined) {
        // A read is filling the buffer (a new group, or one catching up): use what it brings.
        await this.reading;
        deliveries = state.take(consumer.id, count, this.nowMs());
      }
      this.afterChange();
      if (deliveries.length === 0 && options.longPollMs > 0 && !this.stopped) {
        deliveries = await this.waitForMessages(consumer.id, count, options);
      }
      return { kind: 'ok', deliveries };
    } finally {
      state.requestEnded(consumer.id, this.nowMs());
    }
  }

  private waitForMessages(
    consumerId: string,
    count: number,
    options: PullOptions,
  ): Promise<readonly Delivery[]> {
    if (options.signal.aborted) return Promise.resolve([]);
    return new Promise((resolve) => {
      const finish = (deliveries: readonly Delivery[]): void => {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', onAbort);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(deliveries);
      };
      const onAbort = (): void => finish([]);
      const waiter: Waiter = { consumerId, count, done: finish };
      const timer = setTimeout(() => finish([]), options.longPollMs);
      options.signal.addEventListener('abort', onAbort);
      this.waiters.push(waiter);
    });
  }

  ack(ids: readonly string[]): void {
    const state = this.state;
    if (state === undefined || this.stopped) return;
    state.ack(ids, this.nowMs());
    this.afterChange();
  }

  nack(ids: readonly string[], action: NackAction, consumerId: string | undefined): void {
    const state = this.state;
    if (state === undefined || this.stopped) return;
    state.nack(ids, action, consumerId, this.nowMs());
    if (consumerId !== undefined && !state.hasConsumer(consumerId)) this.dropWaitersOf(consumerId);
    this.afterChange();
  }

  /** A consumer's connection closed. */
  connectionClosed(consumerId: string): void {
    const state = this.state;
    if (state === undefined || !state.hasConsumer(consumerId)) return;
    state.disconnect(consumerId);
    this.dropWaitersOf(consumerId);
    this.afterChange();
  }

  private dropWaitersOf(consumerId: string): void {
    for (const waiter of this.waiters.filter((w) => w.consumerId === consumerId)) waiter.done([]);
  }

  // ---- stream and clock ------------------------------------------------------------------

  /** A write to the subscribed stream became durable. */
  notifyCommitted(lastEventNumber: number): void {
    const state = this.state;
    if (state === undefined || this.stopped) return;
    state.notifyCommitted(lastEventNumber);
    this.afterChange();
  }

  tick(): void {
    const state = this.state;
    if (state === undefined || this.stopped) return;
    state.tick(this.nowMs());
    // Timed-out messages are retries now: waiting pulls may take them.
    this.afterChange();
  }

  // ---- parked messages -------------------------------------------------------------------

  /**
   * Replays parked messages (all, or those numbered below `stopAt`) as retries, then truncates
   * the parked stream before what was replayed. One replay at a time; a second request while
   * one runs is accepted and does nothing, as in the original.
   */
  async replayParked(stopAt: number | undefined): Promise<void> {
    await this.ready;
    const state = this.state;
    if (state === undefined || this.stopped || state.isReplaying) return;
    state.setReplaying(true);
    try {
      const parked = await this.db.streamState(this.parkedStream);
      if (parked.kind !== 'exists' || parked.softDeleted) return;
      const end = parked.lastEventNumber + 1;
      const stopRead = stopAt === undefined ? end : Math.min(stopAt, end);
      let from = 0;
      while (from < stopRead && !this.stopped) {
        const count = Math.min(this.settings.readBatchSize, stopRead - from);
        const page = await this.db.readStream(this.parkedStream, from, count, 'forward');
        if (page.kind !== 'success') break;
        const resolved: ResolvedEvent[] = [];
        for (const record of page.events) {
          if (record.eventNumber >= stopRead) break;
          const message = await resolveLink(this.db, record);
          // A parked link whose event is gone is dropped, as in the original.
          if (message.event !== undefined) resolved.push(message);
        }
        state.addReplayed(resolved);
        this.afterChange();
        if (page.nextEventNumber <= from) break;
        from = page.nextEventNumber;
      }
      if (this.stopped) return;
      const result = await this.db.setStreamMetadata(this.parkedStream, ExpectedVersion.Any, {
        $tb: stopRead,
        $acl: PARKED_STREAM_ACL,
      });
      if (result.kind === 'success') this.parkedTruncateBefore = stopRead;
      else this.log.error({ result: result.kind }, 'could not truncate the parked message stream');
    } catch (err: unknown) {
      this.log.error({ err }, 'replaying parked messages failed');
    } finally {
      state.setReplaying(false);
    }
  }

  get parkedMessageCount(): number {
    if (this.lastParkedEventNumber < 0) return 0;
    const tb = this.parkedTruncateBefore;
    return tb === undefined
      ? this.lastParkedEventNumber + 1
      : Math.max(0, this.lastParkedEventNumber - tb + 1);
  }

  // ---- information -----------------------------------------------------------------------

  /** Statistics (status NotReady while the group is still loading). */
  info(): GroupInfo {
    const stats: GroupStats =
      this.state?.stats(this.nowMs()) ?? {
        status: 'NotReady',
        averageItemsPerSecond: 0,
        totalItemsProcessed: 0,
        countSinceLastMeasurement: 0,
        lastCheckpointedEventPosition: undefined,
        lastKnownEventPosition: undefined,
        readBufferCount: 0,
        liveBufferCount: 0,
        retryBufferCount: 0,
        totalInFlightMessages: 0,
        outstandingMessagesCount: 0,
        connections: [],
      };
    return {
      stream: this.stream,
      group: this.group,
      settings: this.settings,
      stats,
      parkedMessageCount: this.parkedMessageCount,
    };
  }

  // ---- internals -------------------------------------------------------------------------

  /** After any change: perform effects, serve waiting pulls, keep the buffer filled. */
  private afterChange(): void {
    const state = this.state;
    if (state === undefined) return;
    this.performEffects(state);
    if (this.stopped) return;
    this.serveWaiters(state);
    this.fill(state);
  }

  private serveWaiters(state: GroupState): void {
    if (this.waiters.length === 0) return;
    for (const waiter of [...this.waiters]) {
      if (!state.hasConsumer(waiter.consumerId)) {
        waiter.done([]);
        continue;
      }
      if (!state.canTake(waiter.consumerId)) continue;
      const deliveries = state.take(waiter.consumerId, waiter.count, this.nowMs());
      if (deliveries.length > 0) waiter.done(deliveries);
    }
  }

  private fill(state: GroupState): void {
    if (this.reading !== undefined) return;
    const next = state.nextRead();
    if (next === undefined) return;
    state.readStarted();
    this.reading = this.read(state, next.fromEventNumber, next.count).finally(() => {
      this.reading = undefined;
      this.afterChange();
    });
  }

  private async read(state: GroupState, from: number, count: number): Promise<void> {
    try {
      const page = await this.db.readStream(this.stream, from, count, 'forward');
      if (page.kind !== 'success') {
        state.readCompleted([], from, undefined);
        return;
      }
      const events = this.settings.resolveLinkTos
        ? await Promise.all(page.events.map((record) => resolveLink(this.db, record)))
        : page.events.map((event): ResolvedEvent => ({ event, link: undefined }));
      state.readCompleted(events, page.nextEventNumber, page.lastEventNumber);
    } catch (err: unknown) {
      if (!this.stopped) this.log.error({ err }, 'reading the subscribed stream failed');
      state.readFailed();
    }
  }

  private performEffects(state: GroupState): void {
    for (const effect of state.drainEffects()) {
      if (effect.kind === 'checkpoint') this.writeCheckpoint(effect.position);
      else this.park(state, effect.message.id, effect.message.resolved, effect.reason);
    }
  }

  private writeCheckpoint(position: number): void {
    this.pendingCheckpoint = position;
    if (this.checkpointWrites !== undefined) return;
    this.checkpointWrites = (async () => {
      while (this.pendingCheckpoint !== undefined) {
        const next = this.pendingCheckpoint;
        this.pendingCheckpoint = undefined;
        try {
          await this.appendCheckpoint(next);
        } catch (err: unknown) {
          this.log.error({ err, position: next }, 'writing the checkpoint failed');
        }
      }
    })().finally(() => {
      this.checkpointWrites = undefined;
    });
  }

  private async appendCheckpoint(position: number): Promise<void> {
    if (this.checkpointMetadata !== undefined) {
      const written = await this.db.setStreamMetadata(
        this.checkpointStream,
        ExpectedVersion.Any,
        this.checkpointMetadata,
      );
      if (written.kind !== 'success') {
        this.log.error({ result: written.kind }, 'writing the checkpoint stream metadata failed');
        return;
      }
      this.checkpointMetadata = undefined;
    }
    const result = await this.db.append(this.checkpointStream, ExpectedVersion.Any, [
      {
        eventId: randomUUID(),
        eventType: CHECKPOINT_EVENT_TYPE,
        data: Buffer.from(JSON.stringify(String(position))),
        metadata: EMPTY,
        isJson: true,
      },
    ]);
    if (result.kind !== 'success') {
      this.log.error({ result: result.kind, position }, 'writing the checkpoint failed');
    }
  }

  /** Appends the parked link; one park at a time, in the order decided. */
  private park(state: GroupState, id: string, resolved: ResolvedEvent, reason: string): void {
    const original = originalOf(resolved);
    // The link names the event itself (a resolved link's target); an unresolved link keeps its data.
    const data =
      resolved.event === undefined
        ? Buffer.from(original.data)
        : Buffer.from(`${resolved.event.eventNumber}@${resolved.event.stream}`);
    const metadata = Buffer.from(
      JSON.stringify({
        added: new Date(this.nowMs()).toISOString(),
        reason,
        subscriptionEventNumber: original.eventNumber,
      }),
    );
    const write = (this.parkQueue = this.parkQueue.then(async () => {
      let ok = false;
      try {
        const result = await this.db.append(this.parkedStream, ExpectedVersion.Any, [
          { eventId: randomUUID(), eventType: LINK_EVENT_TYPE, data, metadata, isJson: false },
        ]);
        ok = result.kind === 'success';
        if (result.kind === 'success') {
          this.lastParkedEventNumber = result.lastEventNumber;
        } else {
          this.log.error({ result: result.kind }, 'parking a message failed; it will be retried');
        }
      } catch (err: unknown) {
        this.log.error({ err }, 'parking a message failed; it will be retried');
      }
      state.parkCompleted(id, ok, this.nowMs());
      if (!this.stopped) this.afterChange();
    }));
    this.parkWrites.add(write);
    void write.finally(() => this.parkWrites.delete(write));
  }

  private async loadCheckpoint(): Promise<number | undefined> {
    const state = await this.db.streamState(this.checkpointStream);
    const softDeleted = state.kind === 'exists' && state.softDeleted;
    if (state.kind !== 'exists' || softDeleted) {
      // A deleted group's old checkpoint stream stays deleted: keep its truncation.
      this.checkpointMetadata = softDeleted
        ? { ...CHECKPOINT_STREAM_METADATA, $tb: state.lastEventNumber + 1 }
        : CHECKPOINT_STREAM_METADATA;
      return undefined;
    }
    const last = await this.db.readEvent(this.checkpointStream, -1);
    if (last.kind !== 'success') return undefined;
    const { eventType, data } = last.event;
    if (eventType !== CHECKPOINT_EVENT_TYPE && eventType !== LEGACY_CHECKPOINT_EVENT_TYPE) {
      return undefined;
    }
    try {
      const text: unknown = JSON.parse(data.toString('utf8'));
      const position = typeof text === 'string' || typeof text === 'number' ? Number(text) : NaN;
      if (Number.isSafeInteger(position) && position >= 0) return position;
    } catch {
      // Unreadable: as if there were none.
    }
    this.log.warn('unreadable checkpoint ignored');
    return undefined;
  }

  private async loadParkedCounts(): Promise<void> {
    const state = await this.db.streamState(this.parkedStream);
    if (state.kind !== 'exists') return;
    this.lastParkedEventNumber = state.lastEventNumber;
    if (state.softDeleted) {
      this.parkedTruncateBefore = state.lastEventNumber + 1;
      return;
    }
    const { metadata } = await this.db.getStreamMetadata(this.parkedStream);
    this.parkedTruncateBefore = metadata.truncateBefore;
  }
}

/** The event number the next write to a stream gets ("from now on" for startFrom -1). */
function nextEventNumberOf(state: StreamState): number {
  switch (state.kind) {
    case 'no-stream':
      return 0;
    case 'exists':
      return state.lastEventNumber + 1;
    case 'hard-deleted':
      return Number.MAX_SAFE_INTEGER;
  }
}

/**
 * The persistent subscriptions service: every group of the node, their settings persisted in
 * `$persistentSubscriptionConfig`, one clock for timeouts and checkpoints, and the engine's
 * commit notifications routed to the groups of the written stream.
 *
 * `start()` / `stop()` bound the service's life, so the composition root can run it on the
 * leader only once the node clusters. While stopped, every operation answers `not-running`
 * (the API maps that to 503). Creates, updates, deletes and restarts are serialized: each one
 * writes the whole configuration, as the original does.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

import { EventDbError } from '../errors.js';
import { ExpectedVersion, type EventDb } from '../storage/event-db-types.js';
import { GroupRuntime, type GroupInfo, type PullOptions } from './group-runtime.js';
import type { ConsumerIdentity, Delivery, NackAction } from './group-state.js';
import {
  ALL_STREAM,
  checkpointStreamOf,
  CONFIG_EVENT_TYPE,
  CONFIG_STREAM,
  groupKey,
  LEGACY_CONFIG_EVENT_TYPE,
  parkedStreamOf,
} from './names.js';
import { resolveLink } from './resolve-link.js';
import type { ResolvedEvent } from './resolved-event.js';
import {
  parsePersistedConfig,
  toConfigEntry,
  type SubscriptionSettings,
} from './settings.js';

export type { GroupInfo } from './group-runtime.js';
export type { ConsumerIdentity, Delivery, NackAction } from './group-state.js';
export type { ResolvedEvent } from './resolved-event.js';

/** How often message timeouts, idle consumers and time-based checkpoints are looked at. */
export const TICK_MS = 100;

export const ALL_STREAM_NOT_SUPPORTED =
  'Persistent subscriptions to $all are only supported over gRPC through gRPC clients';

export type NotRunning = { readonly kind: 'not-running' };

export type CreateResult =
  | { readonly kind: 'created' }
  | { readonly kind: 'exists'; readonly message: string }
  | { readonly kind: 'fail'; readonly message: string }
  | NotRunning;

export type UpdateResult =
  | { readonly kind: 'updated' }
  | { readonly kind: 'not-found'; readonly message: string }
  | { readonly kind: 'fail'; readonly message: string }
  | NotRunning;

export type DeleteResult =
  | { readonly kind: 'deleted' }
  | { readonly kind: 'not-found'; readonly message: string }
  | { readonly kind: 'fail'; readonly message: string }
  | NotRunning;

export type PullOutcome =
  | { readonly kind: 'ok'; readonly deliveries: readonly Delivery[] }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'fail'; readonly message: string }
  | { readonly kind: 'max-subscribers' }
  | NotRunning;

export type ReplayResult =
  | { readonly kind: 'ok' }
  | { readonly kind: 'not-found'; readonly message: string }
  | NotRunning;

export interface PersistentSubscriptions {
  /** True between a successful start() and stop(). */
  readonly running: boolean;
  /** Loads the configuration and starts every group (a node becoming leader). */
  start(): Promise<void>;
  /** Stops every group, writing their checkpoints (shutdown, or leadership lost). */
  stop(): Promise<void>;
  /** Stops and starts again from the stored configuration; false when not running. */
  restart(): boolean;
  create(stream: string, group: string, settings: SubscriptionSettings, user: string): Promise<CreateResult>;
  update(stream: string, group: string, settings: SubscriptionSettings, user: string): Promise<UpdateResult>;
  delete(stream: string, group: string, user: string): Promise<DeleteResult>;
  pull(stream: string, group: string, consumer: ConsumerIdentity, count: number, options: PullOptions): Promise<PullOutcome>;
  ack(stream: string, group: string, ids: readonly string[]): void;
  nack(stream: string, group: string, ids: readonly string[], action: NackAction, consumerId: string): void;
  replayParked(stream: string, group: string, stopAt: number | undefined): ReplayResult;
  /** A client connection closed: its consumers leave their groups. */
  connectionClosed(consumerId: string): void;
  info(stream: string, group: string): GroupInfo | undefined | NotRunning;
  /** Groups of one stream; undefined when it has none. */
  streamInfos(stream: string): readonly GroupInfo[] | undefined | NotRunning;
  /** Groups of every stream, streams in name order; `offset`/`count` page over streams. */
  allInfos(page?: { offset: number; count: number }): { readonly total: number; readonly infos: readonly GroupInfo[] } | NotRunning;
  /** Group names of a stream (for the description document). */
  groupNames(stream: string): readonly string[];
  /** A page of a group's parked-message stream, links resolved unless told otherwise. */
  readParked(stream: string, group: string, page: ParkedPage): Promise<ParkedRead>;
}

export interface ParkedPage {
  /** -1 = the last event (backward reads only). */
  readonly fromEventNumber: number;
  readonly count: number;
  readonly direction: 'forward' | 'backward';
  readonly resolveLinkTos: boolean;
}

export type ParkedRead =
  | {
      readonly kind: 'success';
      readonly parkedStream: string;
      /** In the read direction. */
      readonly events: readonly ResolvedEvent[];
      readonly lastEventNumber: number;
      readonly nextEventNumber: number;
      readonly isEndOfStream: boolean;
    }
  | { readonly kind: 'stream-not-found' }
  | { readonly kind: 'stream-deleted' };

export interface PersistentSubscriptionsOptions {
  readonly db: EventDb;
  readonly log: Logger;
  readonly nowMs?: () => number;
}

const NOT_RUNNING: NotRunning = { kind: 'not-running' };

export function createPersistentSubscriptions(
  options: PersistentSubscriptionsOptions,
): PersistentSubscriptions {
  return new PersistentSubscriptionService(options);
}

class PersistentSubscriptionService implements PersistentSubscriptions {
  private readonly db: EventDb;
  private readonly log: Logger;
  private readonly nowMs: () => number;
  /** By group key, in creation order (the order of the persisted entries). */
  private groups = new Map<string, GroupRuntime>();
  private byStream = new Map<string, Set<GroupRuntime>>();
  private isRunning = false;
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Serializes start, stop, restart and every configuration change. */
  private changes: Promise<unknown> = Promise.resolve();
  private configMetadataChecked = false;

  constructor(options: PersistentSubscriptionsOptions) {
    this.db = options.db;
    this.log = options.log;
    this.nowMs = options.nowMs ?? Date.now;
  }

  get running(): boolean {
    return this.isRunning;
  }

  start(): Promise<void> {
    return this.serialize(() => this.startGroups());
  }

  stop(): Promise<void> {
    return this.serialize(() => this.stopGroups());
  }

  restart(): boolean {
    if (!this.isRunning) return false;
    this.log.info('persistent subscriptions restarting');
    void this.serialize(async () => {
      await this.stopGroups();
      await this.startGroups();
    }).catch((err: unknown) => this.log.error({ err }, 'restarting persistent subscriptions failed'));
    return true;
  }

  async create(
    stream: string,
    group: string,
    settings: SubscriptionSettings,
    user: string,
  ): Promise<CreateResult> {
    if (stream === ALL_STREAM) return { kind: 'fail', message: ALL_STREAM_NOT_SUPPORTED };
    return this.serialize(async (): Promise<CreateResult> => {
      if (!this.isRunning) return NOT_RUNNING;
      const key = groupKey(stream, group);
      if (this.groups.has(key)) return { kind: 'exists', message: `Group '${group}' already exists.` };
      const runtime = this.newRuntime(stream, group, settings);
      await this.saveConfig([...this.groups.values(), runtime], user);
      this.add(key, runtime);
      await this.startOrRemove(key, runtime);
      this.log.info({ stream, group, user }, 'persistent subscription created');
      return { kind: 'created' };
    });
  }

  async update(
    stream: string,
    group: string,
    settings: SubscriptionSettings,
    user: string,
  ): Promise<UpdateResult> {
    if (stream === ALL_STREAM) return { kind: 'fail', message: ALL_STREAM_NOT_SUPPORTED };
    return this.serialize(async (): Promise<UpdateResult> => {
      if (!this.isRunning) return NOT_RUNNING;
      const key = groupKey(stream, group);
      const old = this.groups.get(key);
      if (old === undefined) return { kind: 'not-found', message: `Group '${group}' does not exist.` };
      const runtime = this.newRuntime(stream, group, settings);
      await this.saveConfig(
        [...this.groups.values()].map((g) => (g === old ? runtime : g)),
        user,
      );
      // Current consumers are dropped and the group starts again from its checkpoint.
      this.remove(key, old);
      await old.stop(true);
      this.add(key, runtime);
      await this.startOrRemove(key, runtime);
      this.log.info({ stream, group, user }, 'persistent subscription updated');
      return { kind: 'updated' };
    });
  }

  async delete(stream: string, group: string, user: string): Promise<DeleteResult> {
    if (stream === ALL_STREAM) return { kind: 'fail', message: ALL_STREAM_NOT_SUPPORTED };
    return this.serialize(async (): Promise<DeleteResult> => {
      if (!this.isRunning) return NOT_RUNNING;
      const key = groupKey(stream, group);
      const old = this.groups.get(key);
      if (old === undefined) return { kind: 'not-found', message: `Group '${group}' does not exist.` };
      await this.saveConfig(
        [...this.groups.values()].filter((g) => g !== old),
        user,
      );
      this.remove(key, old);
      await old.stop(false);
      // The group's state goes with it; the streams' absence is fine (nothing to delete).
      for (const state of [checkpointStreamOf(stream, group), parkedStreamOf(stream, group)]) {
        await this.db.deleteStream(state, ExpectedVersion.Any, false);
      }
      this.log.info({ stream, group, user }, 'persistent subscription deleted');
      return { kind: 'deleted' };
    });
  }

  async pull(
    stream: string,
    group: string,
    consumer: ConsumerIdentity,
    count: number,
    options: PullOptions,
  ): Promise<PullOutcome> {
    if (!this.isRunning) return NOT_RUNNING;
    if (stream === ALL_STREAM) return { kind: 'fail', message: ALL_STREAM_NOT_SUPPORTED };
    const runtime = this.groups.get(groupKey(stream, group));
    if (runtime === undefined) return { kind: 'not-found' };
    return runtime.pull(consumer, count, options);
  }

  ack(stream: string, group: string, ids: readonly string[]): void {
    if (this.isRunning) this.groups.get(groupKey(stream, group))?.ack(ids);
  }

  nack(
    stream: string,
    group: string,
    ids: readonly string[],
    action: NackAction,
    consumerId: string,
  ): void {
    if (this.isRunning) this.groups.get(groupKey(stream, group))?.nack(ids, action, consumerId);
  }

  replayParked(stream: string, group: string, stopAt: number | undefined): ReplayResult {
    if (!this.isRunning) return NOT_RUNNING;
    const key = groupKey(stream, group);
    const runtime = this.groups.get(key);
    if (runtime === undefined) return { kind: 'not-found', message: `Unable to locate '${key}'` };
    this.log.info({ stream, group, stopAt }, 'replaying parked messages');
    void runtime.replayParked(stopAt);
    return { kind: 'ok' };
  }

  connectionClosed(consumerId: string): void {
    for (const runtime of this.groups.values()) runtime.connectionClosed(consumerId);
  }

  info(stream: string, group: string): GroupInfo | undefined | NotRunning {
    if (!this.isRunning) return NOT_RUNNING;
    return this.groups.get(groupKey(stream, group))?.info();
  }

  streamInfos(stream: string): readonly GroupInfo[] | undefined | NotRunning {
    if (!this.isRunning) return NOT_RUNNING;
    const runtimes = this.byStream.get(stream);
    if (runtimes === undefined || runtimes.size === 0) return undefined;
    return [...runtimes].map((runtime) => runtime.info());
  }

  allInfos(page?: { offset: number; count: number }):
    | { readonly total: number; readonly infos: readonly GroupInfo[] }
    | NotRunning {
    if (!this.isRunning) return NOT_RUNNING;
    const streams = [...this.byStream.keys()]
      .filter((stream) => (this.byStream.get(stream)?.size ?? 0) > 0)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const total = streams.length;
    const offset = page === undefined ? 0 : Math.min(page.offset, total);
    const count = page === undefined ? total : Math.min(page.count, total - offset);
    const infos = streams
      .slice(offset, offset + count)
      .flatMap((stream) => [...(this.byStream.get(stream) ?? [])].map((runtime) => runtime.info()));
    return { total, infos };
  }

  groupNames(stream: string): readonly string[] {
    if (!this.isRunning) return [];
    return [...(this.byStream.get(stream) ?? [])].map((runtime) => runtime.group);
  }

  async readParked(stream: string, group: string, page: ParkedPage): Promise<ParkedRead> {
    const parkedStream = parkedStreamOf(stream, group);
    const read = await this.db.readStream(parkedStream, page.fromEventNumber, page.count, page.direction);
    if (read.kind !== 'success') return read;
    const events = page.resolveLinkTos
      ? await Promise.all(read.events.map((record) => resolveLink(this.db, record)))
      : read.events.map((event): ResolvedEvent => ({ event, link: undefined }));
    return {
      kind: 'success',
      parkedStream,
      events,
      lastEventNumber: read.lastEventNumber,
      nextEventNumber: read.nextEventNumber,
      isEndOfStream: read.isEndOfStream,
    };
  }

  // ---- internals -------------------------------------------------------------------------

  private serialize<T>(change: () => Promise<T>): Promise<T> {
    const next = this.changes.then(change, change);
    this.changes = next.catch(() => undefined);
    return next;
  }

  private newRuntime(stream: string, group: string, settings: SubscriptionSettings): GroupRuntime {
    return new GroupRuntime({
      db: this.db,
      log: this.log,
      stream,
      group,
      settings,
      nowMs: this.nowMs,
    });
  }

  private add(key: string, runtime: GroupRuntime): void {
    this.groups.set(key, runtime);
    let runtimes = this.byStream.get(runtime.stream);
    if (runtimes === undefined) {
      runtimes = new Set();
      this.byStream.set(runtime.stream, runtimes);
    }
    runtimes.add(runtime);
  }

  private remove(key: string, runtime: GroupRuntime): void {
    this.groups.delete(key);
    const runtimes = this.byStream.get(runtime.stream);
    runtimes?.delete(runtime);
    if (runtimes?.size === 0) this.byStream.delete(runtime.stream);
  }

  private async startOrRemove(key: string, runtime: GroupRuntime): Promise<void> {
    try {
      await runtime.start();
    } catch (err: unknown) {
      this.remove(key, runtime);
      throw err;
    }
  }

  private async startGroups(): Promise<void> {
    if (this.isRunning) return;
    const loaded = await this.loadConfig();
    if (loaded === undefined) return;
    this.groups = new Map();
    this.byStream = new Map();
    for (const entry of loaded) {
      this.add(groupKey(entry.stream, entry.group), this.newRuntime(entry.stream, entry.group, entry.settings));
    }
    this.unsubscribe = this.db.onCommitted((write) => {
      const runtimes = this.byStream.get(write.stream);
      if (runtimes === undefined) return;
      for (const runtime of runtimes) runtime.notifyCommitted(write.lastEventNumber);
    });
    await Promise.all([...this.groups.values()].map((runtime) => runtime.start()));
    this.timer = setInterval(() => {
      for (const runtime of this.groups.values()) runtime.tick();
    }, TICK_MS);
    this.timer.unref();
    this.isRunning = true;
    this.log.info({ groups: this.groups.size }, 'persistent subscriptions started');
  }

  private async stopGroups(): Promise<void> {
    if (!this.isRunning) return;
    this.isRunning = false;
    clearInterval(this.timer);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await Promise.all([...this.groups.values()].map((runtime) => runtime.stop(true)));
    this.groups = new Map();
    this.byStream = new Map();
    this.log.info('persistent subscriptions stopped');
  }

  /** The stored groups; undefined (and the service stays stopped) when the config is unreadable. */
  private async loadConfig(): Promise<
    { stream: string; group: string; settings: SubscriptionSettings }[] | undefined
  > {
    const last = await this.db.readEvent(CONFIG_STREAM, -1);
    if (last.kind !== 'success') return [];
    const { eventType, data } = last.event;
    if (eventType !== CONFIG_EVENT_TYPE && eventType !== LEGACY_CONFIG_EVENT_TYPE) {
      this.log.error({ eventType }, 'persistent subscription configuration has an unknown event type; subscriptions not started');
      return undefined;
    }
    let json: unknown;
    try {
      json = JSON.parse(data.toString('utf8'));
    } catch (err: unknown) {
      this.log.error({ err }, 'persistent subscription configuration is not JSON; subscriptions not started');
      return undefined;
    }
    const parsed = parsePersistedConfig(json);
    if (parsed.kind === 'invalid') {
      this.log.error({ reason: parsed.message }, 'persistent subscription configuration unreadable; subscriptions not started');
      return undefined;
    }
    for (const reason of parsed.skipped) {
      this.log.error({ reason }, 'persistent subscription configuration entry ignored');
    }
    return [...parsed.groups];
  }

  /** Writes the configuration holding exactly `runtimes` (the original's SaveConfiguration). */
  private async saveConfig(runtimes: readonly GroupRuntime[], user: string): Promise<void> {
    if (!this.configMetadataChecked) {
      const { metadata } = await this.db.getStreamMetadata(CONFIG_STREAM);
      if (metadata.maxCount === undefined) {
        await this.db.setStreamMetadata(CONFIG_STREAM, ExpectedVersion.Any, { $maxCount: 2 });
      }
      this.configMetadataChecked = true;
    }
    const config = {
      version: '2',
      updated: new Date(this.nowMs()).toISOString(),
      updatedBy: user,
      entries: runtimes.map((r) => toConfigEntry(r.stream, r.group, r.settings)),
    };
    const result = await this.db.append(CONFIG_STREAM, ExpectedVersion.Any, [
      {
        eventId: randomUUID(),
        eventType: CONFIG_EVENT_TYPE,
        data: Buffer.from(JSON.stringify(config)),
        metadata: new Uint8Array(0),
        isJson: true,
      },
    ]);
    if (result.kind !== 'success') {
      throw new EventDbError(
        'EDB_WRITE_FAILED',
        `writing the persistent subscription configuration failed: ${result.kind}`,
        { httpStatus: 500 },
      );
    }
  }
}

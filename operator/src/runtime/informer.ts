/**
 * A list+watch cache of one kind (client-go's informer, as client-node lacks a dependable one):
 *
 * - lists, then watches from the list's resourceVersion, following bookmarks;
 * - a watch the server closes (timeoutSeconds, jittered) is re-opened from the last version seen;
 *   a failed one after a back-off; 410 Gone, or a watch silent for too long (half-open TCP, see
 *   kubernetes-client/javascript #364), re-lists;
 * - re-lists every `relistPeriodMs` anyway, and hands every cached object to the handlers every
 *   `resyncPeriodMs` (level-triggered controllers then re-check everything);
 * - a re-list replaces the cache and reports what appeared, changed and disappeared meanwhile.
 *
 * Handlers get (event, object); they are expected to enqueue keys, not to do work.
 */
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from './clock.js';
import {
  isGone,
  objectKey,
  type KubeApi,
  type KubeObject,
  type ResourceType,
  type WatchEventType,
  type WatchHandle,
} from './kube-api.js';

export type InformerEvent = 'add' | 'update' | 'delete' | 'resync';
export type InformerHandler = (event: InformerEvent, object: KubeObject) => void;

export interface InformerOptions {
  readonly api: KubeApi;
  readonly type: ResourceType;
  readonly clock: Clock;
  readonly log: Logger;
  /** Watch one namespace; absent: all namespaces. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  /** Default 5 minutes. */
  readonly resyncPeriodMs?: number;
  /** Default 10 minutes. */
  readonly relistPeriodMs?: number;
  /** Server-side watch timeout before jitter (±20%). Default 300 s. */
  readonly watchTimeoutSeconds?: number;
  /** Back-off after a failed list or watch: doubles from this, up to 30 s. Default 1 s. */
  readonly retryBaseMs?: number;
  readonly random?: () => number;
  /** What the cache keeps of each object (e.g. only the metadata of Secrets); default: all of it. */
  readonly transform?: (object: KubeObject) => KubeObject;
  /** Called for every list, watch start, failure and relist, for metrics. */
  readonly onActivity?: (activity: 'list' | 'watch' | 'watch-error' | 'relist-gone' | 'relist-silent' | 'list-error') => void;
}

type WatchOutcome = { readonly kind: 'closed' } | { readonly kind: 'gone' } | { readonly kind: 'error'; readonly err: unknown } | { readonly kind: 'silent' };

const RETRY_MAX_MS = 30_000;

export class Informer {
  readonly #options: InformerOptions;
  readonly #store = new Map<string, KubeObject>();
  readonly #handlers: InformerHandler[] = [];
  readonly #abort = new AbortController();
  #synced = false;
  #syncWaiters: (() => void)[] = [];
  #lastEventAtMs = 0;
  #resyncTimer: TimerHandle | undefined;
  #currentWatch: WatchHandle | undefined;
  #running: Promise<void> | undefined;

  constructor(options: InformerOptions) {
    this.#options = options;
  }

  get type(): ResourceType {
    return this.#options.type;
  }

  on(handler: InformerHandler): void {
    this.#handlers.push(handler);
  }

  start(): void {
    this.#running ??= this.#run();
    this.#scheduleResync();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    this.#resyncTimer?.cancel();
    this.#currentWatch?.abort();
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const resolve of waiters) resolve();
    await this.#running;
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  /** Resolves once the first list is in the cache (or the informer stops). */
  waitForSync(): Promise<void> {
    if (this.#synced || this.#abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  /** When the informer last heard from the apiserver (a list or any watch event). */
  lastContactAtMs(): number {
    return this.#lastEventAtMs;
  }

  get(key: string): KubeObject | undefined {
    return this.#store.get(key);
  }

  list(filter?: (object: KubeObject) => boolean): KubeObject[] {
    const all = [...this.#store.values()];
    return filter === undefined ? all : all.filter(filter);
  }

  async #run(): Promise<void> {
    const { log, clock } = this.#options;
    let failures = 0;
    while (!this.#abort.signal.aborted) {
      try {
        const resourceVersion = await this.#listAndReplace();
        failures = 0;
        const reason = await this.#watchUntilRelist(resourceVersion);
        if (reason !== undefined) log.info({ kind: this.#options.type.kind, reason }, 'informer re-lists');
      } catch (err: unknown) {
        if (this.#abort.signal.aborted) break;
        failures++;
        this.#options.onActivity?.('list-error');
        const delayMs = this.#retryDelayMs(failures);
        log.warn({ err, kind: this.#options.type.kind, delayMs }, 'informer list failed');
        await clock.sleep(delayMs, this.#abort.signal);
      }
    }
  }

  async #listAndReplace(): Promise<string> {
    const { api, type, namespace, labelSelector } = this.#options;
    this.#options.onActivity?.('list');
    const result = await api.list(type, { namespace, labelSelector });
    this.#lastEventAtMs = this.#options.clock.nowMs();
    const seen = new Set<string>();
    for (const listed of result.items) {
      const item = this.#options.transform === undefined ? listed : this.#options.transform(listed);
      const key = objectKey(item);
      seen.add(key);
      this.#upsert(key, item);
    }
    for (const [key, object] of [...this.#store]) {
      if (seen.has(key)) continue;
      this.#store.delete(key);
      this.#emit('delete', object);
    }
    if (!this.#synced) {
      this.#synced = true;
      const waiters = this.#syncWaiters;
      this.#syncWaiters = [];
      for (const resolve of waiters) resolve();
    }
    return result.resourceVersion;
  }

  /** Watches from `resourceVersion` until a re-list is due; returns why. */
  async #watchUntilRelist(resourceVersion: string): Promise<string | undefined> {
    const { clock } = this.#options;
    const listedAtMs = clock.nowMs();
    const relistPeriodMs = this.#options.relistPeriodMs ?? 600_000;
    let version = resourceVersion;
    let failures = 0;
    while (!this.#abort.signal.aborted) {
      if (clock.nowMs() - listedAtMs >= relistPeriodMs) return 'periodic';
      const startedAtMs = clock.nowMs();
      const outcome = await this.#watchOnce(version, (seen) => (version = seen));
      if (outcome.kind === 'gone') {
        this.#options.onActivity?.('relist-gone');
        return 'resource version gone (410)';
      }
      if (outcome.kind === 'silent') {
        this.#options.onActivity?.('relist-silent');
        return 'watch silent for too long';
      }
      if (outcome.kind === 'error') {
        failures++;
        this.#options.onActivity?.('watch-error');
        if (failures >= 5) return 'watch failed five times';
        const delayMs = this.#retryDelayMs(failures);
        this.#options.log.warn({ err: outcome.err, kind: this.#options.type.kind, delayMs }, 'watch failed');
        await clock.sleep(delayMs, this.#abort.signal);
        continue;
      }
      failures = 0;
      // A watch the server ends at once, over and over, must not spin.
      if (clock.nowMs() - startedAtMs < 1000) await clock.sleep(1000, this.#abort.signal);
    }
    return undefined;
  }

  #watchOnce(resourceVersion: string, onVersion: (version: string) => void): Promise<WatchOutcome> {
    const { api, type, namespace, labelSelector, clock } = this.#options;
    const baseSeconds = this.#options.watchTimeoutSeconds ?? 300;
    const random = this.#options.random ?? Math.random;
    const timeoutSeconds = Math.max(1, Math.round(baseSeconds * (0.8 + 0.4 * random())));
    const silentLimitMs = (timeoutSeconds + 60) * 1000;
    this.#options.onActivity?.('watch');
    return new Promise<WatchOutcome>((resolve) => {
      let settled = false;
      let gone = false;
      let lastAtMs = clock.nowMs();
      let watchdog: TimerHandle | undefined;
      const onAbort = (): void => finish({ kind: 'closed' });
      const finish = (outcome: WatchOutcome): void => {
        if (settled) return;
        settled = true;
        watchdog?.cancel();
        this.#abort.signal.removeEventListener('abort', onAbort);
        this.#currentWatch?.abort();
        this.#currentWatch = undefined;
        resolve(outcome);
      };
      const checkSilence = (): void => {
        if (settled) return;
        if (clock.nowMs() - lastAtMs >= silentLimitMs) return finish({ kind: 'silent' });
        watchdog = clock.setTimer(checkSilence, silentLimitMs - (clock.nowMs() - lastAtMs));
      };
      const onEvent = (eventType: WatchEventType, object: KubeObject): void => {
        if (settled) return;
        lastAtMs = clock.nowMs();
        this.#lastEventAtMs = lastAtMs;
        if (eventType === 'ERROR') {
          const code = (object as unknown as { code?: number }).code;
          if (code === 410) gone = true;
          return finish(gone ? { kind: 'gone' } : { kind: 'error', err: new Error(`watch error event: ${JSON.stringify(object)}`) });
        }
        const version = object.metadata?.resourceVersion;
        if (version !== undefined) onVersion(version);
        if (eventType !== 'BOOKMARK') this.#apply(eventType, object);
      };
      const onDone = (err: unknown): void => {
        if (gone || isGone(err)) return finish({ kind: 'gone' });
        finish(err === undefined || err === null ? { kind: 'closed' } : { kind: 'error', err });
      };
      watchdog = clock.setTimer(checkSilence, silentLimitMs);
      api
        .watch(type, { namespace, labelSelector, resourceVersion, timeoutSeconds }, onEvent, onDone)
        .then((handle) => {
          if (settled) handle.abort();
          else this.#currentWatch = handle;
        })
        .catch((err: unknown) => onDone(err ?? new Error('watch failed')));
      this.#abort.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #apply(eventType: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject): void {
    const { type } = this.#options;
    const kept = this.#options.transform === undefined ? object : this.#options.transform(object);
    const whole = { ...kept, apiVersion: kept.apiVersion ?? (type.group === '' ? type.version : `${type.group}/${type.version}`), kind: kept.kind ?? type.kind };
    const key = objectKey(whole);
    if (eventType === 'DELETED') {
      this.#store.delete(key);
      this.#emit('delete', whole);
      return;
    }
    this.#upsert(key, whole);
  }

  #upsert(key: string, object: KubeObject): void {
    const previous = this.#store.get(key);
    this.#store.set(key, object);
    if (previous === undefined) this.#emit('add', object);
    else if (previous.metadata.resourceVersion !== object.metadata.resourceVersion) this.#emit('update', object);
  }

  #emit(event: InformerEvent, object: KubeObject): void {
    for (const handler of this.#handlers) {
      try {
        handler(event, object);
      } catch (err: unknown) {
        this.#options.log.error({ err, event, key: objectKey(object) }, 'informer handler failed');
      }
    }
  }

  #scheduleResync(): void {
    const periodMs = this.#options.resyncPeriodMs ?? 300_000;
    if (this.#abort.signal.aborted || periodMs <= 0) return;
    this.#resyncTimer = this.#options.clock.setTimer(() => {
      for (const object of this.#store.values()) this.#emit('resync', object);
      this.#scheduleResync();
    }, periodMs);
  }

  #retryDelayMs(failures: number): number {
    const baseMs = this.#options.retryBaseMs ?? 1000;
    return Math.min(RETRY_MAX_MS, baseMs * 2 ** Math.min(failures - 1, 10));
  }
}

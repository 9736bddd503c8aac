/**
 * A keyed, de-duplicating work queue with per-key back-off (the controller-runtime model, not an
 * event FIFO): a key queued twice is processed once; a key is never handed to two workers at
 * once, and a key added while it is processed is queued again when its worker is done. Failures
 * back off exponentially per key until `forget` (after a success).
 *
 * Bounded by construction: it holds at most one entry per key, and keys are objects.
 */
import type { Clock, TimerHandle } from './clock.js';

export interface WorkQueueOptions {
  readonly clock: Clock;
  /** First retry delay after a failure; doubles per consecutive failure. Default 500 ms. */
  readonly backoffBaseMs?: number;
  /** Longest retry delay. Default 5 minutes. */
  readonly backoffMaxMs?: number;
}

export class WorkQueue {
  readonly #clock: Clock;
  readonly #backoffBaseMs: number;
  readonly #backoffMaxMs: number;
  readonly #queue: string[] = [];
  /** Keys waiting to be processed (in #queue, or to be re-queued when their worker is done). */
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #delayed = new Map<string, { atMs: number; timer: TimerHandle }>();
  readonly #failures = new Map<string, number>();
  #waiters: ((key: string | undefined) => void)[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.#clock = options.clock;
    this.#backoffBaseMs = options.backoffBaseMs ?? 500;
    this.#backoffMaxMs = options.backoffMaxMs ?? 300_000;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  /** Adds `key` after `delayMs`; an earlier pending add of the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const atMs = this.#clock.nowMs() + delayMs;
    const pending = this.#delayed.get(key);
    if (pending !== undefined && pending.atMs <= atMs) return;
    pending?.timer.cancel();
    const timer = this.#clock.setTimer(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { atMs, timer });
  }

  /** Adds `key` after its back-off delay, which doubles with each failure since `forget`. */
  addRateLimited(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const delayMs = Math.min(this.#backoffMaxMs, this.#backoffBaseMs * 2 ** Math.min(failures - 1, 30));
    this.addAfter(key, delayMs);
    return delayMs;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** The next key to process, or undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) return Promise.resolve(this.#take(key));
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks `key` processed; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#push(key);
  }

  /** Keys waiting (not counting those being processed or delayed). */
  depth(): number {
    return this.#queue.length;
  }

  processingCount(): number {
    return this.#processing.size;
  }

  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) timer.cancel();
    this.#delayed.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve(undefined);
  }

  #push(key: string): void {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(this.#take(key));
    else this.#queue.push(key);
  }

  #take(key: string): string {
    this.#dirty.delete(key);
    this.#processing.add(key);
    return key;
  }
}

/**
 * The generic controller loop: informer events become keys in a work queue; workers take a key,
 * reconcile it (always from the current state, never from the event), and requeue it after a
 * delay the reconciler asks for, or with back-off after an error. A key is never reconciled by
 * two workers at once. Every log line of a reconcile carries the object's key.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { OperatorMetrics } from './metrics.js';
import { WorkQueue } from './work-queue.js';

export interface ReconcileResult {
  /** Reconcile again after this long even if nothing changes (polling a node, a timer). */
  readonly requeueAfterMs?: number;
}

/** An error that retrying cannot fix (an invalid spec): logged, reported, not retried. */
export class TerminalError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
    this.code = code;
  }
}

export interface ReconcileContext {
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly log: Logger;
  readonly reconcileId: string;
}

export type Reconcile = (context: ReconcileContext) => Promise<ReconcileResult>;

export interface ControllerOptions {
  readonly name: string;
  readonly reconcile: Reconcile;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: OperatorMetrics;
  /** Parallel reconciles of different keys. Default 2. */
  readonly workers?: number;
  readonly backoffBaseMs?: number;
  readonly backoffMaxMs?: number;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #options: ControllerOptions;
  #workers: Promise<void>[] = [];

  constructor(options: ControllerOptions) {
    this.name = options.name;
    this.#options = options;
    this.queue = new WorkQueue({
      clock: options.clock,
      ...(options.backoffBaseMs === undefined ? {} : { backoffBaseMs: options.backoffBaseMs }),
      ...(options.backoffMaxMs === undefined ? {} : { backoffMaxMs: options.backoffMaxMs }),
    });
  }

  enqueue(key: string): void {
    this.queue.add(key);
    this.#reportDepth();
  }

  start(): void {
    const count = this.#options.workers ?? 2;
    for (let worker = 0; worker < count; worker++) this.#workers.push(this.#work());
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.#workers);
    this.#workers = [];
  }

  async #work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      this.#reportDepth();
      if (key === undefined) return;
      try {
        await this.#reconcileOne(key);
      } finally {
        this.queue.done(key);
        this.#reportDepth();
      }
    }
  }

  async #reconcileOne(key: string): Promise<void> {
    const { metrics, clock } = this.#options;
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const reconcileId = randomBytes(4).toString('hex');
    const log = this.#options.log.child({ controller: this.name, namespace, name, key, reconcileId });
    const startedAtMs = clock.nowMs();
    const labels = { controller: this.name };
    try {
      const result = await this.#options.reconcile({ key, namespace, name, log, reconcileId });
      this.queue.forget(key);
      metrics.reconciles.inc({ ...labels, result: result.requeueAfterMs === undefined ? 'success' : 'requeue' });
      metrics.lastReconcileTimestamp.set({ ...labels, result: 'success' }, clock.nowMs() / 1000);
      if (result.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
    } catch (err: unknown) {
      metrics.reconcileErrors.inc(labels);
      metrics.reconciles.inc({ ...labels, result: 'error' });
      metrics.lastReconcileTimestamp.set({ ...labels, result: 'error' }, clock.nowMs() / 1000);
      if (err instanceof TerminalError) {
        this.queue.forget(key);
        log.error({ err, errorCode: err.code }, 'reconcile failed; not retried until the object changes');
      } else {
        const delayMs = this.queue.addRateLimited(key);
        metrics.queueRetries.inc(labels);
        log.warn({ err, delayMs, failures: this.queue.failures(key) }, 'reconcile failed; retrying');
      }
    } finally {
      metrics.reconcileSeconds.observe(labels, (clock.nowMs() - startedAtMs) / 1000);
    }
  }

  #reportDepth(): void {
    this.#options.metrics.queueDepth.set({ controller: this.name }, this.queue.depth());
  }
}

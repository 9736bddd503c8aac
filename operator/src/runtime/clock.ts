/**
 * Time, behind a small interface: the runtime's queue, informers, leader election and the
 * controllers take a Clock, so unit tests drive time by hand instead of sleeping.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  nowMs(): number;
  /** Calls `fn` once after `delayMs`; the handle cancels it. Timers never keep the process alive. */
  setTimer(fn: () => void, delayMs: number): TimerHandle;
  /** Resolves after `delayMs`, or early when `signal` aborts. */
  sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  setTimer(fn, delayMs) {
    const timer = setTimeout(fn, Math.max(0, delayMs));
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
  sleep(delayMs, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, delayMs));
      function done(): void {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  },
};

/** A clock whose time moves only when a test calls `advance`. */
export class ManualClock implements Clock {
  #nowMs: number;
  #timers: { atMs: number; fn: () => void; cancelled: boolean }[] = [];

  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const timer = { atMs: this.#nowMs + Math.max(0, delayMs), fn, cancelled: false };
    this.#timers.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const handle = this.setTimer(resolve, delayMs);
      signal?.addEventListener('abort', () => {
        handle.cancel();
        resolve();
      });
    });
  }

  /** Moves time forward, firing due timers in order. */
  advance(deltaMs: number): void {
    const targetMs = this.#nowMs + deltaMs;
    for (;;) {
      const due = this.#timers
        .filter((timer) => !timer.cancelled && timer.atMs <= targetMs)
        .sort((a, b) => a.atMs - b.atMs)[0];
      if (due === undefined) break;
      this.#nowMs = due.atMs;
      due.cancelled = true;
      due.fn();
    }
    this.#nowMs = targetMs;
    this.#timers = this.#timers.filter((timer) => !timer.cancelled);
  }

  pendingTimers(): number {
    return this.#timers.filter((timer) => !timer.cancelled).length;
  }
}

/**
 * The clock port: the time and the timers a state machine's shell uses. `systemClock` is the
 * process's wall clock and Node's timers; `ManualClock` moves only when told (tests, the seeded
 * simulation), running every timer that falls due in time order, so a run replays exactly.
 */

/** A timer set through a Clock; pass it back to `clearTimer` to cancel it. */
export interface ClockTimer {
  readonly dueMs: number;
}

export interface Clock {
  /** Milliseconds since the Unix epoch (the manual clock starts where it is told). */
  nowMs(): number;
  /** Runs `callback` once after `delayMs` (at least 0). Timers never keep the process alive. */
  setTimer(delayMs: number, callback: () => void): ClockTimer;
  clearTimer(timer: ClockTimer | undefined): void;
}

interface SystemTimer extends ClockTimer {
  readonly handle: NodeJS.Timeout;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  setTimer(delayMs, callback) {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    handle.unref();
    const timer: SystemTimer = { dueMs: Date.now() + Math.max(0, delayMs), handle };
    return timer;
  },
  clearTimer(timer) {
    if (timer !== undefined) clearTimeout((timer as SystemTimer).handle);
  },
};

interface ManualTimer extends ClockTimer {
  readonly sequence: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** A clock that moves only by `advance`/`advanceTo`; timers due at the same time run in the order they were set. */
export class ManualClock implements Clock {
  private now: number;
  private sequence = 0;
  private readonly timers: ManualTimer[] = [];

  constructor(startMs = 0) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  setTimer(delayMs: number, callback: () => void): ClockTimer {
    const timer: ManualTimer = { dueMs: this.now + Math.max(0, delayMs), sequence: this.sequence++, callback, cancelled: false };
    this.timers.push(timer);
    return timer;
  }

  clearTimer(timer: ClockTimer | undefined): void {
    if (timer !== undefined) (timer as ManualTimer).cancelled = true;
  }

  /** Timers set and not yet run or cancelled. */
  get pendingTimerCount(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** When the next timer falls due (undefined: none is set). */
  nextDueMs(): number | undefined {
    return this.next()?.dueMs;
  }

  /** Moves the time forward by `deltaMs`, running the timers that fall due on the way. */
  advance(deltaMs: number): void {
    if (!(deltaMs >= 0)) throw new RangeError(`a clock moves forward only (asked to move by ${deltaMs} ms)`);
    this.advanceTo(this.now + deltaMs);
  }

  /** Moves the time to `targetMs`; a timer set by a timer callback runs too if it falls due by then. */
  advanceTo(targetMs: number): void {
    if (targetMs < this.now) throw new RangeError(`a clock moves forward only (at ${this.now}, asked for ${targetMs})`);
    for (;;) {
      const timer = this.next();
      if (timer === undefined || timer.dueMs > targetMs) break;
      this.timers.splice(this.timers.indexOf(timer), 1);
      this.now = timer.dueMs;
      timer.callback();
    }
    this.now = targetMs;
  }

  private next(): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (let i = this.timers.length - 1; i >= 0; i--) {
      const t = this.timers[i]!;
      if (t.cancelled) {
        this.timers.splice(i, 1);
        continue;
      }
      if (best === undefined || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && t.sequence < best.sequence)) best = t;
    }
    return best;
  }
}

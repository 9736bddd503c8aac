/**
 * What the scavenge phases may use of the engine: a narrow view, so the phases stay testable
 * and cannot reach the writer.
 */
import type { Logger } from 'pino';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import type { StreamHasher, StreamIndex } from '../index/stream-index-port.js';
import type { ScavengePoint, ScavengeState } from './scavenge-types.js';
import type { ChunkSummary } from '../chunk/chunk-summary.js';

export interface ScavengeAccess {
  readonly log: Logger;
  readonly registry: ChunkRegistry;
  readonly index: StreamIndex;
  readonly hasher: StreamHasher;
  readonly chunkSizeBytes: number;
  readonly disableMerging: boolean;
  /** The latest scavenge point in the log, if any. */
  latestScavengePoint(): ScavengePoint | undefined;
  /** Writes a new scavenge point (completing the active chunk) and returns it. */
  writeScavengePoint(threshold: number): Promise<ScavengePoint>;
  /** The stream's last event number among records before `position` (-1 when none). */
  lastEventNumberBefore(stream: string, position: number): number;
  openState(): ScavengeState;
  /** What the writer noted of chunk `chunkStartNumber` while writing it (accumulation checks it fits), if kept. */
  chunkSummary?(chunkStartNumber: number): ChunkSummary | undefined;
  /** Lets a chunk's summary go once the chunk is accumulated. */
  dropChunkSummary?(chunkStartNumber: number): void;
}

/** Thrown at a cancel point when the run was asked to stop. */
export class ScavengeStopped extends Error {
  constructor() {
    super('scavenge stopped');
    this.name = 'ScavengeStopped';
  }
}

/**
 * Cancel points and throttling. `throttlePercent` p < 100: after each unit of work that took t
 * ms, rest t * (100 - p) / p ms, so the run is active about p% of the time (50 -> about twice as
 * long). Every pause also yields to the event loop so the node keeps serving.
 */
export class ScavengePacer {
  private workStartedMs = performance.now();
  /** Time spent working and resting (throttle), for the logs and the throttle tests. */
  activeMs = 0;
  restMs = 0;

  constructor(private readonly signal: AbortSignal, private readonly throttlePercent: number) {}

  /** True when the run rests between units (throttlePercent < 100). */
  get throttled(): boolean {
    return this.throttlePercent < 100;
  }

  checkStopped(): void {
    if (this.signal.aborted) throw new ScavengeStopped();
  }

  /** Called between small steps: yields, and honours a stop request. */
  async yieldNow(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.checkStopped();
  }

  /**
   * Called after each unit of work (a chunk): rests per the throttle, then checks for stop. With
   * `checkStop` false it only rests (for a caller that must not be interrupted by a throw, such
   * as the index's merge; the stop is checked after it).
   */
  async afterUnit(checkStop = true): Promise<void> {
    const workedMs = performance.now() - this.workStartedMs;
    this.activeMs += workedMs;
    // The rest owed so far, not just this unit's: timers count whole milliseconds and may fire
    // before a fractional delay has passed, which over many short units (a chunk from its
    // summary takes about a millisecond) added up to less rest than work.
    const owedMs = this.throttled ? (this.activeMs * (100 - this.throttlePercent)) / this.throttlePercent - this.restMs : 0;
    if (owedMs >= 1) {
      const restStartedMs = performance.now();
      await sleepUnlessAborted(Math.ceil(owedMs), this.signal);
      this.restMs += performance.now() - restStartedMs;
    } else {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (checkStop) this.checkStopped();
    this.workStartedMs = performance.now();
  }
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) { resolve(); return; }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

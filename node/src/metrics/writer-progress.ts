/**
 * How far behind the leader's log a replica is, in seconds: a pure record of when the leader's
 * writer checkpoint reached which position, sampled about once a second (off the write path).
 * A replica that has acknowledged position P lacks the data written after P; the first sample
 * beyond P says when that data existed at the latest, so the lag reported is `now - that time`:
 * a lower bound that is at most one sampling interval short, and never more than the truth.
 */
export interface WriterSample {
  readonly positionBytes: number;
  readonly atMs: number;
}

/** Ten minutes of samples at one a second; an older lag is reported as the window's age (a lower bound). */
export const WRITER_SAMPLES_MAX = 600;

export class WriterProgress {
  readonly #samples: WriterSample[] = [];

  constructor(private readonly maxSamples = WRITER_SAMPLES_MAX) {}

  /** Records the writer checkpoint; a position that did not move adds nothing. */
  record(positionBytes: number, atMs: number): void {
    const last = this.#samples.at(-1);
    if (last !== undefined && positionBytes <= last.positionBytes) return;
    this.#samples.push({ positionBytes, atMs });
    if (this.#samples.length > this.maxSamples) this.#samples.shift();
  }

  /** Seconds the oldest data a replica at `ackedPositionBytes` lacks has existed; 0 when it lacks nothing recorded. */
  secondsBehind(ackedPositionBytes: number, nowMs: number): number {
    const samples = this.#samples;
    const last = samples.at(-1);
    if (last === undefined || ackedPositionBytes >= last.positionBytes) return 0;
    // the first sample beyond the acknowledged position (binary search: positions only grow)
    let lo = 0;
    let hi = samples.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((samples[mid]?.positionBytes ?? 0) > ackedPositionBytes) hi = mid;
      else lo = mid + 1;
    }
    const firstBeyond = samples[lo] ?? last;
    return Math.max(0, (nowMs - firstBeyond.atMs) / 1000);
  }
}

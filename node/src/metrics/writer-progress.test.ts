import { describe, expect, it } from 'vitest';
import { WriterProgress } from './writer-progress.js';

describe('WriterProgress', () => {
  it('reports no lag for a replica that acknowledged the last recorded position', () => {
    const progress = new WriterProgress();
    progress.record(100, 1_000);
    progress.record(200, 2_000);
    expect(progress.secondsBehind(200, 10_000)).toBe(0);
    expect(progress.secondsBehind(250, 10_000)).toBe(0);
  });

  it('measures the lag from when the first data the replica lacks was seen', () => {
    const progress = new WriterProgress();
    progress.record(100, 1_000);
    progress.record(200, 2_000);
    progress.record(300, 3_000);
    // lacks 101..300: the data past 100 existed by 2 s
    expect(progress.secondsBehind(100, 5_000)).toBe(3);
    expect(progress.secondsBehind(150, 5_000)).toBe(3);
    expect(progress.secondsBehind(200, 5_000)).toBe(2);
    // lacks everything recorded
    expect(progress.secondsBehind(0, 5_000)).toBe(4);
  });

  it('ignores samples that do not move, and keeps a bounded window', () => {
    const progress = new WriterProgress(3);
    progress.record(100, 1_000);
    progress.record(100, 1_500);
    progress.record(200, 2_000);
    progress.record(300, 3_000);
    progress.record(400, 4_000);
    // 100@1s fell out of the window: a replica at 0 is behind by at least the window's age
    expect(progress.secondsBehind(0, 6_000)).toBe(4);
    expect(progress.secondsBehind(350, 6_000)).toBe(2);
  });
});

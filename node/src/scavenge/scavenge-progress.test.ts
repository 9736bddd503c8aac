import { describe, expect, it } from 'vitest';
import { scavengeProgress } from './scavenge-run.js';

describe('scavengeProgress', () => {
  it('is chunks done of the total while chunks execute, in percent with one decimal', () => {
    expect(scavengeProgress('ExecutingChunks', 1, 3)).toEqual({ stage: 'ExecutingChunks', chunksDone: 1, chunksTotal: 3, percent: 33.3 });
    expect(scavengeProgress('ExecutingChunks', 0, 0)).toEqual({ stage: 'ExecutingChunks', chunksDone: 0, chunksTotal: 0, percent: 0 });
    expect(scavengeProgress('Accumulating', 0, 12).percent).toBe(0);
  });

  it('never exceeds the total, and is complete once past chunk execution', () => {
    expect(scavengeProgress('ExecutingChunks', 9, 4)).toMatchObject({ chunksDone: 4, percent: 100 });
    expect(scavengeProgress('MergingChunks', 2, 4)).toMatchObject({ chunksDone: 4, percent: 100 });
    expect(scavengeProgress('ExecutingIndex', 4, 4).percent).toBe(100);
  });
});

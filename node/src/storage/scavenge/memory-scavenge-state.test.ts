/**
 * What only the memory scavenge state does: its data lives in a store that outlives the handles
 * (--mem-db keeps one store for the node's life and opens a handle per scavenge run).
 */
import { describe, expect, it } from 'vitest';
import { createMemoryScavengeStore, openMemoryScavengeState } from './memory-scavenge-state.js';
import type { ScavengeState } from './scavenge-types.js';

const point = { number: 0, position: 100, effectiveNowMs: 5, threshold: 0 };

function writeSome(state: ScavengeState): void {
  state.transaction(() => {
    state.setOriginal({
      stream: 'a', isTombstoned: false, maxAgeSeconds: null, maxCount: 1, truncateBefore: null,
      discardPoint: 3, maybeDiscardPoint: 0, lastEventNumber: 3, status: 'Active',
    });
    state.checkHashUser(7n, 'a');
    state.setLastAccumulatedChunk(2);
    state.setCheckpoint({ stage: 'Done', scavengePoint: point });
  });
}

function expectSome(state: ScavengeState): void {
  expect(state.getOriginal('a')?.discardPoint).toBe(3);
  expect(state.activeOriginals(null, 10).map((d) => d.stream)).toEqual(['a']);
  expect(state.checkHashUser(7n, 'b')).toBe(true);
  expect(state.lastAccumulatedChunk()).toBe(2);
  expect(state.lastCompletedScavengePointNumber()).toBe(0);
  expect(state.getCheckpoint()?.stage).toBe('Done');
}

describe('MemoryScavengeState', () => {
  it('keeps the data of its store after a handle is closed', () => {
    const store = createMemoryScavengeStore();
    const first = openMemoryScavengeState({ store });
    writeSome(first);
    first.close();
    expect(() => first.getOriginal('a')).toThrow(/open/);
    expectSome(openMemoryScavengeState({ store }));
  });

  it('starts empty without a store', () => {
    writeSome(openMemoryScavengeState());
    expect(openMemoryScavengeState().lastAccumulatedChunk()).toBe(-1);
  });

  it('writes into the store through an object that delegates to a handle by prototype', () => {
    const store = createMemoryScavengeStore();
    const handle = openMemoryScavengeState({ store });
    const delegate = Object.assign(Object.create(handle) as ScavengeState, {
      close: () => undefined,
    });
    writeSome(delegate);
    expectSome(openMemoryScavengeState({ store }));
  });
});

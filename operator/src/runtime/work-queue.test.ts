import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { WorkQueue } from './work-queue.js';

function queue(clock = new ManualClock()): WorkQueue {
  return new WorkQueue({ clock, backoffBaseMs: 100, backoffMaxMs: 1000 });
}

describe('WorkQueue', () => {
  it('hands out a key added several times once', async () => {
    const q = queue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth()).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(q.depth()).toBe(0);
  });

  it('never hands a key to a second worker while the first processes it, and re-queues it after', async () => {
    const q = queue();
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a');
    expect(q.depth()).toBe(0);
    let second: string | undefined;
    void q.get().then((key) => (second = key));
    await Promise.resolve();
    expect(second).toBeUndefined();
    q.done('a');
    await Promise.resolve();
    expect(second).toBe('a');
  });

  it('does not re-queue a key that was not added while processed', async () => {
    const q = queue();
    q.add('a');
    await q.get();
    q.done('a');
    expect(q.depth()).toBe(0);
  });

  it('adds a key after a delay, keeping the earliest of two delays', async () => {
    const clock = new ManualClock();
    const q = queue(clock);
    q.addAfter('a', 500);
    q.addAfter('a', 200);
    q.addAfter('a', 900);
    clock.advance(199);
    expect(q.depth()).toBe(0);
    clock.advance(1);
    expect(q.depth()).toBe(1);
    clock.advance(1000);
    expect(q.depth()).toBe(1);
  });

  it('backs off exponentially per key up to the maximum, and forget resets it', () => {
    const q = queue();
    expect([1, 2, 3, 4, 5, 6].map(() => q.addRateLimited('a'))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(q.addRateLimited('b')).toBe(100);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(100);
  });

  it('wakes waiting workers with undefined on shut down and refuses new keys', async () => {
    const q = queue();
    const waiting = q.get();
    q.shutDown();
    expect(await waiting).toBeUndefined();
    q.add('a');
    expect(await q.get()).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from './clock.js';

describe('ManualClock', () => {
  it('runs timers only when advanced, in due order, ties in the order they were set', () => {
    const clock = new ManualClock(1000);
    const ran: string[] = [];
    clock.setTimer(30, () => ran.push(`c@${clock.nowMs()}`));
    clock.setTimer(10, () => ran.push(`a@${clock.nowMs()}`));
    clock.setTimer(10, () => ran.push(`b@${clock.nowMs()}`));
    expect(ran).toEqual([]);
    clock.advance(9);
    expect(ran).toEqual([]);
    clock.advance(1);
    expect(ran).toEqual(['a@1010', 'b@1010']);
    clock.advance(100);
    expect(ran).toEqual(['a@1010', 'b@1010', 'c@1030']);
    expect(clock.nowMs()).toBe(1110);
  });

  it('a cancelled timer never runs; a timer set by a timer runs in the same advance when due', () => {
    const clock = new ManualClock();
    const ran: number[] = [];
    const t = clock.setTimer(5, () => ran.push(-1));
    clock.clearTimer(t);
    clock.setTimer(5, () => clock.setTimer(5, () => ran.push(clock.nowMs())));
    expect(clock.pendingTimerCount).toBe(1);
    clock.advance(20);
    expect(ran).toEqual([10]);
    expect(clock.nextDueMs()).toBeUndefined();
  });

  it('refuses to move backwards', () => {
    const clock = new ManualClock(50);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advanceTo(49)).toThrow(RangeError);
  });
});

describe('systemClock', () => {
  it('fires a timer after its delay and not after it is cleared', async () => {
    const fired: string[] = [];
    systemClock.setTimer(5, () => fired.push('kept'));
    systemClock.clearTimer(systemClock.setTimer(5, () => fired.push('cleared')));
    await new Promise((r) => setTimeout(r, 50));
    expect(fired).toEqual(['kept']);
    expect(Math.abs(systemClock.nowMs() - Date.now())).toBeLessThan(50);
  });
});

import { describe, expect, it } from 'vitest';

import { formatTimeSpan, parseTimeSpanMs } from './time-span.js';

describe('formatTimeSpan', () => {
  it('writes hh:mm:ss with a seven-digit fraction, as .NET TimeSpan does', () => {
    expect(formatTimeSpan(1500)).toBe('00:00:01.5000000');
    expect(formatTimeSpan(38.4891256)).toBe('00:00:00.0384891');
    expect(formatTimeSpan(3_723_000)).toBe('01:02:03');
  });

  it('leaves out a zero fraction and adds days from one day up', () => {
    expect(formatTimeSpan(0)).toBe('00:00:00');
    expect(formatTimeSpan(90_061_001)).toBe('1.01:01:01.0010000');
  });
});

describe('parseTimeSpanMs', () => {
  it('reads what formatTimeSpan writes', () => {
    for (const ms of [0, 1500, 38.4891, 3_723_000, 90_061_001]) {
      expect(parseTimeSpanMs(formatTimeSpan(ms))).toBeCloseTo(ms, 4);
    }
  });

  it('accepts short fractions and rejects anything else', () => {
    expect(parseTimeSpanMs('00:00:01.5')).toBe(1500);
    expect(parseTimeSpanMs('-00:00:02')).toBe(-2000);
    expect(parseTimeSpanMs('1.5 s')).toBeUndefined();
    expect(parseTimeSpanMs('00:61:00')).toBeUndefined();
  });
});

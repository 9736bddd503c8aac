import { describe, expect, it } from 'vitest';
import { CronError, nextOccurrenceMs, parseCron, tryParseCron } from './cron.js';

const at = (iso: string): number => Date.parse(iso);
const next = (expr: string, after: string): string | undefined => {
  const ms = nextOccurrenceMs(parseCron(expr), at(after));
  return ms === undefined ? undefined : new Date(ms).toISOString();
};

describe('CRON expressions', () => {
  it('every minute: the next whole minute, strictly after the anchor', () => {
    expect(next('* * * * *', '2026-03-01T10:00:00.000Z')).toBe('2026-03-01T10:01:00.000Z');
    expect(next('* * * * *', '2026-03-01T10:00:59.999Z')).toBe('2026-03-01T10:01:00.000Z');
  });

  it('06:00 on Saturdays, by number and by name', () => {
    // 2026-03-07 is a Saturday.
    expect(next('0 6 * * 6', '2026-03-02T12:00:00Z')).toBe('2026-03-07T06:00:00.000Z');
    expect(next('0 6 * * SAT', '2026-03-07T06:00:00Z')).toBe('2026-03-14T06:00:00.000Z');
  });

  it('steps, ranges, lists, months and Sunday as 0 or 7', () => {
    expect(next('*/15 * * * *', '2026-03-01T10:16:00Z')).toBe('2026-03-01T10:30:00.000Z');
    expect(next('5-10/5 9,17 * * *', '2026-03-01T09:06:00Z')).toBe('2026-03-01T09:10:00.000Z');
    expect(next('5-10/5 9,17 * * *', '2026-03-01T09:10:00Z')).toBe('2026-03-01T17:05:00.000Z');
    expect(next('0 0 1 JAN *', '2026-03-01T00:00:00Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('0 0 * * 7', '2026-03-02T00:00:00Z')).toBe(next('0 0 * * 0', '2026-03-02T00:00:00Z'));
  });

  it('both day fields restricted: either matches (classic cron)', () => {
    // The 13th of March 2026 is a Friday; the first Monday after the 2nd is the 9th.
    expect(next('0 0 13 * MON', '2026-03-02T00:00:00Z')).toBe('2026-03-09T00:00:00.000Z');
  });

  it('an expression that never fires has no next occurrence', () => {
    expect(next('0 0 31 2 *', '2026-01-01T00:00:00Z')).toBeUndefined();
  });

  it('bad expressions are refused with the field at fault', () => {
    expect(() => parseCron('* * * *')).toThrow(CronError);
    expect(() => parseCron('60 * * * *')).toThrow(/minute: 60 is outside 0-59/);
    expect(() => parseCron('* 24 * * *')).toThrow(/hour/);
    expect(() => parseCron('*/0 * * * *')).toThrow(/step/);
    expect(() => parseCron('5-1 * * * *')).toThrow(/backwards/);
    expect(() => parseCron('* * * FOO *')).toThrow(/month/);
    expect(tryParseCron('not a cron')).toBeUndefined();
    expect(tryParseCron('')).toBeUndefined();
  });
});

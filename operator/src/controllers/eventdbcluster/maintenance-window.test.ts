import { describe, expect, it } from 'vitest';
import { checkWindow, windowState } from './maintenance-window.js';

const at = (iso: string): number => Date.parse(iso);

describe('windowState', () => {
  const saturdayNightBerlin = checkWindow({ schedule: '0 2 * * 6', timeZone: 'Europe/Berlin', duration: '4h' });

  it('is always open without windows', () => {
    expect(windowState([], at('2026-03-04T10:00:00Z'))).toEqual({ open: true, closesAtMs: Number.POSITIVE_INFINITY });
  });

  it('is open from the start of a window (in its time zone) for its duration', () => {
    // Saturday 2026-03-07 02:00 in Berlin (CET, UTC+1) is 01:00 UTC.
    expect(windowState([saturdayNightBerlin], at('2026-03-07T01:00:00Z'))).toEqual({ open: true, closesAtMs: at('2026-03-07T05:00:00Z') });
    expect(windowState([saturdayNightBerlin], at('2026-03-07T04:59:59Z')).open).toBe(true);
    expect(windowState([saturdayNightBerlin], at('2026-03-07T05:00:00Z'))).toEqual({ open: false, opensAtMs: at('2026-03-14T01:00:00Z') });
  });

  it('is closed before a window, and says when the next one opens', () => {
    expect(windowState([saturdayNightBerlin], at('2026-03-07T00:59:00Z'))).toEqual({ open: false, opensAtMs: at('2026-03-07T01:00:00Z') });
  });

  it('follows the zone across a daylight saving change', () => {
    // 2026-04-04 is a Saturday in summer time (CEST, UTC+2): 02:00 local is 00:00 UTC.
    expect(windowState([saturdayNightBerlin], at('2026-04-04T00:30:00Z'))).toEqual({ open: true, closesAtMs: at('2026-04-04T04:00:00Z') });
  });

  it('is open when any of several windows is, until the last of them closes', () => {
    const daily = checkWindow({ schedule: '30 4 * * *', duration: '1h' });
    const state = windowState([saturdayNightBerlin, daily], at('2026-03-07T04:45:00Z'));
    expect(state).toEqual({ open: true, closesAtMs: at('2026-03-07T05:30:00Z') });
  });
});

describe('checkWindow', () => {
  it('names what is wrong with a window', () => {
    expect(() => checkWindow({ schedule: '61 2 * * 6', duration: '1h' })).toThrow(/schedule '61 2 \* \* 6' in UTC/);
    expect(() => checkWindow({ schedule: '0 2 * * 6', timeZone: 'Mars/Olympus', duration: '1h' })).toThrow(/Mars\/Olympus/);
    expect(() => checkWindow({ schedule: '0 2 * * 6', duration: '0s' })).toThrow(/longer than zero/);
    expect(() => checkWindow({ schedule: '0 0 2 * * 6', duration: '1h' })).toThrow(/five fields/);
  });
});

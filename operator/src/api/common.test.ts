import { describe, expect, it } from 'vitest';
import { isKnownTimeZone, parseDurationMs } from './common.js';

describe('parseDurationMs', () => {
  it('reads Go durations', () => {
    expect(parseDurationMs('4h')).toBe(4 * 3_600_000);
    expect(parseDurationMs('1h30m')).toBe(5_400_000);
    expect(parseDurationMs('720h')).toBe(720 * 3_600_000);
    expect(parseDurationMs('1.5s')).toBe(1500);
    expect(parseDurationMs('250ms')).toBe(250);
  });

  it('refuses what is not a duration', () => {
    expect(() => parseDurationMs('4 hours')).toThrow(/invalid duration/);
    expect(() => parseDurationMs('')).toThrow(/invalid duration/);
    expect(() => parseDurationMs('10d')).toThrow(/invalid duration/);
  });
});

describe('isKnownTimeZone', () => {
  it('knows IANA zones and refuses others', () => {
    expect(isKnownTimeZone('UTC')).toBe(true);
    expect(isKnownTimeZone('Europe/Berlin')).toBe(true);
    expect(isKnownTimeZone('Mars/Olympus')).toBe(false);
  });
});

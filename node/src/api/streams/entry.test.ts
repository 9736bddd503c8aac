import { describe, expect, it } from 'vitest';
import { escapeStream, formatAtomDate } from './entry.js';

describe('formatAtomDate and escapeStream (remembering the last argument)', () => {
  it('give the right text for repeated and alternating arguments', () => {
    const dates: [number, string][] = [
      [Date.UTC(2018, 7, 21, 9, 53, 46, 860), '2018-08-21T09:53:46.86Z'],
      [Date.UTC(2018, 7, 21, 9, 53, 46, 0), '2018-08-21T09:53:46Z'],
      [Date.UTC(2020, 0, 1, 0, 0, 0, 5), '2020-01-01T00:00:00.005Z'],
    ];
    const streams: [string, string][] = [
      ['orders-1', 'orders-1'],
      ["a b/c!'()*", "a%20b%2Fc%21%27%28%29%2A"],
      ['$$ünï', '%24%24%C3%BCn%C3%AF'],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [ms, text] of round === 1 ? [...dates].reverse() : dates) {
        expect(formatAtomDate(ms)).toBe(text);
        expect(formatAtomDate(ms)).toBe(text);
      }
      for (const [stream, escaped] of round === 1 ? [...streams].reverse() : streams) {
        expect(escapeStream(stream)).toBe(escaped);
        expect(escapeStream(stream)).toBe(escaped);
      }
    }
    expect(() => formatAtomDate(Number.NaN)).toThrow(RangeError);
    expect(() => escapeStream('\ud800')).toThrow(URIError);
    expect(escapeStream('orders-1')).toBe('orders-1');
  });
});

import { describe, expect, it } from 'vitest';
import { followStart, interleave, newLinesOnly, renderLogEntry } from './logs.js';
import { oneShotCron, stamp } from './one-off.js';

describe('logs of every node', () => {
  it('interleaves the nodes\' pino lines by time and renders them readable', () => {
    const line = (kubelet: string, time: number, msg: string, extra: Record<string, unknown> = {}): string => `${kubelet} ${JSON.stringify({ level: 30, time, pid: 1, hostname: 'h', msg, ...extra })}`;
    const entries = interleave(
      new Map([
        ['orders-0', [line('2026-12-02T01:00:00.000000001Z', 1000, 'a0'), line('2026-12-02T01:00:03Z', 3000, 'c0'), ''].join('\n')],
        ['orders-1', [line('2026-12-02T01:00:02Z', 2000, 'b1', { level: 50, err: { type: 'Error', message: 'boom' } }), '2026-12-02T01:00:04.000Z not json at all'].join('\n')],
      ]),
    );
    expect(entries.map((entry) => [entry.pod, entry.record?.['msg'] ?? entry.raw])).toEqual([
      ['orders-0', 'a0'],
      ['orders-1', 'b1'],
      ['orders-0', 'c0'],
      ['orders-1', 'not json at all'],
    ]);
    const [first, second] = entries;
    expect(renderLogEntry(first!, { colour: false, podWidth: 8, json: false })).toBe('1970-01-01T00:00:01.000Z orders-0 INFO  a0');
    expect(renderLogEntry(second!, { colour: false, podWidth: 8, json: false })).toBe('1970-01-01T00:00:02.000Z orders-1 ERROR b1 err="Error: boom"');
    expect(JSON.parse(renderLogEntry(second!, { colour: false, podWidth: 8, json: true }))).toMatchObject({ pod: 'orders-1', msg: 'b1', level: 50 });
  });
});

describe('the one-off scavenge cycle', () => {
  it('names one minute at least 30 s ahead, in UTC', () => {
    expect(oneShotCron(Date.parse('2026-12-02T01:59:20Z'))).toEqual({ schedule: '0 2 2 12 *', atMs: Date.parse('2026-12-02T02:00:00Z') });
    expect(oneShotCron(Date.parse('2026-12-31T23:59:40Z'))).toEqual({ schedule: '1 0 1 1 *', atMs: Date.parse('2027-01-01T00:01:00Z') });
    expect(stamp(Date.parse('2026-12-02T01:02:03Z'))).toBe('20261202-010203');
  });

  it('follows each pod from the second of its last printed line, dropping the lines of that second it printed already', () => {
    const backlog = ['2026-12-02T01:00:03.100000000Z {"msg":"a"}', '2026-12-02T01:00:04.200000000Z {"msg":"b"}', '2026-12-02T01:00:04.700000000Z {"msg":"c"}', ''].join('\n');
    const start = followStart(backlog, Date.parse('2026-12-02T01:00:09Z'));
    expect(start.sinceTime).toBe('2026-12-02T01:00:04Z');
    expect([...start.printed]).toEqual(['2026-12-02T01:00:04.200000000Z {"msg":"b"}', '2026-12-02T01:00:04.700000000Z {"msg":"c"}']);
    const fresh = newLinesOnly(start);
    const stream = ['2026-12-02T01:00:04.200000000Z {"msg":"b"}', '2026-12-02T01:00:04.700000000Z {"msg":"c"}', '2026-12-02T01:00:04.900000000Z {"msg":"d"}', '2026-12-02T01:00:05.000000000Z {"msg":"c"}'];
    expect(stream.filter(fresh).map((line) => JSON.parse(line.slice(31)).msg)).toEqual(['d', 'c']);
    // no backlog: from the second the backlog was asked for, every line is new
    const empty = followStart('', Date.parse('2026-12-02T01:00:09.750Z'));
    expect(empty).toEqual({ sinceTime: '2026-12-02T01:00:09Z', printed: new Set() });
    expect(['x'].filter(newLinesOnly(empty))).toEqual(['x']);
  });
});

import { describe, expect, it } from 'vitest';
import { createRootLogger, prettyDestination, prettyLine } from './logging.js';

describe('prettyLine', () => {
  it('writes time, level, component, message and the other fields on one line', () => {
    const line = prettyLine(JSON.stringify({ level: 30, time: '2026-12-02T01:00:00.000Z', pid: 7, hostname: 'h', component: 'api', msg: 'user created', user: 'carol', groups: ['$ops'] }));
    expect(line).toBe('2026-12-02T01:00:00.000Z INFO  [api] user created user=carol groups=["$ops"]\n');
  });

  it('shows an error as its type and message, keeps a line a line, quotes values with spaces', () => {
    const line = prettyLine(JSON.stringify({ level: 50, time: 't', msg: 'two\nlines', reason: 'a b', err: { type: 'TypeError', message: 'boom', stack: 'TypeError: boom\n    at x' } }));
    expect(line).toBe('t ERROR two lines reason="a b" err="TypeError: boom"\n');
    expect(line.split('\n')).toHaveLength(2);
  });

  it('passes on what is not JSON', () => {
    expect(prettyLine('not json')).toBe('not json\n');
  });
});

describe('createRootLogger with the pretty format', () => {
  it('writes readable lines through the destination, redacting passwords', () => {
    const written: string[] = [];
    const { log } = createRootLogger({ level: 'info', destination: prettyDestination(1, (_fd, text) => written.push(text)) });
    log.child({ component: 'users' }).info({ user: 'carol', body: { password: 'secret' } }, 'password reset');
    log.debug('not at info');
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z INFO  \[users\] password reset user=carol body=\{"password":"\[redacted\]"\}\n$/);
  });
});

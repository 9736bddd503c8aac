import { describe, expect, it } from 'vitest';
import { isToolCommand, parseToolArgs, UsageError } from './cli.js';

describe('backup tool options', () => {
  it('parses a backup, a differential one with node access, a verify and a restore', () => {
    expect(parseToolArgs(['backup', '--db', 'd', '--index', 'i', '--to', 't'])).toEqual({ kind: 'backup', db: 'd', index: 'i', to: 't', differential: false });
    expect(parseToolArgs(['backup', '--db=d', '--index', 'i', '--to', 't', '--differential', '--node-url', 'http://127.0.0.1:2113', '--password-file', 'pw'], () => 'secret\n'))
      .toEqual({ kind: 'backup', db: 'd', index: 'i', to: 't', differential: true, node: { url: 'http://127.0.0.1:2113', username: 'admin', password: 'secret' } });
    expect(parseToolArgs(['backup', '--verify', 'b'])).toEqual({ kind: 'verify', dir: 'b' });
    expect(parseToolArgs(['restore', '--from', 'b', '--db', 'd', '--index', 'i', '--overwrite'])).toEqual({ kind: 'restore', from: 'b', db: 'd', index: 'i', overwrite: true });
    expect(parseToolArgs(['restore', '--help'])).toEqual({ kind: 'help', command: 'restore' });
  });

  it.each([
    [['backup', '--db', 'd', '--index', 'i'], 'option --to is required for eventdb backup'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', '--overwrite'], 'unknown option --overwrite for eventdb backup'],
    [['backup', '--db', 'd', '--db', 'e', '--index', 'i', '--to', 't'], 'option --db is given twice'],
    [['backup', '--db', '--index', 'i', '--to', 't'], 'option --db needs a value'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', 'extra'], 'unexpected argument "extra" for eventdb backup'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', '--differential=yes'], 'option --differential takes no value'],
    [['backup', '--verify', 'b', '--to', 't'], 'option --to cannot be combined with --verify'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', '--password', 'p'], 'option --password needs --node-url'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', '--node-url', 'nope', '--password', 'p'], 'option --node-url: "nope" is not a URL'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', '--node-url', 'ftp://x', '--password', 'p'], 'option --node-url must be an http:// or https:// URL'],
    [['backup', '--db', 'd', '--index', 'i', '--to', 't', '--chaser-wait-ms', '-1'], 'option --chaser-wait-ms: "-1" is not a whole number'],
    [['restore', '--from', 'b', '--db', 'd'], 'option --index is required for eventdb restore'],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseToolArgs(argv)).toThrow(UsageError);
    expect(() => parseToolArgs(argv)).toThrow(message);
  });

  it('recognises the subcommands, and nothing else, as the tool', () => {
    expect(isToolCommand(['backup'])).toBe(true);
    expect(isToolCommand(['restore', '--from', 'x'])).toBe(true);
    expect(isToolCommand(['--db', 'backup'])).toBe(false);
  });
});

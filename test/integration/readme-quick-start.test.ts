/**
 * Issue 29, item 4: the README's quick start ("Your first events", up to the licensed
 * auto-scavenge part) works as written. Every `curl` command of it is run, in order, with curl, against a fresh node (only the
 * address is changed to the test node's); each must answer 2xx, or the status its
 * `# HTTP/1.1 NNN` comment shows. `<id>` placeholders are filled with the ids of the messages
 * the previous command received. After the password change, `changeit` is refused and `s3cret`
 * works, as the README says.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { basic } from '../support/credentials.js';
import { useNode } from '../support/use-node.js';

const run = promisify(execFile);
const running = useNode();
const README_ADDRESS = 'http://127.0.0.1:2113';
const STATUS_MARK = '\n__status__';

interface Command {
  readonly text: string;
  readonly expectedStatus: number | undefined;
}

/** The curl commands of the quick-start section, continuation lines joined. */
function quickStartCommands(): Command[] {
  const readme = readFileSync('README.md', 'utf8');
  const start = readme.indexOf('### Your first events');
  // Up to the auto-scavenge part, which needs a licence key and a node started with it.
  const end = readme.indexOf('**Auto-scavenge**', start);
  expect(start).toBeGreaterThan(0);
  expect(end).toBeGreaterThan(start);
  const section = readme.slice(start, end);
  const commands: Command[] = [];
  for (const block of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = (block[1] ?? '').split('\n');
    for (let i = 0; i < lines.length; i++) {
      let line = lines[i] ?? '';
      if (!line.startsWith('curl ')) continue;
      while (line.endsWith('\\')) line = `${line.slice(0, -1)} ${(lines[++i] ?? '').trim()}`;
      const comment = /^# HTTP\/1\.1 (\d{3})/.exec(lines[i + 1] ?? '');
      commands.push({ text: line, expectedStatus: comment === null ? undefined : Number(comment[1]) });
    }
  }
  return commands;
}

describe('README quick start', () => {
  it('every curl of "Your first events" gets the answer the README shows', async () => {
    const commands = quickStartCommands();
    expect(commands.length).toBeGreaterThanOrEqual(9);
    let previousOutput = '';
    for (const command of commands) {
      let text = command.text.replaceAll(README_ADDRESS, running.node.baseUrl);
      if (text.includes('<id>')) {
        const ids = [...previousOutput.matchAll(/"eventId": "([0-9a-f-]{36})"/g)].map((m) => m[1]);
        expect(ids.length, `ids for: ${command.text}`).toBeGreaterThan(0);
        text = text.replace('<id>,<id>', ids.join(','));
      }
      // The flags go first: a line may end with a `# comment`.
      const shell = text.replace(/^curl /, `curl -s -w '${STATUS_MARK}%{http_code}' `);
      const { stdout } = await run('/bin/sh', ['-c', shell], { timeout: 30_000 });
      const at = stdout.lastIndexOf(STATUS_MARK);
      const status = Number(stdout.slice(at + STATUS_MARK.length));
      previousOutput = stdout.slice(0, at);
      if (command.expectedStatus !== undefined) expect(status, command.text).toBe(command.expectedStatus);
      else expect(status >= 200 && status < 300, `${command.text} answered ${status}: ${previousOutput}`).toBe(true);
    }
    // The last commands changed the admin password, as the README says they do.
    expect((await running.http('GET', '/users/admin', { headers: { authorization: basic('admin', 'changeit') } })).status).toBe(401);
    expect((await running.http('GET', '/users/admin', { headers: { authorization: basic('admin', 's3cret') } })).status).toBe(200);
  });
});

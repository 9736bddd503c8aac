/**
 * Issue 29, item 10: `--log-format pretty` logs one readable line an entry for a terminal
 * (`time LEVEL [component] message key=value ...`) instead of JSON; the default stays JSON, and
 * an unknown format is a configuration error (exit 2, naming the option).
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { freePort, runNode, spawnLauncher } from '../support/node-process.js';

const READY_MS = 60_000;

describe('--log-format', () => {
  it('pretty writes readable lines, security actions among them, and no JSON', async () => {
    const port = await freePort();
    const child = spawnLauncher(['--mem-db', '--insecure', '--http-port', String(port), '--log-format', 'pretty'], { stdio: 'pipe' });
    const lines: string[] = [];
    let pending = '';
    let onLine: ((line: string) => void) | undefined;
    const collect = (chunk: Buffer): void => {
      pending += chunk.toString();
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        onLine?.(line);
      }
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const exit = once(child, 'exit');
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not ready within ${READY_MS} ms:\n${lines.join('\n')}`)), READY_MS);
        onLine = (line) => {
          if (/ INFO  .*\bready\b/.test(line)) {
            clearTimeout(timer);
            resolve();
          }
        };
        void exit.then(() => reject(new Error(`exited before ready:\n${lines.join('\n')}`)));
      });
      const created = await fetch(`http://127.0.0.1:${port}/users/`, {
        method: 'POST',
        headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/json' },
        body: JSON.stringify({ LoginName: 'carol', FullName: 'Carol', Groups: [], Password: 'carol-pw-29' }),
      });
      expect(created.status).toBe(201);
      const admin = async (method: string, path: string, body?: unknown): Promise<number> =>
        (await fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          headers: { authorization: ADMIN_AUTHORIZATION, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })).status;
      expect(await admin('POST', '/users/carol/command/disable')).toBe(200);
      expect(await admin('POST', '/users/carol/command/enable')).toBe(200);
      expect(await admin('POST', '/users/carol/command/reset-password', { NewPassword: 'carol-new-pw-29' })).toBe(200);
      expect(await admin('DELETE', '/users/carol')).toBe(204);
      const deadline = Date.now() + 5000;
      while (!lines.some((l) => l.includes('user deleted loginName=carol')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      child.kill('SIGTERM');
      const [code] = (await exit) as [number | null];
      expect(code).toBe(0);
    }
    const entries = lines.filter((l) => l.trim() !== '');
    expect(entries.length).toBeGreaterThan(3);
    for (const line of entries) {
      expect(line.startsWith('{'), line).toBe(false);
      expect(line, line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) /);
    }
    // Security-relevant user changes are logged at info, with who made them and no secret.
    for (const action of ['user created', 'user disabled', 'user enabled', 'user password reset', 'user deleted'])
      expect(entries.find((l) => l.includes(`${action} loginName=carol`)), action).toMatch(new RegExp(` INFO  \\[security\\] ${action} loginName=carol by=admin `));
    expect(entries.join('\n')).not.toContain('carol-pw-29');
    expect(entries.join('\n')).not.toContain('carol-new-pw-29');
  });

  it('an unknown format exits 2 naming the option', async () => {
    const result = await runNode(['--mem-db', '--insecure', '--http-port', String(await freePort()), '--log-format', 'xml']);
    expect(result.code).toBe(2);
    expect(result.output).toContain('--log-format');
  });
});

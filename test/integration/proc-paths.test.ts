/**
 * Issue 29, item 10: a data, index or backup directory under /proc (or /sys) is refused at
 * once, exit 2, with a message naming the option, where the node (and `eventdb backup --to`)
 * used to spin forever.
 */
import { describe, expect, it } from 'vitest';
import { freePort, runNode, tempDir } from '../support/node-process.js';

const BOUND_MS = 15_000;

/** runNode, failing when the process has not exited within BOUND_MS. */
async function runBounded(args: string[]): Promise<{ code: number | null; output: string; elapsedMs: number }> {
  const startedMs = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${args.join(' ')} did not exit within ${BOUND_MS} ms`)), BOUND_MS);
  });
  try {
    const result = await Promise.race([runNode(args), timeout]);
    return { ...result, elapsedMs: Date.now() - startedMs };
  } finally {
    clearTimeout(timer);
  }
}

describe('directories under /proc', () => {
  it('--db and --index under /proc or /sys exit 2 at once, naming the option', async () => {
    const dir = tempDir('edb-proc-');
    try {
      const port = String(await freePort());
      const cases: Array<[string, string[]]> = [
        ['--db', ['--db', '/proc/eventdb-db', '--index', `${dir.path}/index`]],
        ['--index', ['--db', `${dir.path}/db`, '--index', '/proc/self/eventdb-index']],
        ['--db', ['--db', '/sys/eventdb', '--index', `${dir.path}/index`]],
      ];
      for (const [option, args] of cases) {
        const result = await runBounded([...args, '--insecure', '--http-port', port]);
        expect(result.code, result.output).toBe(2);
        expect(result.output).toContain(`${option}:`);
        expect(result.output).toMatch(/is under \/(proc|sys), a kernel pseudo-filesystem/);
        expect(result.output).not.toMatch(/\n\s+at /);
      }
    } finally {
      dir.remove();
    }
  });

  it('eventdb backup --to under /proc exits 2 at once, naming the option', async () => {
    const dir = tempDir('edb-proc-backup-');
    try {
      const result = await runBounded(['backup', '--db', `${dir.path}/db`, '--index', `${dir.path}/index`, '--to', '/proc/eventdb-backup']);
      expect(result.code, result.output).toBe(2);
      expect(result.output).toContain('option --to: /proc/eventdb-backup is under /proc');
    } finally {
      dir.remove();
    }
  });
});

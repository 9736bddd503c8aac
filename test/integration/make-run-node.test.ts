/**
 * Issue 29, item 8: `make run-node` compiles only when a TypeScript source (or the tsconfig, or
 * the lock file) is newer than the last build, instead of running tsc (~40 s) on every start and
 * rebuilding dist/ under a node that is already running. Uses `make -n` (prints, runs nothing);
 * the build stamp's time is restored afterwards.
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const STAMP = 'dist/.build-stamp';

describe('make run-node', () => {
  it('starts without compiling when nothing changed, compiles when a source did', async () => {
    const existed = existsSync(STAMP);
    const before = existed ? statSync(STAMP) : undefined;
    try {
      writeFileSync(STAMP, '');
      const unchanged = await run('make', ['-n', 'run-node'], { timeout: 30_000 });
      expect(unchanged.stdout).not.toContain('tsc');
      expect(unchanged.stdout).toContain('node/bin/eventdb --insecure');
      // -W: as if the source had just been modified.
      const changed = await run('make', ['-n', '-W', 'node/src/main.ts', 'run-node'], { timeout: 30_000 });
      expect(changed.stdout).toContain('npx tsc -p tsconfig.json');
    } finally {
      if (before !== undefined) utimesSync(STAMP, before.atime, before.mtime);
      else rmSync(STAMP, { force: true });
    }
  });
});

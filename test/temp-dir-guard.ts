// vitest globalSetup: every test run gets a temp directory of its own (TMPDIR, which os.tmpdir()
// and the node processes the tests start honour), and must leave it empty: a test that leaves
// files or directories behind fails the run with their names. The directory is removed either way.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let runTempDir: string | undefined;
let previous: string | undefined;

export function setup(): void {
  previous = process.env['TMPDIR'];
  runTempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'eventdb-test-run-'));
  process.env['TMPDIR'] = runTempDir;
}

export function teardown(): void {
  if (runTempDir === undefined) return;
  const left = fs.readdirSync(runTempDir);
  fs.rmSync(runTempDir, { recursive: true, force: true });
  if (previous === undefined) delete process.env['TMPDIR'];
  else process.env['TMPDIR'] = previous;
  if (left.length > 0) {
    // A throw here is only logged by vitest: report and fail the run's exit code instead.
    process.stderr.write(`\nFAIL: tests left ${left.length} entries in the temp directory: ${left.slice(0, 20).join(', ')}\n`);
    process.exitCode = 1;
  }
}

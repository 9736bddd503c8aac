import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Test tiers. `unit` tests sit beside their source; the cross-module tiers live under test/.
// Integration and crash tests spawn real node processes from dist/, so `make test` builds first.
export default defineConfig({
  // The repository root: every include and setup path below is relative to it.
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    // One temp directory per run, which must be left empty (test/temp-dir-guard.ts).
    globalSetup: ['test/temp-dir-guard.ts'],
    // the outcome in a few lines (failures; tests that passed only on a retry, should anyone run with --retry), printed last by `make test`
    reporters: ['default', './test/support/outcome-reporter.ts'],
    // the k8s tier's global teardown deletes its kind cluster and checks the host (tens of seconds)
    teardownTimeout: 600_000,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['node/src/**/*.test.ts', 'operator/src/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'sim',
          include: ['test/sim/**/*.test.ts'],
          testTimeout: 600_000,
        },
      },
      {
        test: {
          name: 'integration',
          // no retry: a test that fails once has found a bug (in the product or in the test's waits), and a
          // retry would hide it; real processes on a shared 2-core machine get time bounds, not second chances
          include: ['test/integration/**/*.test.ts', 'test/crash/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // The web interface in Debian's Chromium (playwright-core) against real node processes
        // (`make test-tools` installs chromium). One file at a time: a browser and nodes each.
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          // its own group, so that no other tier's processes share the two cores with the browser. Vitest
          // runs the groups in order (0: unit, sim, operator; 1: browser; 2: k8s) and then the projects
          // that have fileParallelism false and no groupOrder (integration, crash) last, one file at a time
          sequence: { groupOrder: 1 },
          testTimeout: 300_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // The operator against real node processes (contract tests of its node client).
        test: {
          name: 'operator',
          // no retry (see integration)
          include: ['test/operator/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'k8s',
          // no retry: these tests build on each other's state (a scale from 3 to 5, then 5 to 3), so a
          // second run of a failed one cannot pass and only doubles its long timeouts
          // test/operator/k8s: the operator on the same cluster (one globalSetup for both)
          include: ['test/k8s/**/*.test.ts', 'test/operator/k8s/**/*.test.ts'],
          globalSetup: ['test/k8s/global-setup.ts'],
          // one file at a time: the cluster shares the machine's two cores
          fileParallelism: false,
          // a group of its own (see browser): node processes and clusters of the other tiers time out
          // when the kind cluster's tests run beside them on two cores
          sequence: { groupOrder: 2 },
          testTimeout: 600_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});

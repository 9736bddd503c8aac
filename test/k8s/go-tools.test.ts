// The Go programs of the kind cluster (test/k8s/go: the CSI hostpath driver, mkimage, pause): vet and unit tests,
// so `make test` runs them too. They need only Go, not the cluster.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ctx } from './helpers.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'go');

describe.skipIf(!!ctx().skipReason)('Go programs of the cluster', () => {
  it('vet cleanly and pass their unit tests', () => {
    const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod' };
    const vet = spawnSync('go', ['vet', './...'], { cwd: dir, env, encoding: 'utf8', timeout: 600_000 });
    expect(vet.status, `${vet.stdout}${vet.stderr}`).toBe(0);
    const test = spawnSync('go', ['test', '-count=1', './...'], { cwd: dir, env, encoding: 'utf8', timeout: 600_000 });
    expect(test.status, `${test.stdout}${test.stderr}`).toBe(0);
    expect(test.stdout).toMatch(/^ok\s+eventdb\.local\/k8s-tools\/hostpath/m);
  }, 900_000);
});

// vitest globalSetup of the `k8s` project: starts the local control plane once per run (or uses the cluster
// in $KUBECONFIG) and provides its description to the tests through inject('k8s').
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

export interface K8sContext {
  /** kubeconfig the tests use */
  kubeconfig: string;
  /** true when the cluster is the local control plane with the local kubelet (process-level checks possible) */
  local: boolean;
  /** state directory of the local control plane (empty for external clusters) */
  stateDir: string;
  /** helm binary */
  helm: string;
  /** set when the tier cannot run here; tests report it as skipped with this reason */
  skipReason: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    k8s: K8sContext;
  }
}

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const clusterSh = path.join(repo, 'test/k8s/cluster.sh');
const stateDir = path.join(repo, '.local/k8s');

function haveGo(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
}

function localRunning(): boolean {
  const r = spawnSync(clusterSh, ['status'], { encoding: 'utf8' });
  return r.status === 0 && /kube-apiserver running/.test(r.stdout) && /kubelet running/.test(r.stdout);
}

let startedHere = false;

export function setup(project: TestProject): void {
  const external = process.env['KUBECONFIG'];
  if (external && process.env['EVENTDB_K8S_FORCE_LOCAL'] !== '1') {
    if (!fs.existsSync(external)) throw new Error(`KUBECONFIG=${external} does not exist`);
    process.stdout.write(`[k8s] using the cluster in KUBECONFIG=${external}\n`);
    project.provide('k8s', { kubeconfig: external, local: false, stateDir: '', helm: process.env['HELM'] ?? 'helm', skipReason: '' });
    return;
  }
  if (!haveGo()) {
    const reason = 'the k8s tier needs Go (to build the local control plane) or KUBECONFIG pointing at a cluster';
    if (process.env['CI']) throw new Error(`[k8s] ${reason}; refusing to skip in CI`);
    process.stdout.write(`\n[k8s] WARNING: SKIPPING the k8s tier: ${reason}\n\n`);
    project.provide('k8s', { kubeconfig: '', local: true, stateDir, helm: '', skipReason: reason });
    return;
  }
  if (localRunning()) {
    process.stdout.write('[k8s] local control plane already running: using it (and leaving it running)\n');
  } else {
    process.stdout.write('[k8s] starting the local control plane (first run builds it: see README)\n');
    const t0 = Date.now();
    startedHere = true;
    const r = spawnSync(clusterSh, ['up'], { stdio: 'inherit', timeout: 80 * 60_000 });
    if (r.status !== 0) {
      spawnSync(clusterSh, ['down'], { stdio: 'inherit', timeout: 120_000 });
      throw new Error(`[k8s] cluster.sh up failed (status ${String(r.status)}${r.error ? `, ${r.error.message}` : ''})`);
    }
    process.stdout.write(`[k8s] control plane up in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
  }
  project.provide('k8s', {
    kubeconfig: path.join(stateDir, 'kubeconfig'),
    local: true,
    stateDir,
    helm: path.join(stateDir, 'bin/helm'),
    skipReason: '',
  });
}

export function teardown(): void {
  if (!startedHere) return;
  if (process.env['EVENTDB_K8S_KEEP'] === '1') {
    process.stdout.write('[k8s] EVENTDB_K8S_KEEP=1: leaving the control plane running (make k8s-down stops it)\n');
    return;
  }
  spawnSync(clusterSh, ['down'], { stdio: 'inherit', timeout: 180_000 });
}

// vitest globalSetup of the `k8s` project. Either the cluster in $KUBECONFIG (any cluster: the images are then
// $IMAGE_REGISTRY/eventdb:dev, pushed there by `make images IMAGE_REGISTRY=...`), or this checkout's kind cluster:
// created for the run when it does not run yet (and deleted afterwards, with the check that nothing is left on the
// host), with the images built from this checkout and loaded into it. Never skipped silently: where the tier cannot
// run it says why, and in CI it fails instead.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

export interface K8sContext {
  /** kubeconfig the tests use */
  kubeconfig: string;
  /** kubectl and helm binaries */
  kubectl: string;
  helm: string;
  /** the node image the pods run */
  image: string;
  /** true for this checkout's kind cluster (made by test/k8s/cluster.sh) */
  kind: boolean;
  /** set when the tier cannot run here; tests report it as skipped with this reason */
  skipReason: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    k8s: K8sContext;
  }
}

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const k8sDir = path.join(repo, 'test/k8s');
const stateDir = path.join(repo, '.local/k8s');

function sh(script: string, args: string[], timeoutMs: number, env: Record<string, string> = {}): number | null {
  const r = spawnSync(path.join(k8sDir, script), args, { stdio: 'inherit', timeout: timeoutMs, env: { ...process.env, ...env } });
  if (r.error) process.stdout.write(`[k8s] ${script} ${args.join(' ')}: ${r.error.message}\n`);
  return r.status;
}

function have(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
}

/** Why this machine cannot make a kind cluster, or '' when it can. */
function cannotMakeCluster(): string {
  if (!have('go', ['version'])) return 'the kind cluster is built from Go modules and Go is not installed';
  const docker = have('docker', ['info']);
  if (!docker && process.getuid?.() !== 0) return 'no Docker daemon answers and rootful podman needs root';
  if (!docker && !have('sh', ['-c', 'command -v podman || command -v apt-get'])) return 'neither Docker nor podman (nor apt-get to install it)';
  return '';
}

let startedHere = false;

export function setup(project: TestProject): void {
  const external = process.env['KUBECONFIG'];
  // KUBECONFIG of this checkout's own kind cluster (README's `export KUBECONFIG=...`) is the kind case: the images
  // of this checkout are built and loaded as without it
  const ownKubeconfig = external !== undefined && path.resolve(external) === path.join(stateDir, 'kubeconfig');
  if (external && !ownKubeconfig && process.env['EVENTDB_K8S_FORCE_KIND'] !== '1') {
    if (!fs.existsSync(external)) throw new Error(`KUBECONFIG=${external} does not exist`);
    const registry = process.env['IMAGE_REGISTRY'];
    const image = process.env['EVENTDB_K8S_IMAGE'] ?? (registry ? `${registry}/eventdb:dev` : 'eventdb:dev');
    process.stdout.write(`[k8s] using the cluster in KUBECONFIG=${external}, image ${image}\n`);
    project.provide('k8s', {
      kubeconfig: external,
      kubectl: process.env['KUBECTL'] ?? 'kubectl',
      helm: process.env['HELM'] ?? 'helm',
      image,
      kind: false,
      skipReason: '',
    });
    return;
  }
  const reason = cannotMakeCluster();
  if (reason) {
    if (process.env['CI']) throw new Error(`[k8s] ${reason}; refusing to skip the k8s tier in CI`);
    process.stdout.write(`\n[k8s] WARNING: SKIPPING the k8s tier: ${reason} (or set KUBECONFIG to a cluster)\n\n`);
    project.provide('k8s', { kubeconfig: '', kubectl: '', helm: '', image: '', kind: true, skipReason: reason });
    return;
  }
  const running = sh('cluster.sh', ['status'], 120_000) === 0;
  const t0 = Date.now();
  if (running) {
    process.stdout.write('[k8s] the kind cluster of this checkout runs: using it (and leaving it running)\n');
  } else {
    process.stdout.write('[k8s] creating the kind cluster of this checkout (the first run builds everything: see README)\n');
    startedHere = true;
    startWatchdog();
    if (sh('cluster.sh', ['up'], 85 * 60_000) !== 0) {
      stopWatchdog();
      sh('cluster.sh', ['down'], 300_000);
      throw new Error('[k8s] test/k8s/cluster.sh up failed');
    }
  }
  // the images of this checkout, loaded into the cluster
  if (sh('images.sh', [], 30 * 60_000, { EVENTDB_K8S_LOAD: '1' }) !== 0) {
    if (startedHere) {
      stopWatchdog();
      sh('cluster.sh', ['down'], 300_000);
    }
    throw new Error('[k8s] test/k8s/images.sh failed');
  }
  process.stdout.write(`[k8s] cluster and images ready in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
  project.provide('k8s', {
    kubeconfig: path.join(stateDir, 'kubeconfig'),
    kubectl: path.join(stateDir, 'bin/kubectl'),
    helm: path.join(stateDir, 'bin/helm'),
    image: 'eventdb:dev',
    kind: true,
    skipReason: '',
  });
}

/**
 * A detached watchdog deletes the cluster this run made if the test process dies before its teardown (SIGKILL,
 * a CI job timeout): it waits for this process to end, then runs `cluster.sh down` unless the teardown ran. The
 * teardown stops it.
 */
let watchdog: ChildProcess | undefined;
const watchdogMarker = path.join(repo, '.local/k8s-run-owned');
function startWatchdog(): void {
  if (process.env['EVENTDB_K8S_KEEP'] === '1') return;
  fs.mkdirSync(path.dirname(watchdogMarker), { recursive: true });
  fs.writeFileSync(watchdogMarker, `${process.pid}\n`);
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 2; done
    if [ -f "$1" ]; then rm -f "$1"; echo "[k8s] the test run ended without its teardown: deleting its cluster" >&2; exec "$2" down; fi`;
  watchdog = spawn('sh', ['-c', script, 'k8s-watchdog', watchdogMarker, path.join(k8sDir, 'cluster.sh')], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  watchdog.unref();
}
function stopWatchdog(): void {
  fs.rmSync(watchdogMarker, { force: true });
  if (watchdog?.pid !== undefined && watchdog.exitCode === null) {
    try {
      process.kill(watchdog.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export function teardown(): void {
  if (!startedHere) return;
  stopWatchdog();
  if (process.env['EVENTDB_K8S_KEEP'] === '1') {
    process.stdout.write('[k8s] EVENTDB_K8S_KEEP=1: leaving the cluster running (make k8s-down deletes it)\n');
    return;
  }
  // cluster.sh down ends with check-clean.sh: a leftover on the host fails the run (a throw here would only be
  // logged by vitest, so the exit code says it)
  if (sh('cluster.sh', ['down'], 600_000) !== 0) {
    process.stderr.write('\nFAIL: [k8s] deleting the cluster failed or left something on the host (see above)\n');
    process.exitCode = 1;
  }
}

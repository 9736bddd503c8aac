// Helpers of the k8s test tier: API access, one namespace per test, bounded waits, pod process checks.
import fs from 'node:fs';
import http from 'node:http';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, inject } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { Api } from './kubelet/api.js';
import type { K8sContext } from './global-setup.js';

export { Api };

/** Image of the EventDB node. The local kubelet runs it from the repository's build (entrypoint
 * `node /app/dist/node/src/main.js`, workdir /app = the repository). */
export const IMAGE = process.env['EVENTDB_K8S_IMAGE'] ?? 'eventdb:dev';

/**
 * Command of the node container: the image's entrypoint (the real node, default), or with
 * EVENTDB_K8S_NODE=standin the stand-in fixture test/k8s/fixtures/standin-node.mjs.
 */
export const NODE_MODE: 'real' | 'standin' = (process.env['EVENTDB_K8S_NODE'] as 'real' | 'standin' | undefined) ?? 'real';
export const NODE_COMMAND: string[] | undefined = NODE_MODE === 'real' ? undefined : ['node', '/app/test/k8s/fixtures/standin-node.mjs'];
export const STANDIN_COMMAND = ['node', '/app/test/k8s/fixtures/standin-node.mjs'];

export function ctx(): K8sContext {
  return inject('k8s');
}

let apiSingleton: Api | undefined;
export function api(): Api {
  apiSingleton ??= Api.fromFile(ctx().kubeconfig);
  return apiSingleton;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `fn` until it returns a value other than undefined/false; bounded in time. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000, everyMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (let i = 0; Date.now() < deadline && i < 100_000; i++) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

export async function createNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${crypto.randomBytes(3).toString('hex')}`.toLowerCase().slice(0, 60);
  await api().call('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'eventdb.test/k8s': 'true' } },
  });
  // pods are rejected until the service account controller created `default`
  await waitFor(`serviceaccount ${name}/default`, async () => !!(await api().get(`/api/v1/namespaces/${name}/serviceaccounts/default`)), 30_000);
  return name;
}

export async function deleteNamespace(name: string, timeoutMs = 120_000): Promise<void> {
  await api().call('DELETE', `/api/v1/namespaces/${name}`, undefined, { ok: [404, 409] });
  await waitFor(`namespace ${name} to disappear`, async () => (await api().get(`/api/v1/namespaces/${name}`)) === undefined, timeoutMs, 1000);
}

/** Registers beforeEach/afterEach creating and deleting a namespace for every test; returns a getter. */
export function useNamespace(prefix: string): () => string {
  let current = '';
  beforeEach(async () => {
    if (ctx().skipReason) return;
    current = await createNamespace(prefix);
  }, 60_000);
  afterEach(async () => {
    if (!current) return;
    const ns = current;
    current = '';
    await deleteNamespace(ns);
  }, 180_000);
  return () => current;
}

export async function create(path: string, body: unknown): Promise<void> {
  await api().call('POST', path, body);
}

export async function getPod(ns: string, name: string): Promise<V1Pod | undefined> {
  return await api().get<V1Pod>(`/api/v1/namespaces/${ns}/pods/${name}`);
}

export function podReady(p: V1Pod | undefined): boolean {
  return !!p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}

export async function waitPodReady(ns: string, name: string, timeoutMs = 90_000): Promise<V1Pod> {
  return await waitFor(`pod ${ns}/${name} Ready`, async () => {
    const p = await getPod(ns, name);
    return podReady(p) ? p : undefined;
  }, timeoutMs);
}

export async function waitPodPhase(ns: string, name: string, phases: string[], timeoutMs = 90_000): Promise<V1Pod> {
  return await waitFor(`pod ${ns}/${name} in ${phases.join('|')}`, async () => {
    const p = await getPod(ns, name);
    return p?.status?.phase && phases.includes(p.status.phase) ? p : undefined;
  }, timeoutMs);
}

export async function waitPodGone(ns: string, name: string, timeoutMs = 90_000): Promise<void> {
  await waitFor(`pod ${ns}/${name} gone`, async () => (await getPod(ns, name)) === undefined, timeoutMs);
}

/** Local kubelet only: the pid of a running container (the containerID is eventdb-local://<pid>). */
export function containerPid(p: V1Pod | undefined, container?: string): number | undefined {
  const st = (p?.status?.containerStatuses ?? []).find((c) => container === undefined || c.name === container);
  const m = /^eventdb-local:\/\/(\d+)$/.exec(st?.containerID ?? '');
  return m ? Number(m[1]) : undefined;
}

export function processAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

export async function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return await new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)));
    req.on('error', reject);
  });
}

/** Local kubelet only: the container log file of a pod. */
export function localLog(p: V1Pod | undefined, container: string): string {
  const c = ctx();
  if (!c.local || !p?.metadata) return '';
  const f = `${c.stateDir}/kubelet/pods/${p.metadata.namespace ?? ''}_${p.metadata.name ?? ''}_${p.metadata.uid ?? ''}/${container}.log`;
  try {
    return fs.readFileSync(f, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Runs a short-lived pod of the eventdb image whose command is `node -e <script>` and waits for it to finish.
 * The script runs inside the cluster (pod network, pod DNS). Returns the final pod.
 */
export async function runScriptPod(ns: string, name: string, script: string, env: Record<string, string> = {}, timeoutMs = 60_000): Promise<V1Pod> {
  await create(`/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'script',
          image: IMAGE,
          command: ['node', '-e', script],
          env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
        },
      ],
    },
  });
  return await waitPodPhase(ns, name, ['Succeeded', 'Failed'], timeoutMs);
}

export function run(cmd: string, args: string[], env: Record<string, string> = {}): { status: number; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 180_000 });
  return { status: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
}

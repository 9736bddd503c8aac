// Helpers of the k8s test tier: API access, kubectl, one namespace per test, bounded waits.
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, inject } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { Api } from './api.js';
import type { K8sContext } from './global-setup.js';

export { Api };

export function ctx(): K8sContext {
  return inject('k8s');
}

/** The node image the pods run (eventdb:dev, or $IMAGE_REGISTRY/eventdb:dev on another cluster). */
export function image(): string {
  return ctx().image;
}

/** The node image's user and group (pods give it their volumes through fsGroup). */
export const NODE_UID = 10001;

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

export async function deleteNamespace(name: string, timeoutMs = 180_000): Promise<void> {
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
  }, 240_000);
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

/** The pod's status and the last lines of its containers' logs, for failure messages. */
export async function describePod(ns: string, name: string): Promise<string> {
  const p = await getPod(ns, name).catch(() => undefined);
  const logs: string[] = [];
  for (const c of p?.spec?.containers ?? []) logs.push(`--- ${c.name}:\n${(await podLogs(ns, name, c.name).catch((e: unknown) => String(e))).slice(-3000)}`);
  const events = await api()
    .get<{ items?: Array<{ reason?: string; message?: string }> }>(`/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name=${name}`)
    .catch(() => undefined);
  return `pod ${ns}/${name} status: ${JSON.stringify(p?.status)}\nevents: ${(events?.items ?? []).map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`).join('; ')}\n${logs.join('\n')}`;
}

export async function waitPodReady(ns: string, name: string, timeoutMs = 120_000): Promise<V1Pod> {
  try {
    return await waitFor(`pod ${ns}/${name} Ready`, async () => {
      const p = await getPod(ns, name);
      return podReady(p) ? p : undefined;
    }, timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await describePod(ns, name)}`);
  }
}

export async function waitPodPhase(ns: string, name: string, phases: string[], timeoutMs = 120_000): Promise<V1Pod> {
  try {
    return await waitFor(`pod ${ns}/${name} in ${phases.join('|')}`, async () => {
      const p = await getPod(ns, name);
      return p?.status?.phase && phases.includes(p.status.phase) ? p : undefined;
    }, timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await describePod(ns, name)}`);
  }
}

export async function waitPodGone(ns: string, name: string, timeoutMs = 120_000): Promise<void> {
  await waitFor(`pod ${ns}/${name} gone`, async () => (await getPod(ns, name)) === undefined, timeoutMs);
}

/** A container's log through the API server (what `kubectl logs` shows). */
export async function podLogs(ns: string, name: string, container?: string): Promise<string> {
  const q = container ? `?container=${encodeURIComponent(container)}` : '';
  return (await api().call('GET', `/api/v1/namespaces/${ns}/pods/${name}/log${q}`)).text;
}

/** Runs kubectl against the test cluster; never throws, returns the exit status and output. */
export function kubectl(args: string[], input?: string, timeoutMs = 120_000): { status: number; out: string; stdout: string } {
  const c = ctx();
  const r = spawnSync(c.kubectl, ['--kubeconfig', c.kubeconfig, ...args], { encoding: 'utf8', input, timeout: timeoutMs });
  return { status: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}`, stdout: r.stdout ?? '' };
}

/** `kubectl exec` into a container; throws with the output when the command fails. */
export function execIn(ns: string, pod: string, command: string[], container?: string): string {
  const r = kubectl(['exec', '-n', ns, pod, ...(container ? ['-c', container] : []), '--', ...command]);
  if (r.status !== 0) throw new Error(`kubectl exec ${ns}/${pod} ${command.join(' ')} -> ${r.status}:\n${r.out}`);
  return r.stdout;
}

/** The container spec of an EventDB node: the image's entrypoint with `args`, probed on its HTTP port. */
export function nodeContainer(args: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'eventdb',
    image: image(),
    imagePullPolicy: 'IfNotPresent',
    args,
    ports: [{ name: 'http', containerPort: 2113 }],
    readinessProbe: { httpGet: { path: '/health/live', port: 'http' }, periodSeconds: 1, failureThreshold: 3 },
    ...extra,
  };
}

/** A 1 GiB ReadWriteOnce PersistentVolumeClaim `name` of the default StorageClass; `extra` adds to its spec (dataSource). */
export async function createClaim(ns: string, name: string, extra: Record<string, unknown> = {}): Promise<void> {
  await create(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...extra },
  });
}

/**
 * The two Services of a StatefulSet of nodes labelled `app`, on port 2113: `<app>-headless` gives each pod a DNS name
 * (listed before the pod is ready: a clustered node is ready only once it found the others through those names) and
 * `<app>` sends to the ready pods.
 */
export async function createNodeServices(ns: string, app: string): Promise<void> {
  for (const [name, headless] of [[`${app}-headless`, true], [app, false]] as const) {
    await create(`/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec: {
        ...(headless ? { clusterIP: 'None', publishNotReadyAddresses: true } : {}),
        selector: { app },
        ports: [{ name: 'http', port: 2113, targetPort: 'http' }],
      },
    });
  }
}

/** A StatefulSet `app` of 3 pods started in parallel, behind `<app>-headless`; `extra` adds to its spec (volumes). */
export async function createNodeStatefulSet(
  ns: string,
  app: string,
  podSpec: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await create(`/apis/apps/v1/namespaces/${ns}/statefulsets`, {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: app },
    spec: {
      serviceName: `${app}-headless`,
      replicas: 3,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: { app } },
      template: { metadata: { labels: { app } }, spec: podSpec },
      ...extra,
    },
  });
}

/**
 * Runs a short-lived pod of the node image whose command is `node -e <script>` and waits for it to finish. The
 * script runs inside the cluster (pod network, cluster DNS). Returns the final pod and its log.
 */
export async function runScriptPod(
  ns: string,
  name: string,
  script: string,
  env: Record<string, string> = {},
  opts: { timeoutMs?: number; volumes?: unknown[]; volumeMounts?: unknown[]; fsGroup?: number } = {},
): Promise<{ pod: V1Pod; log: string }> {
  await create(`/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      ...(opts.fsGroup !== undefined ? { securityContext: { fsGroup: opts.fsGroup } } : {}),
      containers: [
        {
          name: 'script',
          image: image(),
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '-e', script],
          env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
          ...(opts.volumeMounts ? { volumeMounts: opts.volumeMounts } : {}),
        },
      ],
      ...(opts.volumes ? { volumes: opts.volumes } : {}),
    },
  });
  const pod = await waitPodPhase(ns, name, ['Succeeded', 'Failed'], opts.timeoutMs ?? 120_000);
  return { pod, log: await podLogs(ns, name) };
}

export function run(cmd: string, args: string[], env: Record<string, string> = {}): { status: number; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 180_000 });
  return { status: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
}

// Helpers of the operator's tests on the kind cluster: CRDs, the operator (a local process or the
// chart in the cluster), EventDBClusters and their status, and programs run inside the cluster.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs, { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { EventDBClusterStatus } from '../../../operator/src/api/eventdb-cluster.js';
import { api, createNamespace, ctx, deleteNamespace, kubectl, run, runScriptPod, sleep, waitFor } from '../../k8s/helpers.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const OPERATOR_MAIN = path.join(REPO, 'dist/operator/src/main.js');

/** A one-node EventDBCluster spec small enough for the kind cluster. */
export const SMALL_CLUSTER = { replicas: 1, storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '50m', memory: '128Mi' } } };
export const OPERATOR_IMAGE = process.env['EVENTDB_K8S_OPERATOR_IMAGE'] ?? 'eventdb-operator:dev';

export interface ClusterObject {
  metadata: { name: string; namespace: string; generation?: number; uid?: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: EventDBClusterStatus;
}

/** The operator's CRDs by name, one for each file of crds/ (`eventdb.io_<plural>.yaml`). */
export const EVENTDB_CRDS: readonly string[] = fs.readdirSync(path.join(REPO, 'crds'))
  .map((file) => /^eventdb\.io_([a-z]+)\.yaml$/.exec(file)?.[1])
  .filter((plural): plural is string => plural !== undefined)
  .map((plural) => `${plural}.eventdb.io`);

/** Installs (or updates) the CRDs from crds/, as `kubectl apply --server-side` does. */
export function installCrds(): void {
  const result = kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(REPO, 'crds')]);
  if (result.status !== 0) throw new Error(`installing the CRDs failed:\n${result.out}`);
  const established = kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...EVENTDB_CRDS.map((crd) => `crd/${crd}`)]);
  if (established.status !== 0) throw new Error(`CRDs not established:\n${established.out}`);
}

export interface LocalOperator {
  readonly child: ChildProcess;
  readonly output: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The operator as a process on this machine (the fast loop): it reaches the nodes through
 * port-forwards over the apiserver, as it does whenever it runs outside the cluster.
 */
export async function startLocalOperator(options: { namespaces: string[]; env?: Record<string, string> }): Promise<LocalOperator> {
  if (!existsSync(OPERATOR_MAIN)) throw new Error(`${OPERATOR_MAIN} is missing: run make build`);
  const output: string[] = [];
  const child = spawn(process.execPath, [OPERATOR_MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      KUBECONFIG: ctx().kubeconfig,
      WATCH_NAMESPACES: options.namespaces.join(','),
      LEADER_ELECTION: 'false',
      PROBE_ADDRESS: '127.0.0.1:0',
      DEFAULT_NODE_IMAGE: ctx().image,
      DEFAULT_DATA_SIZE: '256Mi',
      LOG_LEVEL: 'info',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let pending = '';
  const collect = (chunk: Buffer): void => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    output.push(...lines);
    if (output.length > 20_000) output.splice(0, output.length - 20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitFor('the local operator to start', async () => output.some((line) => line.includes('controllers running')) || (child.exitCode !== null ? Promise.reject(new Error(output.join('\n'))) : false), 60_000, 200);
  return {
    child,
    output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** The operator in the cluster from its image, through the chart (CRDs managed outside the release). */
export function helmInstallOperator(options: { release: string; namespace: string; watchNamespaces: string[]; set?: string[]; crds?: boolean }): void {
  const sets = [
    `image.repository=${OPERATOR_IMAGE.split(':')[0]}`,
    `image.tag=${OPERATOR_IMAGE.split(':')[1] ?? 'dev'}`,
    `nodeImage=${ctx().image}`,
    `crds.install=${options.crds === true}`,
    ...(options.watchNamespaces.length > 0 ? [`watchNamespaces={${options.watchNamespaces.join(',')}}`] : []),
    ...(options.set ?? []),
  ];
  const result = run(ctx().helm, [
    'upgrade', '--install', options.release, path.join(REPO, 'charts/eventdb-operator'),
    '--kubeconfig', ctx().kubeconfig, '--namespace', options.namespace, '--create-namespace',
    '--wait', '--timeout', '5m', ...sets.flatMap((value) => ['--set', value]),
  ]);
  if (result.status !== 0) throw new Error(`helm install failed:\n${result.out}`);
}

export function helmUninstall(release: string, namespace: string): void {
  const result = run(ctx().helm, ['uninstall', release, '--kubeconfig', ctx().kubeconfig, '--namespace', namespace, '--wait', '--timeout', '5m']);
  if (result.status !== 0 && !/not found/.test(result.out)) throw new Error(`helm uninstall failed:\n${result.out}`);
}

/** A fresh namespace for an operator release: edb-op-<4 hex digits>. */
export async function createOperatorNamespace(): Promise<string> {
  return await createNamespace(`edb-op-${crypto.randomBytes(2).toString('hex')}`);
}

/** The chart's release `eventdb-operator` (its two replicas asking 10m CPU each) in `namespace`, watching `watchNamespaces`. */
export function installOperatorRelease(namespace: string, watchNamespaces: string[]): void {
  helmInstallOperator({ release: 'eventdb-operator', namespace, watchNamespaces, set: ['resources.requests.cpu=10m'] });
}

/** Uninstalls the release `eventdb-operator` and deletes its namespace. */
export async function removeOperatorRelease(namespace: string): Promise<void> {
  helmUninstall('eventdb-operator', namespace);
  await deleteNamespace(namespace);
}

/**
 * EVENTDB_K8S_LOCAL_OPERATOR=1: the tests start the operator as a process on this machine (the
 * debugging loop: its log on the terminal, a breakpoint in it) instead of installing it in the
 * cluster. Not the proof: `make test` runs them against the operator installed as users install it.
 */
export const LOCAL_OPERATOR = process.env['EVENTDB_K8S_LOCAL_OPERATOR'] === '1';

/** How the operator under test was installed. */
export type OperatorInstall = 'chart' | 'yaml' | 'local';

/** The operator a test file runs against: installed in the cluster (chart or plain YAML), or a local process (opt-in). */
export interface OperatorUnderTest {
  readonly install: OperatorInstall;
  /** The operator's namespace ('' for a local process). */
  readonly namespace: string;
  /** Its log so far: every operator pod's (current and previous container), or the local process's. */
  logs(): string;
  /**
   * Restarts it: deletes its pods (`force`: at once, no grace, as a crash; else SIGTERM, giving the
   * Lease up) and waits until a new replica holds the Lease; a local process is stopped and started.
   */
  restart(options?: { force?: boolean }): Promise<void>;
  /** True when no operator container restarted or ended by itself since it was installed. */
  healthy(): Promise<boolean>;
  stop(): Promise<void>;
}

const OPERATOR_SELECTOR = 'app.kubernetes.io/name=eventdb-operator';

function operatorPodNames(namespace: string): string[] {
  return kubectl(['get', 'pods', '-n', namespace, '-l', OPERATOR_SELECTOR, '-o', 'jsonpath={.items[*].metadata.name}']).stdout.split(' ').filter(Boolean);
}

async function leaseHolder(namespace: string, lease: string): Promise<string | undefined> {
  return (await api().get<{ spec?: { holderIdentity?: string } }>(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${lease}`))?.spec?.holderIdentity || undefined;
}

/** The operator in the cluster, in `namespace` (Deployment `deployment`, Lease `lease`). */
function inClusterOperator(install: 'chart' | 'yaml', namespace: string, deployment: string, uninstall: () => Promise<void>): OperatorUnderTest {
  const seenLogs: string[] = [];
  const collect = (): void => {
    for (const pod of operatorPodNames(namespace)) {
      const log = kubectl(['logs', '-n', namespace, pod, '--tail=-1']).stdout;
      seenLogs.push(`--- ${pod}\n${log}`);
    }
  };
  return {
    install,
    namespace,
    logs() {
      const now = operatorPodNames(namespace).map((pod) => `--- ${pod}\n${kubectl(['logs', '-n', namespace, pod, '--tail=-1']).stdout}`);
      return [...seenLogs, ...now].join('\n');
    },
    async restart(options = {}) {
      collect();
      const before = operatorPodNames(namespace);
      const holder = await leaseHolder(namespace, 'eventdb-operator');
      const args = ['delete', 'pod', '-n', namespace, ...before, '--wait=false', ...(options.force === true ? ['--grace-period=0', '--force'] : [])];
      const deleted = kubectl(args);
      if (deleted.status !== 0) throw new Error(`deleting the operator pods failed:\n${deleted.out}`);
      const rollout = kubectl(['rollout', 'status', `deployment/${deployment}`, '-n', namespace, '--timeout=180s'], undefined, 200_000);
      if (rollout.status !== 0) throw new Error(`the operator did not come back:\n${rollout.out}`);
      await waitFor('a new operator replica holding the Lease', async () => {
        const now = await leaseHolder(namespace, 'eventdb-operator');
        return now !== undefined && now !== holder && !before.includes(now) ? now : undefined;
      }, 120_000, 1000);
    },
    async healthy() {
      const pods = await api().get<{ items: { status?: { containerStatuses?: { restartCount?: number }[] } }[] }>(`/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(OPERATOR_SELECTOR)}`);
      return (pods?.items ?? []).every((pod) => (pod.status?.containerStatuses ?? []).every((status) => (status.restartCount ?? 0) === 0));
    },
    async stop() {
      await uninstall();
    },
  };
}

/**
 * The operator for a test file, as users install it: the chart (`helm install` into a namespace
 * of its own, two replicas, its service account and RBAC) or the plain YAML
 * (operator/install.yaml with this checkout's images: namespace eventdb-system, cluster-wide).
 * `watchNamespaces` empty: it watches every namespace (the tests of a file then make namespaces
 * as they go). EVENTDB_K8S_LOCAL_OPERATOR=1 starts a local process instead.
 */
export async function startOperator(options: { watchNamespaces: string[]; install?: 'chart' | 'yaml'; set?: string[]; env?: Record<string, string> }): Promise<OperatorUnderTest> {
  if (LOCAL_OPERATOR) {
    let local = await startLocalOperator({ namespaces: options.watchNamespaces, ...(options.env === undefined ? {} : { env: options.env }) });
    const earlier: string[] = [];
    return {
      install: 'local',
      namespace: '',
      logs: () => [...earlier, ...local.output].join('\n'),
      async restart(restartOptions = {}) {
        earlier.push(...local.output);
        await local.stop(restartOptions.force === true ? 'SIGKILL' : 'SIGTERM');
        local = await startLocalOperator({ namespaces: options.watchNamespaces, ...(options.env === undefined ? {} : { env: options.env }) });
      },
      healthy: async () => local.child.exitCode === null,
      async stop() {
        await local.stop();
      },
    };
  }
  if (options.install === 'yaml') return await installPlainYaml(options.set ?? []);
  const namespace = await createOperatorNamespace();
  // a release name of its own: a cluster-wide install's ClusterRole is named after it
  const release = `${namespace}-eventdb-operator`;
  const sets = ['resources.requests.cpu=10m', ...(options.set ?? [])];
  try {
    helmInstallOperator({ release, namespace, watchNamespaces: options.watchNamespaces, set: sets });
  } catch (err: unknown) {
    process.stdout.write(`[operator] ${(err as Error).message}\n${kubectl(['get', 'pods,events', '-n', namespace]).out}\n`);
    helmUninstall(release, namespace);
    await deleteNamespace(namespace);
    throw err;
  }
  await waitFor('the chart-installed operator to hold its Lease', async () => await leaseHolder(namespace, 'eventdb-operator'), 120_000, 1000);
  return inClusterOperator('chart', namespace, release, async () => {
    helmUninstall(release, namespace);
    await deleteNamespace(namespace);
  });
}

/** Documents of a manifest with this checkout's images in place of the release's. */
function withTestImages(manifest: string): string {
  return manifest.replace(/image: "eventdb-operator:[^"]+"/g, `image: "${OPERATOR_IMAGE}"`).replace(/value: "eventdb:[^"]+"/g, `value: "${ctx().image}"`);
}

/**
 * The plain-YAML install: operator/install.yaml (the CRDs, namespace eventdb-system, the operator),
 * or with `set` containing rbac.podExec=false the CRDs and operator/deploy/operator-without-exec.yaml.
 */
async function installPlainYaml(set: string[]): Promise<OperatorUnderTest> {
  const withoutExec = set.includes('rbac.podExec=false');
  const unknown = set.filter((value) => value !== 'rbac.podExec=false');
  if (unknown.length > 0) throw new Error(`the plain-YAML install takes no values (${unknown.join(', ')})`);
  const manifest = withoutExec
    ? [fs.readFileSync(path.join(REPO, 'operator/deploy/namespace.yaml'), 'utf8'), fs.readFileSync(path.join(REPO, 'operator/deploy/operator-without-exec.yaml'), 'utf8')].join('\n---\n')
    : fs.readFileSync(path.join(REPO, 'operator/install.yaml'), 'utf8');
  if (withoutExec) installCrds();
  const applied = kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], withTestImages(manifest));
  if (applied.status !== 0) throw new Error(`kubectl apply of the plain YAML failed:\n${applied.out}`);
  const rollout = kubectl(['rollout', 'status', 'deployment/eventdb-operator', '-n', 'eventdb-system', '--timeout=180s'], undefined, 200_000);
  if (rollout.status !== 0) throw new Error(`the plain-YAML operator did not roll out:\n${rollout.out}\n${kubectl(['get', 'pods,events', '-n', 'eventdb-system']).out}`);
  await waitFor('the plain-YAML operator to hold its Lease', async () => await leaseHolder('eventdb-system', 'eventdb-operator'), 120_000, 1000);
  return inClusterOperator('yaml', 'eventdb-system', 'eventdb-operator', async () => {
    kubectl(['delete', '-f', path.join(REPO, withoutExec ? 'operator/deploy/operator-without-exec.yaml' : 'operator/deploy/operator.yaml'), '--ignore-not-found', '--wait=true'], undefined, 200_000);
    await deleteNamespace('eventdb-system');
  });
}

/** `kubectl apply` of an EventDBCluster; returns kubectl's result (a rejected spec is status 1). */
export function applyCluster(namespace: string, name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}): { status: number; out: string } {
  const document = { apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name, namespace, annotations }, spec };
  return kubectl(['apply', '-f', '-'], stringify(document));
}

export async function getCluster(namespace: string, name: string): Promise<ClusterObject | undefined> {
  return await api().get<ClusterObject>(`/apis/eventdb.io/v1alpha1/namespaces/${namespace}/eventdbclusters/${name}`);
}

export async function patchCluster(namespace: string, name: string, patch: unknown): Promise<void> {
  await api().call('PATCH', `/apis/eventdb.io/v1alpha1/namespaces/${namespace}/eventdbclusters/${name}`, patch, { patch: 'merge' });
}

export function readyCondition(cluster: ClusterObject | undefined): { status: string; reason: string; message: string; observedGeneration?: number } | undefined {
  return cluster?.status?.conditions?.find((condition) => condition.type === 'Ready');
}

/** Until the cluster is Ready for its current generation (what `kubectl wait --for=condition=Ready` sees). */
export async function waitClusterReady(namespace: string, name: string, timeoutMs = 300_000): Promise<ClusterObject> {
  let last: ClusterObject | undefined;
  try {
    return await waitFor(`EventDBCluster ${namespace}/${name} Ready`, async () => {
      last = await getCluster(namespace, name);
      const ready = readyCondition(last);
      return ready?.status === 'True' && ready.observedGeneration === last?.metadata.generation && last?.status?.operation === undefined ? last : undefined;
    }, timeoutMs, 1000);
  } catch (err: unknown) {
    throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}\n${kubectl(['get', 'pods,events', '-n', namespace]).out}`);
  }
}

/** The Secret value the operator generated or the user gave. */
export async function secretValue(namespace: string, name: string, key: string): Promise<string> {
  const secret = await api().get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${namespace}/secrets/${name}`);
  const value = secret?.data?.[key];
  if (value === undefined) throw new Error(`secret ${namespace}/${name} has no key ${key}`);
  return Buffer.from(value, 'base64').toString('utf8');
}

export interface PodSnapshot {
  readonly name: string;
  readonly uid: string;
  readonly image: string;
  readonly role: string | undefined;
}

export async function clusterPods(namespace: string, cluster: string): Promise<PodSnapshot[]> {
  const list = await api().get<{ items: { metadata: { name: string; uid: string; labels?: Record<string, string> }; spec: { containers: { image: string }[] } }[] }>(
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`eventdb.io/cluster=${cluster}`)}`,
  );
  return (list?.items ?? [])
    .map((pod) => ({ name: pod.metadata.name, uid: pod.metadata.uid, image: pod.spec.containers[0]?.image ?? '', role: pod.metadata.labels?.['eventdb.io/role'] }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Runs `script` (Node.js, with global fetch) in a pod of the node image inside the cluster, with
 * the admin credentials in EVENTDB_AUTH, and returns its log. The pod is removed afterwards.
 */
export async function runInCluster(namespace: string, name: string, script: string, env: Record<string, string> = {}, timeoutMs = 300_000, cluster = 'orders', trustSecret?: string): Promise<string> {
  const trust = trustClusterCa(cluster, trustSecret);
  const { pod, log } = await runScriptPod(namespace, name, script, { ...env, ...trust.env }, { timeoutMs, volumes: trust.volumes, volumeMounts: trust.volumeMounts });
  await api().call('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, { gracePeriodSeconds: 0 }, { ok: [404] });
  if (pod.status?.phase !== 'Succeeded') throw new Error(`script pod ${name} failed:\n${log}`);
  return log;
}

/**
 * What a script pod needs to speak https to the nodes of `cluster`: its CA (`ca.crt` of the
 * operator's `<cluster>-node-tls` Secret, optional so a cluster without TLS still works) added
 * to Node's trusted roots, which the global fetch uses.
 */
export function trustClusterCa(cluster: string, trustSecret = `${cluster}-node-tls`): { env: Record<string, string>; volumes: unknown[]; volumeMounts: unknown[] } {
  return {
    env: { NODE_EXTRA_CA_CERTS: '/etc/eventdb-ca/ca.crt' },
    volumes: [{ name: 'cluster-ca', secret: { secretName: trustSecret, optional: true, items: [{ key: 'ca.crt', path: 'ca.crt' }] } }],
    volumeMounts: [{ name: 'cluster-ca', mountPath: '/etc/eventdb-ca', readOnly: true }],
  };
}

/** Tags the node image under another name and loads it into the kind cluster (an "image change"). */
export function tagNodeImage(tag: string): string {
  const engine = run('sh', ['-c', 'command -v docker >/dev/null && docker info >/dev/null 2>&1 && echo docker || echo podman']).out.trim();
  const source = `docker.io/library/${ctx().image}`;
  // A tag of its own per source image: the image store may be shared with other checkouts.
  const [name, sourceTag] = ctx().image.split(':');
  const newTag = `${sourceTag ?? 'latest'}-${tag}`;
  const target = `docker.io/library/${name}:${newTag}`;
  const archive = path.join(REPO, `.local/k8s/images/eventdb-${newTag}.tar`);
  // podman cannot save into an existing docker-archive
  fs.rmSync(archive, { force: true });
  for (const [command, args] of [
    [engine, ['tag', source, target]],
    [engine, ['save', '-o', archive, target]],
    [path.join(REPO, 'test/k8s/cluster.sh'), ['load', archive]],
  ] as const) {
    const result = spawnSync(command, [...args], { encoding: 'utf8', timeout: 300_000 });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  }
  fs.rmSync(archive, { force: true });
  return `${name}:${newTag}`;
}

export { sleep };

/**
 * A script for runInCluster: appends one event `{ n }` to `stream` through `writeUrl` (201
 * expected), then reads event 0 of the stream back through every URL of `readUrls`, and prints
 * one JSON line: { written, reads: { <url>: <data or error> } }.
 */
export function writeThenReadScript(options: { writeUrl: string; readUrls: string[]; stream: string; n: number }): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const options = ${JSON.stringify(options)};
  const out = { written: 0, reads: {} };
  for (let attempt = 0; attempt < 30; attempt++) {
    try {
      const response = await fetch(options.writeUrl + '/streams/' + options.stream, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json', 'es-eventtype': 'probe', 'es-eventid': crypto.randomUUID() },
        body: JSON.stringify({ n: options.n }),
      });
      out.written = response.status;
      if (response.status === 201) break;
    } catch (err) { out.written = String(err); }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  // A read that cannot connect (a Service whose endpoints trail a restarted pod by a moment) or
  // meets a node not ready yet (503) is tried again; any other answer is the result.
  for (const url of options.readUrls) {
    for (let attempt = 0; attempt < 30; attempt++) {
      try {
        const response = await fetch(url + '/streams/' + options.stream + '/0', { headers: { authorization: auth, accept: 'application/json' } });
        out.reads[url] = response.status === 200 ? await response.json() : 'HTTP ' + response.status;
        if (response.status !== 503) break;
      } catch (err) { out.reads[url] = String(err); }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  console.log(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

/** The last JSON line a script printed. */
export function lastJsonLine<T>(log: string): T {
  const line = log.trim().split('\n').filter((entry) => entry.startsWith('{')).at(-1);
  if (line === undefined) throw new Error(`no JSON in the script's log:\n${log}`);
  return JSON.parse(line) as T;
}

export interface WritersSummary {
  /** Writes acknowledged (201) by the cluster. */
  readonly acked: number;
  /** Attempts that failed (refused, timed out, connection lost), retried with the same event id. */
  readonly failedAttempts: number;
  /** Longest time no writer got an acknowledgement, in ms (write unavailability). */
  readonly maxGapMs: number;
  /** When the longest gap began (ms since epoch). */
  readonly maxGapAtMs: number;
  readonly elapsedMs: number;
  /** Per read URL: acknowledged events not found at their number with their data. */
  readonly missing: Record<string, number>;
  readonly firstError?: string;
}

/**
 * A pod of the node image in the cluster running `writers` concurrent writers, each appending
 * `{ w, i }` events to its own stream through `writeUrl` until /tmp/stop exists (or
 * `maxDurationMs`). A failed attempt is retried with the same event id. Then it reads every
 * acknowledged event back through each of `readUrls` and prints a WritersSummary.
 */
export async function startWriters(namespace: string, options: { name: string; writeUrl: string; readUrls: string[]; writers: number; password: string; maxDurationMs?: number; cluster?: string; trustSecret?: string }): Promise<{ stop(): Promise<WritersSummary> }> {
  const trust = trustClusterCa(options.cluster ?? 'orders', options.trustSecret);
  const script = `
const fs = require('node:fs');
const options = ${JSON.stringify({ ...options, password: undefined, trustSecret: undefined, maxDurationMs: options.maxDurationMs ?? 900_000 })};
const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
const started = Date.now();
let lastAck = Date.now(), maxGapMs = 0, maxGapAtMs = 0, acked = 0, failedAttempts = 0, firstError;
const ackedByStream = {};
const stopping = () => fs.existsSync('/tmp/stop') || Date.now() - started > options.maxDurationMs;
async function writer(w) {
  const stream = 'writer-' + w + '-' + started;
  ackedByStream[stream] = [];
  for (let i = 0; !stopping(); i++) {
    const id = crypto.randomUUID();
    for (;;) {
      if (stopping()) return;
      try {
        const response = await fetch(options.writeUrl + '/streams/' + stream, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/json', 'es-eventtype': 'w', 'es-eventid': id },
          body: JSON.stringify({ w, i }),
          signal: AbortSignal.timeout(10000),
        });
        await response.arrayBuffer();
        if (response.status === 201) {
          const now = Date.now();
          if (now - lastAck > maxGapMs) { maxGapMs = now - lastAck; maxGapAtMs = lastAck; }
          lastAck = now;
          acked++;
          const number = Number((response.headers.get('location') || '').split('/').pop());
          ackedByStream[stream].push([number, i]);
          break;
        }
        failedAttempts++;
        firstError = firstError || 'HTTP ' + response.status;
      } catch (err) {
        failedAttempts++;
        firstError = firstError || String(err);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
async function readBack(url) {
  let missing = 0;
  for (const [stream, events] of Object.entries(ackedByStream)) {
    const found = new Map();
    for (let from = 0; from <= (events.at(-1)?.[0] ?? -1); from += 500) {
      const response = await fetch(url + '/streams/' + stream + '/' + from + '/forward/500?embed=body', { headers: { authorization: auth, accept: 'application/vnd.eventstore.atom+json' } });
      if (response.status !== 200) break;
      for (const entry of (await response.json()).entries || []) found.set(entry.eventNumber, JSON.parse(entry.data).i);
    }
    for (const [number, i] of events) if (found.get(number) !== i) missing++;
  }
  return missing;
}
(async () => {
  await Promise.all(Array.from({ length: options.writers }, (_, w) => writer(w)));
  const now = Date.now();
  if (now - lastAck > maxGapMs) { maxGapMs = now - lastAck; maxGapAtMs = lastAck; }
  const missing = {};
  for (const url of options.readUrls) missing[url] = await readBack(url);
  console.log(JSON.stringify({ acked, failedAttempts, maxGapMs, maxGapAtMs, elapsedMs: now - started, missing, firstError }));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
  await api().call('POST', `/api/v1/namespaces/${namespace}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'writers',
          image: ctx().image,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '-e', script],
          env: [{ name: 'EVENTDB_PASSWORD', value: options.password }, ...Object.entries(trust.env).map(([name, value]) => ({ name, value }))],
          volumeMounts: trust.volumeMounts,
        },
      ],
      volumes: trust.volumes,
    },
  });
  await waitFor(`writers pod ${options.name} running`, async () => (await api().get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${namespace}/pods/${options.name}`))?.status?.phase === 'Running', 120_000);
  return {
    async stop(): Promise<WritersSummary> {
      kubectl(['exec', '-n', namespace, options.name, '--', 'touch', '/tmp/stop']);
      await waitFor(`writers pod ${options.name} done`, async () => {
        const phase = (await api().get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${namespace}/pods/${options.name}`))?.status?.phase;
        return phase === 'Succeeded' || phase === 'Failed';
      }, 600_000, 1000);
      const log = (await api().call('GET', `/api/v1/namespaces/${namespace}/pods/${options.name}/log`)).text;
      return lastJsonLine<WritersSummary>(log);
    },
  };
}

export interface BackupObject {
  metadata: { name: string };
  spec: Record<string, unknown>;
  status?: {
    phase?: string;
    sourcePod?: string;
    sourceRole?: string;
    writerCheckpoint?: number;
    snapshots?: { volume: string; name: string; readyToUse?: boolean }[];
    path?: string;
    differentialFrom?: string;
    message?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

export function applyBackup(namespace: string, name: string, spec: Record<string, unknown>): void {
  const document = { apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name, namespace }, spec };
  const result = kubectl(['apply', '-f', '-'], JSON.stringify(document));
  if (result.status !== 0) throw new Error(`kubectl apply of Backup ${name} failed:\n${result.out}`);
}

export async function getBackup(namespace: string, name: string): Promise<BackupObject | undefined> {
  return await api().get<BackupObject>(`/apis/eventdb.io/v1alpha1/namespaces/${namespace}/backups/${name}`);
}

/** Waits for a Backup's phase Completed (a Failed one throws with its message). */
export async function waitBackupCompleted(namespace: string, name: string, timeoutMs = 240_000): Promise<BackupObject> {
  let last: BackupObject | undefined;
  try {
    return await waitFor(`Backup ${name} Completed`, async () => {
      last = await getBackup(namespace, name);
      if (last?.status?.phase === 'Failed') throw new Error(`Backup ${name} failed: ${last.status.message ?? ''}`);
      return last?.status?.phase === 'Completed' ? last : undefined;
    }, timeoutMs, 1000);
  } catch (err: unknown) {
    throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status)}\n${kubectl(['get', 'pods,jobs,volumesnapshots,events', '-n', namespace]).out}`);
  }
}

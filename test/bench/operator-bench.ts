/**
 * Operator figures (`make bench`, section `operator`), on the kind cluster of this checkout (or
 * the cluster in $KUBECONFIG) with the images loaded (`make k8s-up images`):
 *
 * - time from `kubectl apply` of a 3-node EventDBCluster to Ready (a cluster that never forms
 *   fails the section: there is no fall-back to one node);
 * - a rolling update (a configuration change): total time and time per node;
 * - write unavailability during it: the longest time 16 writers in the cluster, appending
 *   through `<cluster>-leader`, saw no acknowledgement.
 *
 * The operator runs as a local process from dist/ (the same code as its image). Without a
 * cluster the section is skipped, and says so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

import type { BenchMetric, BenchSection } from './bench-types.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), import.meta.dirname.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..');
const OPERATOR_MAIN = path.join(REPO, 'dist/operator/src/main.js');
const KUBECTL = existsSync(path.join(REPO, '.local/k8s/bin/kubectl')) ? path.join(REPO, '.local/k8s/bin/kubectl') : 'kubectl';
const IMAGE = process.env['EVENTDB_K8S_IMAGE'] ?? 'eventdb:dev';

function kubeconfig(): string | undefined {
  if (process.env['KUBECONFIG'] !== undefined) return process.env['KUBECONFIG'];
  const local = path.join(REPO, '.local/k8s/kubeconfig');
  const running = spawnSync(path.join(REPO, 'test/k8s/cluster.sh'), ['status'], { stdio: 'ignore' }).status === 0;
  return running && existsSync(local) ? local : undefined;
}

function kubectl(config: string, args: string[], input?: string): string {
  const result = spawnSync(KUBECTL, ['--kubeconfig', config, ...args], { encoding: 'utf8', input, timeout: 300_000 });
  if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Status {
  phase?: string;
  operation?: unknown;
  lastOperation?: { id: string; finishedAt: string };
  conditions?: { type: string; status: string; reason: string; observedGeneration?: number }[];
}

function clusterState(config: string, namespace: string, name: string): { generation: number; status: Status } {
  const object = JSON.parse(kubectl(config, ['get', 'edb', name, '-n', namespace, '-o', 'json'])) as { metadata: { generation: number }; status?: Status };
  return { generation: object.metadata.generation, status: object.status ?? {} };
}

async function waitReady(config: string, namespace: string, name: string, timeoutMs: number): Promise<'ready' | 'no-cluster' | 'timeout'> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { generation, status } = clusterState(config, namespace, name);
    const ready = status.conditions?.find((condition) => condition.type === 'Ready');
    if (ready?.status === 'True' && ready.observedGeneration === generation && status.operation === undefined) return 'ready';
    if (ready?.reason === 'ClusteringUnsupported') return 'no-cluster';
    await sleep(500);
  }
  return 'timeout';
}

function applyCluster(config: string, namespace: string, name: string, replicas: number): void {
  const spec = { replicas, storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '50m', memory: '128Mi' } } };
  kubectl(config, ['apply', '-f', '-'], stringify({ apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name, namespace }, spec }));
}

function startOperator(config: string, namespace: string): ChildProcess {
  return spawn(process.execPath, [OPERATOR_MAIN], {
    env: { PATH: process.env['PATH'] ?? '', KUBECONFIG: config, WATCH_NAMESPACES: namespace, LEADER_ELECTION: 'false', PROBE_ADDRESS: '127.0.0.1:0', DEFAULT_NODE_IMAGE: IMAGE, LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
}

/** 16 writers in a pod, through <cluster>-leader, until /tmp/stop; prints the longest gap. */
function writersPod(namespace: string, cluster: string, password: string): string {
  const script = `
const fs = require('node:fs');
const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
let last = Date.now(), maxGapMs = 0, acked = 0;
async function writer(w) {
  for (let i = 0; !fs.existsSync('/tmp/stop'); i++) {
    const id = crypto.randomUUID();
    while (!fs.existsSync('/tmp/stop')) {
      try {
        const r = await fetch('http://${cluster}-leader:2113/streams/bench-' + w, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json', 'es-eventtype': 'w', 'es-eventid': id }, body: JSON.stringify({ i }), signal: AbortSignal.timeout(10000) });
        await r.arrayBuffer();
        if (r.status === 201) { const now = Date.now(); maxGapMs = Math.max(maxGapMs, now - last); last = now; acked++; break; }
      } catch {}
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
Promise.all(Array.from({ length: 16 }, (_, w) => writer(w))).then(() => console.log(JSON.stringify({ acked, maxGapMs })));
`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'bench-writers', namespace },
    spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 1, containers: [{ name: 'w', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['node', '-e', script], env: [{ name: 'EVENTDB_PASSWORD', value: password }] }] },
  });
}

async function rollingUpdate(config: string, namespace: string, name: string, nodes: number): Promise<BenchMetric[]> {
  const password = Buffer.from(kubectl(config, ['get', 'secret', `${name}-admin`, '-n', namespace, '-o', 'jsonpath={.data.password}']), 'base64').toString();
  kubectl(config, ['apply', '-f', '-'], writersPod(namespace, name, password));
  kubectl(config, ['wait', '--for=condition=Ready', 'pod/bench-writers', '-n', namespace, '--timeout=120s']);
  await sleep(5000);
  const startedAtMs = Date.now();
  kubectl(config, ['patch', 'edb', name, '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { configuration: { MaxMemTableSize: 12345 } } })]);
  await sleep(3000);
  const outcome = await waitReady(config, namespace, name, 900_000);
  const totalSeconds = (Date.now() - startedAtMs) / 1000;
  await sleep(3000);
  kubectl(config, ['exec', '-n', namespace, 'bench-writers', '--', 'touch', '/tmp/stop']);
  kubectl(config, ['wait', '--for=jsonpath={.status.phase}=Succeeded', 'pod/bench-writers', '-n', namespace, '--timeout=120s']);
  const summary = JSON.parse(kubectl(config, ['logs', 'bench-writers', '-n', namespace]).trim().split('\n').at(-1) ?? '{}') as { acked: number; maxGapMs: number };
  kubectl(config, ['delete', 'pod', 'bench-writers', '-n', namespace, '--wait=false']);
  if (outcome !== 'ready') throw new Error(`the rolling update did not finish: ${outcome}`);
  return [
    { name: `rolling update, ${nodes} node(s), total`, value: Number(totalSeconds.toFixed(1)), unit: 's', lowerIsBetter: true },
    { name: `rolling update, ${nodes} node(s), per node`, value: Number((totalSeconds / nodes).toFixed(1)), unit: 's', lowerIsBetter: true },
    { name: `write unavailability during it (longest gap, 16 writers, ${summary.acked} acked)`, value: summary.maxGapMs, unit: 'ms', lowerIsBetter: true },
  ];
}

export async function run(): Promise<BenchSection> {
  const config = kubeconfig();
  if (config === undefined) return { name: 'operator', metrics: [], notes: ['section skipped: no kind cluster of this checkout runs and KUBECONFIG is not set (make k8s-up images)'] };
  if (!existsSync(OPERATOR_MAIN)) return { name: 'operator', metrics: [], notes: ['section skipped: dist/operator is missing (make build)'] };
  const namespace = `edb-bench-${process.pid}`;
  const notes: string[] = [`cluster ${config}, node image ${IMAGE}, operator as a local process (port-forwards to the nodes)`];
  const metrics: BenchMetric[] = [];
  kubectl(config, ['apply', '--server-side', '--force-conflicts', '-f', path.join(REPO, 'crds')]);
  kubectl(config, ['create', 'namespace', namespace]);
  const operator = startOperator(config, namespace);
  try {
    await sleep(3000);
    const nodes = 3;
    const startedAtMs = Date.now();
    applyCluster(config, namespace, 'bench', nodes);
    const outcome = await waitReady(config, namespace, 'bench', 600_000);
    if (outcome !== 'ready') throw new Error(`the ${nodes}-node cluster did not become Ready (${outcome})`);
    metrics.push({ name: `apply to Ready, ${nodes} node(s)`, value: Number(((Date.now() - startedAtMs) / 1000).toFixed(1)), unit: 's', lowerIsBetter: true });
    metrics.push(...(await rollingUpdate(config, namespace, 'bench', nodes)));
  } finally {
    operator.kill('SIGTERM');
    spawnSync(KUBECTL, ['--kubeconfig', config, 'delete', 'namespace', namespace, '--wait=true', '--timeout=300s'], { stdio: 'ignore' });
  }
  return { name: 'operator', metrics, notes };
}

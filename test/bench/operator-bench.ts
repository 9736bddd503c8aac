/**
 * Operator figures (`make bench`, section `operator`), on the kind cluster of this checkout (or
 * the cluster in $KUBECONFIG) with the images loaded (`make k8s-up images`):
 *
 * - time from `kubectl apply` of a 3-node EventDBCluster to Ready (a cluster that never forms
 *   fails the section: there is no fall-back to one node);
 * - a rolling update (a configuration change): total time and time per node;
 * - write unavailability during it: the longest time 16 writers in the cluster, appending
 *   through `<cluster>-leader` over https, saw no acknowledgement;
 * - certificate rotation (issue 22) under the same write load, for tls.reload Signal and
 *   Endpoint: the CA Secret first trusts a new CA as well, then the certificate Secret is
 *   replaced by one of that new CA with another common name; measured from the Secret update
 *   (before kubectl starts) to the start of the reload (status.certificates.rotation.startedAt)
 *   and to the last verified node (its finishedAt), with the writers' failed attempts;
 * - the same delays with the operator's Secret watch off (WATCH_SECRETS=false: Secrets only read
 *   at each reconcile, as before the watch), three rotations after an operator restart.
 *
 * The cluster serves TLS with a certificate and CA Secret of the bench's own (tls.mode Secret).
 * The operator runs as a local process from dist/ (the same code as its image). Without a
 * cluster the section is skipped, and says so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

import { rotationTarget } from '../../operator/src/controllers/eventdbcluster/certificate-rotation.js';
import { nodeCertificateNames } from '../../operator/src/resources/secrets.js';
import { createCertificateAuthority, createSignedCertificate, type KeyPairPem } from '../../operator/src/resources/tls/certificate.js';
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
  certificates?: { secretHash?: string; rotation?: { secretHash: string; startedAt: string; finishedAt?: string; seconds?: number } };
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

const CLUSTER_TLS = { mode: 'Secret', certificateSecret: { name: 'bench-tls' }, caSecret: { name: 'bench-ca' }, reservedNodeCommonName: '*.eventdb.test', reload: 'Signal' };

function applyCluster(config: string, namespace: string, name: string, replicas: number): void {
  const spec = { replicas, storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '50m', memory: '128Mi' } }, tls: CLUSTER_TLS };
  kubectl(config, ['apply', '-f', '-'], stringify({ apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name, namespace }, spec }));
}

/** Creates or replaces a Secret whole. */
function putSecret(config: string, namespace: string, name: string, type: string, data: Record<string, string>): void {
  const document = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type, data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')])) };
  const exists = spawnSync(KUBECTL, ['--kubeconfig', config, 'get', 'secret', name, '-n', namespace], { stdio: 'ignore' }).status === 0;
  kubectl(config, [exists ? 'replace' : 'create', '-f', '-'], JSON.stringify(document));
}

function startOperator(config: string, namespace: string, env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [OPERATOR_MAIN], {
    env: { PATH: process.env['PATH'] ?? '', KUBECONFIG: config, WATCH_NAMESPACES: namespace, LEADER_ELECTION: 'false', PROBE_ADDRESS: '127.0.0.1:0', DEFAULT_NODE_IMAGE: IMAGE, LOG_LEVEL: 'warn', ...env },
    stdio: 'ignore',
  });
}

async function stopOperator(operator: ChildProcess): Promise<void> {
  if (operator.exitCode !== null) return;
  const exited = new Promise((resolve) => operator.once('exit', resolve));
  operator.kill('SIGTERM');
  await Promise.race([exited, sleep(15_000)]);
}

/** 16 writers in a pod, over https through <cluster>-leader, until /tmp/stop; prints acked, failed attempts and the longest gap. */
function writersPod(namespace: string, cluster: string, password: string): string {
  const script = `
const fs = require('node:fs');
const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
let last = Date.now(), maxGapMs = 0, acked = 0, failed = 0, firstError;
async function writer(w) {
  for (let i = 0; !fs.existsSync('/tmp/stop'); i++) {
    const id = crypto.randomUUID();
    while (!fs.existsSync('/tmp/stop')) {
      try {
        const r = await fetch('https://${cluster}-leader:2113/streams/bench-' + w, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json', 'es-eventtype': 'w', 'es-eventid': id }, body: JSON.stringify({ i }), signal: AbortSignal.timeout(10000) });
        await r.arrayBuffer();
        if (r.status === 201) { const now = Date.now(); maxGapMs = Math.max(maxGapMs, now - last); last = now; acked++; break; }
        failed++; firstError = firstError || 'HTTP ' + r.status;
      } catch (err) { failed++; firstError = firstError || String(err && err.cause || err); }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
Promise.all(Array.from({ length: 16 }, (_, w) => writer(w))).then(() => console.log(JSON.stringify({ acked, failed, maxGapMs, firstError })));
`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'bench-writers', namespace },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'w',
        image: IMAGE,
        imagePullPolicy: 'IfNotPresent',
        command: ['node', '-e', script],
        env: [{ name: 'EVENTDB_PASSWORD', value: password }, { name: 'NODE_EXTRA_CA_CERTS', value: '/etc/bench-ca/ca.crt' }],
        volumeMounts: [{ name: 'trust', mountPath: '/etc/bench-ca', readOnly: true }],
      }],
      volumes: [{ name: 'trust', secret: { secretName: 'bench-client-trust' } }],
    },
  });
}

interface WritersSummary { acked: number; failed: number; maxGapMs: number; firstError?: string }

async function startWriters(config: string, namespace: string, name: string): Promise<() => Promise<WritersSummary>> {
  const password = Buffer.from(kubectl(config, ['get', 'secret', `${name}-admin`, '-n', namespace, '-o', 'jsonpath={.data.password}']), 'base64').toString();
  kubectl(config, ['apply', '-f', '-'], writersPod(namespace, name, password));
  kubectl(config, ['wait', '--for=condition=Ready', 'pod/bench-writers', '-n', namespace, '--timeout=120s']);
  await sleep(5000);
  return async () => {
    kubectl(config, ['exec', '-n', namespace, 'bench-writers', '--', 'touch', '/tmp/stop']);
    kubectl(config, ['wait', '--for=jsonpath={.status.phase}=Succeeded', 'pod/bench-writers', '-n', namespace, '--timeout=120s']);
    const summary = JSON.parse(kubectl(config, ['logs', 'bench-writers', '-n', namespace]).trim().split('\n').at(-1) ?? '{}') as WritersSummary;
    kubectl(config, ['delete', 'pod', 'bench-writers', '-n', namespace, '--wait=true', '--timeout=60s']);
    return summary;
  };
}

async function rollingUpdate(config: string, namespace: string, name: string, nodes: number): Promise<BenchMetric[]> {
  const stopWriters = await startWriters(config, namespace, name);
  const startedAtMs = Date.now();
  kubectl(config, ['patch', 'edb', name, '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { configuration: { MaxMemTableSize: 12345 } } })]);
  await sleep(3000);
  const outcome = await waitReady(config, namespace, name, 900_000);
  const totalSeconds = (Date.now() - startedAtMs) / 1000;
  await sleep(3000);
  const summary = await stopWriters();
  if (outcome !== 'ready') throw new Error(`the rolling update did not finish: ${outcome}`);
  if (summary.acked === 0) throw new Error(`the writers never got a write acknowledged (${summary.firstError ?? 'no error'})`);
  return [
    { name: `rolling update, ${nodes} node(s), total`, value: Number(totalSeconds.toFixed(1)), unit: 's', lowerIsBetter: true },
    { name: `rolling update, ${nodes} node(s), per node`, value: Number((totalSeconds / nodes).toFixed(1)), unit: 's', lowerIsBetter: true },
    { name: `write unavailability during it (longest gap, 16 writers, ${summary.acked} acked)`, value: summary.maxGapMs, unit: 'ms', lowerIsBetter: true },
  ];
}

const nowMs = Date.now();
const leafOf = (namespace: string, ca: KeyPairPem, commonName: string): KeyPairPem =>
  createSignedCertificate({ commonName, subjectAltNames: nodeCertificateNames({ name: 'bench', namespace, uid: '' }), validityDays: 2, nowMs }, ca);
const hashOf = (leaf: KeyPairPem, cas: KeyPairPem[]): string => rotationTarget(leaf.certificatePem, leaf.privateKeyPem, cas.map((ca) => ca.certificatePem))?.hash ?? '';

/** Waits until status.certificates.rotation reached `hash` and finished; its start and end. */
async function waitRotation(config: string, namespace: string, hash: string, timeoutMs = 300_000): Promise<{ startedAtMs: number; finishedAtMs: number; seconds: number | undefined }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const rotation = clusterState(config, namespace, 'bench').status.certificates?.rotation;
    if (rotation?.secretHash === hash && rotation.finishedAt !== undefined) return { startedAtMs: Date.parse(rotation.startedAt), finishedAtMs: Date.parse(rotation.finishedAt), seconds: rotation.seconds };
    await sleep(250);
  }
  throw new Error(`no finished certificate rotation to ${hash} within ${timeoutMs / 1000} s`);
}

interface RotationFigures { startDelaySeconds: number; totalSeconds: number; operatorSeconds: number | undefined }

/** Replaces the certificate Secret by `leaf`; seconds from just before the update to the reload's start and to the last verified node. */
async function rotateTo(config: string, namespace: string, leaf: KeyPairPem, cas: KeyPairPem[]): Promise<RotationFigures> {
  const changedAtMs = Date.now();
  putSecret(config, namespace, 'bench-tls', 'kubernetes.io/tls', { 'tls.crt': leaf.certificatePem, 'tls.key': leaf.privateKeyPem });
  const done = await waitRotation(config, namespace, hashOf(leaf, cas));
  return { startDelaySeconds: (done.startedAtMs - changedAtMs) / 1000, totalSeconds: (done.finishedAtMs - changedAtMs) / 1000, operatorSeconds: done.seconds };
}

/** The CA Secret trusts `cas`; waits until every node was verified with them. */
async function trustCas(config: string, namespace: string, leaf: KeyPairPem, cas: KeyPairPem[]): Promise<void> {
  putSecret(config, namespace, 'bench-ca', 'Opaque', Object.fromEntries(cas.map((ca, index) => [`ca-${index}.crt`, ca.certificatePem])));
  await waitRotation(config, namespace, hashOf(leaf, cas));
}

const round = (value: number): number => Number(value.toFixed(1));

/**
 * Signal then Endpoint, each a CA migration: trust old and new CA, replace the certificate by one
 * of the new CA with another common name (measured, under 16 writers), drop the old CA.
 */
async function certificateRotations(config: string, namespace: string, cas: KeyPairPem[], first: KeyPairPem): Promise<{ metrics: BenchMetric[]; notes: string[]; leaf: KeyPairPem }> {
  const metrics: BenchMetric[] = [];
  const notes: string[] = [];
  let leaf = first;
  for (const [index, method] of (['Signal', 'Endpoint'] as const).entries()) {
    const from = cas[index] as KeyPairPem;
    const to = cas[index + 1] as KeyPairPem;
    kubectl(config, ['patch', 'edb', 'bench', '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { tls: { reload: method } } })]);
    await trustCas(config, namespace, leaf, [from, to]);
    const next = leafOf(namespace, to, `bench-${method.toLowerCase()}.eventdb.test`);
    const stopWriters = await startWriters(config, namespace, 'bench');
    const figures = await rotateTo(config, namespace, next, [from, to]);
    await sleep(2000);
    const writes = await stopWriters();
    leaf = next;
    await trustCas(config, namespace, leaf, [to]);
    metrics.push(
      { name: `certificate rotation, ${method}, 3 nodes: Secret update to the last verified node`, value: round(figures.totalSeconds), unit: 's', lowerIsBetter: true },
      { name: `certificate rotation, ${method}: Secret update to the start of the reload (Secret watch)`, value: round(figures.startDelaySeconds), unit: 's', lowerIsBetter: true },
      { name: `certificate rotation, ${method}: failed write attempts (16 writers, ${writes.acked} acked)`, value: writes.failed, unit: 'writes', lowerIsBetter: true },
    );
    notes.push(`rotation ${method}: operator's own figure ${figures.operatorSeconds ?? '?'} s (from the Secret's write time, to the second); writers' longest gap ${writes.maxGapMs} ms${writes.firstError === undefined ? '' : `, first error ${writes.firstError}`}`);
  }
  return { metrics, notes, leaf };
}

export async function run(): Promise<BenchSection> {
  const config = kubeconfig();
  if (config === undefined) return { name: 'operator', metrics: [], notes: ['section skipped: no kind cluster of this checkout runs and KUBECONFIG is not set (make k8s-up images)'] };
  if (!existsSync(OPERATOR_MAIN)) return { name: 'operator', metrics: [], notes: ['section skipped: dist/operator is missing (make build)'] };
  const namespace = `edb-bench-${process.pid}`;
  const notes: string[] = [`cluster ${config}, node image ${IMAGE}, operator as a local process (port-forwards to the nodes), tls.mode Secret`];
  const metrics: BenchMetric[] = [];
  kubectl(config, ['apply', '--server-side', '--force-conflicts', '-f', path.join(REPO, 'crds')]);
  kubectl(config, ['create', 'namespace', namespace]);
  const cas = ['One', 'Two', 'Three'].map((name) => createCertificateAuthority({ commonName: `Bench CA ${name}`, validityDays: 2, nowMs }));
  const first = leafOf(namespace, cas[0] as KeyPairPem, 'bench-first.eventdb.test');
  putSecret(config, namespace, 'bench-tls', 'kubernetes.io/tls', { 'tls.crt': first.certificatePem, 'tls.key': first.privateKeyPem });
  putSecret(config, namespace, 'bench-ca', 'Opaque', { 'ca.crt': (cas[0] as KeyPairPem).certificatePem });
  putSecret(config, namespace, 'bench-client-trust', 'Opaque', { 'ca.crt': cas.map((ca) => ca.certificatePem).join('') });
  let operator = startOperator(config, namespace);
  try {
    await sleep(3000);
    const nodes = 3;
    const startedAtMs = Date.now();
    applyCluster(config, namespace, 'bench', nodes);
    const outcome = await waitReady(config, namespace, 'bench', 600_000);
    if (outcome !== 'ready') throw new Error(`the ${nodes}-node cluster did not become Ready (${outcome})`);
    metrics.push({ name: `apply to Ready, ${nodes} node(s)`, value: Number(((Date.now() - startedAtMs) / 1000).toFixed(1)), unit: 's', lowerIsBetter: true });
    metrics.push(...(await rollingUpdate(config, namespace, 'bench', nodes)));
    const rotations = await certificateRotations(config, namespace, cas, first);
    metrics.push(...rotations.metrics);
    notes.push(...rotations.notes);
    // Before the Secret watch: the operator restarted without it, Secrets read at each reconcile.
    await stopOperator(operator);
    operator = startOperator(config, namespace, { WATCH_SECRETS: 'false' });
    await sleep(5000);
    const last = cas[2] as KeyPairPem;
    const delays: number[] = [];
    const totals: number[] = [];
    for (let i = 0; i < 3; i++) {
      const figures = await rotateTo(config, namespace, leafOf(namespace, last, `bench-unwatched-${i}.eventdb.test`), [last]);
      delays.push(figures.startDelaySeconds);
      totals.push(figures.totalSeconds);
      await sleep(1000 + 3000 * i);
    }
    metrics.push(
      { name: 'certificate rotation, Endpoint, Secret watch off (before): Secret update to the start of the reload, mean of 3', value: round(delays.reduce((a, b) => a + b, 0) / delays.length), unit: 's', lowerIsBetter: true },
      { name: 'certificate rotation, Endpoint, Secret watch off (before): Secret update to the last verified node, mean of 3', value: round(totals.reduce((a, b) => a + b, 0) / totals.length), unit: 's', lowerIsBetter: true },
    );
    notes.push(`Secret watch off: reload start ${delays.map((value) => value.toFixed(1)).join(', ')} s, last verified node ${totals.map((value) => value.toFixed(1)).join(', ')} s (no writers)`);
  } finally {
    await stopOperator(operator);
    spawnSync(KUBECTL, ['--kubeconfig', config, 'delete', 'namespace', namespace, '--wait=true', '--timeout=300s'], { stdio: 'ignore' });
  }
  return { name: 'operator', metrics, notes };
}

// Certificate rotation by the operator (issues 22, 27) on the kind cluster, the operator installed
// as users install it (from the chart in the cluster: two replicas, the chart's service account and
// RBAC; it reaches the nodes by pod IP and sends SIGHUP through the pods/exec API with its service
// account token): a three-node EventDBCluster with tls.mode Secret under write load
// - CA migration and a new certificate, reload by Signal: the new CA is added to the CA Secret
//   (both trusted), the certificate Secret is replaced by one of the new CA with another common
//   name, the old CA is removed; every node serves the new certificate (checked by a TLS handshake
//   from inside the cluster, not only by the operator's word), the time from the Secret update to
//   the last verified node is measured, and no write fails;
// - the same by Endpoint (POST /admin/reloadconfig), switched without restarting any pod;
// - a Secret whose key does not match its certificate: every node keeps serving the old
//   certificate, the condition and Events say which node refused and why; the operator restarted
//   meanwhile continues the rotation's failure counts from the status; a FileCopy Backup does
//   not wait for the failing rotation (it takes the cluster from it and gives it back); fixing
//   the Secret completes the rotation;
// - next to a scavenge: a ScavengeSchedule cycle (throttlePercent 1) holds the cluster and runs a
//   node scavenge when the certificate Secret changes; every node is verified while
//   status.operation stays the Scavenge (the rotation does not wait for it), the delay from the
//   Secret update to the start of the reload is printed (the Secret informer), and the cycle
//   still completes on every node;
// - self-signed mode with a 6-minute certificate renewed 4 minutes before expiry (a one-node
//   cluster): renewed and reloaded before it expires, no write fails;
// - the plain-YAML install (operator/install.yaml) in place of the chart: a Signal rotation to a
//   third CA and another common name, every node, no failed write;
// The operator restarts are deletions of its pods. EVENTDB_K8S_LOCAL_OPERATOR=1 runs a local
// process instead (debugging only).
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, create, createNamespace, ctx, deleteNamespace, kubectl, waitFor } from '../../k8s/helpers.js';
import { createCertificateAuthority, createSignedCertificate, type KeyPairPem } from '../../../operator/src/resources/tls/certificate.js';
import { nodeCertificateNames } from '../../../operator/src/resources/secrets.js';
import { rotationTarget } from '../../../operator/src/controllers/eventdbcluster/certificate-rotation.js';
import {
  applyBackup,
  applyCluster,
  clusterPods,
  getCluster,
  installCrds,
  lastJsonLine,
  patchCluster,
  runInCluster,
  secretValue,
  LOCAL_OPERATOR,
  startOperator,
  startWriters,
  waitBackupCompleted,
  waitClusterReady,
  type ClusterObject,
  type OperatorUnderTest,
  type WritersSummary,
} from './operator-support.js';

const CLUSTER = 'rot';
const nowMs = Date.now();
const caOld = createCertificateAuthority({ commonName: 'Rotation Test CA One', validityDays: 2, nowMs });
const caNew = createCertificateAuthority({ commonName: 'Rotation Test CA Two', validityDays: 2, nowMs });
const caThird = createCertificateAuthority({ commonName: 'Rotation Test CA Three', validityDays: 2, nowMs });

function leaf(ns: string, ca: KeyPairPem, commonName: string): KeyPairPem {
  return createSignedCertificate({ commonName, subjectAltNames: nodeCertificateNames({ name: CLUSTER, namespace: ns, uid: '' }), validityDays: 1, nowMs }, ca);
}

function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

function secretDocument(ns: string, name: string, type: string, data: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns },
    type,
    data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  });
}

/** Creates or replaces a Secret whole (keys not given are removed); returns when it was written. */
function putSecret(ns: string, name: string, type: string, data: Record<string, string>): number {
  const exists = kubectl(['get', 'secret', name, '-n', ns]).status === 0;
  const result = kubectl([exists ? 'replace' : 'create', '-f', '-'], secretDocument(ns, name, type, data));
  if (result.status !== 0) throw new Error(`${exists ? 'replace' : 'create'} secret ${name} failed:\n${result.out}`);
  return Date.now();
}

function putCertificate(ns: string, certificate: KeyPairPem, key = certificate.privateKeyPem): number {
  return putSecret(ns, 'rot-tls', 'kubernetes.io/tls', { 'tls.crt': certificate.certificatePem, 'tls.key': key });
}

function condition(cluster: ClusterObject | undefined, type: string): { status: string; reason: string; message: string } | undefined {
  return cluster?.status?.conditions?.find((entry) => entry.type === type);
}

/** The content hash the operator must reach for this certificate, key and CAs (its pure function). */
function hashOf(certificate: KeyPairPem, key: string, cas: KeyPairPem[]): string {
  return rotationTarget(certificate.certificatePem, key, cas.map((ca) => ca.certificatePem))?.hash ?? '';
}

/** Waits until the nodes were verified with exactly `expectedHash` (status.certificates.secretHash). */
async function waitRotated(ns: string, expectedHash: string, timeoutMs = 240_000): Promise<ClusterObject> {
  let last: ClusterObject | undefined;
  try {
    return await waitFor('the certificate rotation to be verified on every node', async () => {
      last = await getCluster(ns, CLUSTER);
      const certificates = last?.status?.certificates;
      const done = last?.status?.operation === undefined && certificates?.secretHash === expectedHash && condition(last, 'CertificatesReloaded')?.status === 'True';
      return done ? last : undefined;
    }, timeoutMs, 1000);
  } catch (err: unknown) {
    throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}\n${kubectl(['get', 'events', '-n', ns]).out}`);
  }
}

/** The fingerprint each node presents in a TLS handshake from inside the cluster, by pod. */
async function servedInCluster(ns: string, probe: string): Promise<Record<string, string>> {
  const pods = (await clusterPods(ns, CLUSTER)).map((pod) => pod.name);
  const hosts = pods.map((pod) => `${pod}.${CLUSTER}-headless.${ns}.svc`);
  const script = `
const tls = require('node:tls');
const hosts = ${JSON.stringify(hosts)};
(async () => {
  const out = {};
  for (const host of hosts) {
    out[host.split('.')[0]] = await new Promise((resolve) => {
      const socket = tls.connect({ host, port: 2113, servername: host, rejectUnauthorized: false }, () => { resolve(socket.getPeerX509Certificate().fingerprint256); socket.end(); });
      socket.on('error', (err) => resolve(String(err)));
    });
  }
  console.log(JSON.stringify(out));
})();
`;
  return lastJsonLine<Record<string, string>>(await runInCluster(ns, probe, script, {}, 120_000, CLUSTER, 'rot-client-trust'));
}

function applySchedule(ns: string, name: string, spec: Record<string, unknown>): void {
  const result = kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'eventdb.io/v1alpha1', kind: 'ScavengeSchedule', metadata: { name, namespace: ns }, spec }));
  if (result.status !== 0) throw new Error(`kubectl apply of ScavengeSchedule ${name} failed:\n${result.out}`);
}

interface ScheduleStatus {
  state?: string;
  currentCycle?: { id: string; nodes?: { pod: string; result?: string }[] };
  history?: { id: string; result: string }[];
}

async function scheduleStatus(ns: string, name: string): Promise<ScheduleStatus | undefined> {
  return (await api().get<{ status?: ScheduleStatus }>(`/apis/eventdb.io/v1alpha1/namespaces/${ns}/scavengeschedules/${name}`))?.status;
}

/** Writes `streams` streams of 20 events of 2 KB through the leader and hard-deletes all but two: garbage to scavenge. */
function garbageScript(streams: number): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const call = async (method, path, init) => {
    for (let attempt = 0; attempt < 30; attempt++) {
      try {
        const response = await fetch('https://${CLUSTER}-leader:2113' + path, { method, ...init });
        if (response.status < 500) return response.status;
      } catch {}
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return 0;
  };
  let written = 0, deleted = 0;
  for (let s = 0; s < ${streams}; s++) {
    const events = Array.from({ length: 20 }, (_, i) => ({ eventId: crypto.randomUUID(), eventType: 'filler', data: { s, i, pad: 'x'.repeat(2000) } }));
    if ((await call('POST', '/streams/garbage-' + s, { headers: { authorization: auth, 'content-type': 'application/vnd.eventstore.events+json' }, body: JSON.stringify(events) })) === 201) written++;
  }
  for (let s = 2; s < ${streams}; s++) {
    if ((await call('DELETE', '/streams/garbage-' + s, { headers: { authorization: auth, 'ES-HardDelete': 'true' } })) === 204) deleted++;
  }
  console.log(JSON.stringify({ written, deleted }));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

function eventsOf(ns: string, reason: string): string[] {
  const out = kubectl(['get', 'events', '-n', ns, '--field-selector', `reason=${reason}`, '-o', 'jsonpath={range .items[*]}{.note}{.message}{"\\n"}{end}']).stdout;
  return out.split('\n').filter((line) => line !== '');
}

describe.skipIf(ctx().skipReason !== '')('certificate rotation by the operator, three nodes under write load', () => {
  let ns = '';
  let operator: OperatorUnderTest | undefined;
  let password = '';
  const pods = (): string[] => ['rot-0', 'rot-1', 'rot-2'];
  const readUrls = (): string[] => pods().map((pod) => `https://${pod}.${CLUSTER}-headless.${ns}.svc:2113`);
  let leafA: KeyPairPem;
  let leafB: KeyPairPem;
  let leafC: KeyPairPem;
  let leafD: KeyPairPem;

  beforeAll(async () => {
    installCrds();
    ns = await createNamespace('edb-certrot');
    leafA = leaf(ns, caOld, 'node-a.eventdb.test');
    leafB = leaf(ns, caNew, 'node-b.eventdb.test');
    leafC = leaf(ns, caNew, 'node-c.eventdb.test');
    leafD = leaf(ns, caNew, 'node-d.eventdb.test');
    putCertificate(ns, leafA);
    putSecret(ns, 'rot-ca', 'Opaque', { 'ca.crt': caOld.certificatePem });
    // What the test's clients trust all along: both CAs.
    putSecret(ns, 'rot-client-trust', 'Opaque', { 'ca.crt': caOld.certificatePem + caNew.certificatePem + caThird.certificatePem });
    operator = await startOperator({ watchNamespaces: [ns] });
    process.stdout.write(`[certificate-rotation] operator installed by ${operator.install}${operator.namespace === '' ? '' : ` in ${operator.namespace}`}\n`);
    const spec = {
      replicas: 3,
      storage: { data: { size: '256Mi' } },
      resources: { requests: { cpu: '20m', memory: '128Mi' } },
      tls: { mode: 'Secret', certificateSecret: { name: 'rot-tls' }, caSecret: { name: 'rot-ca' }, reservedNodeCommonName: '*.eventdb.test', reload: 'Signal' },
    };
    expect(applyCluster(ns, CLUSTER, spec).status).toBe(0);
    await waitClusterReady(ns, CLUSTER);
    password = await secretValue(ns, `${CLUSTER}-admin`, 'password');
  }, 600_000);

  afterAll(async () => {
    await operator?.stop();
    if (ns !== '') await deleteNamespace(ns, 300_000);
  }, 400_000);

  async function writers(name: string): Promise<{ stop(): Promise<WritersSummary> }> {
    return await startWriters(ns, { name, writeUrl: `https://${CLUSTER}-leader:2113`, readUrls: readUrls(), writers: 4, password, cluster: CLUSTER, trustSecret: 'rot-client-trust' });
  }

  /**
   * A CA migration under write load by Signal: `to` trusted beside `from`, the certificate
   * replaced by `next` (signed by `to`, another common name), `from` removed; every node serves
   * `next` (a TLS handshake from inside the cluster), the time is printed, no write fails.
   */
  async function migrateBySignal(label: string, from: { ca: KeyPairPem; key: string }, to: { ca: KeyPairPem; key: string }, current: KeyPairPem, next: KeyPairPem): Promise<void> {
    const signalEventsBefore = eventsOf(ns, 'CertificatesReloaded').filter((note) => note.includes('reloaded by Signal at')).length;
    const load = await writers(`writers-signal-${label}`);
    // 1. Both CAs trusted.
    putSecret(ns, 'rot-ca', 'Opaque', { [from.key]: from.ca.certificatePem, [to.key]: to.ca.certificatePem });
    let cluster = await waitRotated(ns, hashOf(current, current.privateKeyPem, [from.ca, to.ca]));

    // 2. The certificate of the new CA, another common name.
    const changedAtMs = putCertificate(ns, next);
    cluster = await waitRotated(ns, hashOf(next, next.privateKeyPem, [from.ca, to.ca]));
    // The operator's figure (reloadedAt) and the test's own: until it saw the rotation done.
    const seconds = (Date.parse(cluster.status?.certificates?.reloadedAt ?? '') - changedAtMs) / 1000;
    const observedSeconds = (Date.now() - changedAtMs) / 1000;
    process.stdout.write(`[certificate-rotation] Signal (${label}, operator by ${operator?.install ?? '?'}): Secret update to the last verified node ${seconds.toFixed(1)} s (seen done by the test after ${observedSeconds.toFixed(1)} s)\n`);
    expect(observedSeconds).toBeLessThan(120);
    // The completion is said by an Event (the condition keeps the hash and time afterwards), by Signal, no fallback.
    expect(eventsOf(ns, 'CertificatesReloaded').filter((note) => note.includes('reloaded by Signal at')).length).toBeGreaterThan(signalEventsBefore);
    expect(cluster.status?.certificates?.rotation?.fallback).toBeUndefined();
    expect(condition(cluster, 'CertificatesReloaded')?.message).toContain(hashOf(next, next.privateKeyPem, [from.ca, to.ca]));
    expect(seconds).toBeLessThan(120);
    const served = await servedInCluster(ns, `probe-signal-${label}`);
    expect(served).toEqual(Object.fromEntries(pods().map((pod) => [pod, fingerprint(next.certificatePem)])));

    // 3. The old CA removed.
    putSecret(ns, 'rot-ca', 'Opaque', { [to.key]: to.ca.certificatePem });
    cluster = await waitRotated(ns, hashOf(next, next.privateKeyPem, [to.ca]));

    const summary = await load.stop();
    process.stdout.write(`[certificate-rotation] Signal (${label}): writes acked ${summary.acked}, failed attempts ${summary.failedAttempts}, longest gap ${summary.maxGapMs} ms\n`);
    expect(summary.failedAttempts).toBe(0);
    expect(summary.acked).toBeGreaterThan(20);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
    // no SIGHUP failed on the way
    expect(eventsOf(ns, 'CertificateReloadFallback')).toEqual([]);
    expect(eventsOf(ns, 'CertificateReloadFailed').filter((note) => note.includes('pods/exec'))).toEqual([]);
  }

  it('Signal: migrates to a new CA and a certificate with another common name; every node serves it, no write fails', async () => {
    // The nodes run what they were started with.
    await waitRotated(ns, hashOf(leafA, leafA.privateKeyPem, [caOld]));
    await migrateBySignal('chart', { ca: caOld, key: 'ca.crt' }, { ca: caNew, key: 'new-ca.crt' }, leafA, leafB);
    expect(eventsOf(ns, 'NodeCertificateReloaded').length).toBeGreaterThanOrEqual(3);
  }, 600_000);

  it('Endpoint: POST /admin/reloadconfig reloads every node; switching the method restarts no pod', async () => {
    const uids = (await clusterPods(ns, CLUSTER)).map((pod) => pod.uid);
    await patchCluster(ns, CLUSTER, { spec: { tls: { reload: 'Endpoint' } } });
    const load = await writers('writers-endpoint');
    const changedAtMs = putCertificate(ns, leafC);
    const cluster = await waitRotated(ns, hashOf(leafC, leafC.privateKeyPem, [caNew]));
    const seconds = (Date.parse(cluster.status?.certificates?.reloadedAt ?? '') - changedAtMs) / 1000;
    const observedSeconds = (Date.now() - changedAtMs) / 1000;
    process.stdout.write(`[certificate-rotation] Endpoint: Secret update to the last verified node ${seconds.toFixed(1)} s (seen done by the test after ${observedSeconds.toFixed(1)} s)\n`);
    expect(observedSeconds).toBeLessThan(120);
    expect(eventsOf(ns, 'CertificatesReloaded').some((note) => note.includes('reloaded by Endpoint'))).toBe(true);
    expect(seconds).toBeLessThan(120);
    expect(await servedInCluster(ns, 'probe-endpoint')).toEqual(Object.fromEntries(pods().map((pod) => [pod, fingerprint(leafC.certificatePem)])));
    expect((await clusterPods(ns, CLUSTER)).map((pod) => pod.uid)).toEqual(uids);
    const summary = await load.stop();
    process.stdout.write(`[certificate-rotation] Endpoint: writes acked ${summary.acked}, failed attempts ${summary.failedAttempts}\n`);
    expect(summary.failedAttempts).toBe(0);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
  }, 600_000);

  it('a key that does not match its certificate: old certificates stay served, the refusal is reported per node; the fixed Secret completes the rotation', async () => {
    const before = hashOf(leafC, leafC.privateKeyPem, [caNew]);
    putCertificate(ns, leafD, leafC.privateKeyPem);
    let last: ClusterObject | undefined;
    await waitFor('CertificatesReloaded False ReloadFailed', async () => {
      last = await getCluster(ns, CLUSTER);
      const said = condition(last, 'CertificatesReloaded');
      return said?.status === 'False' && said.reason === 'ReloadFailed' ? said : undefined;
    }, 240_000, 1000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}`);
    });
    const said = condition(last, 'CertificatesReloaded');
    expect(said?.message).toMatch(/rot-\d: POST \/admin\/reloadconfig answered 400: .*does not match the certificate/);
    expect(last?.status?.operation?.kind).toBe('CertificateReload');
    expect(last?.status?.certificates?.secretHash).toBe(before);
    const failures = eventsOf(ns, 'CertificateReloadFailed');
    expect(failures.some((note) => /rot-\d did not take the new certificates .*does not match the certificate/.test(note))).toBe(true);
    expect(await servedInCluster(ns, 'probe-bad-key')).toEqual(Object.fromEntries(pods().map((pod) => [pod, fingerprint(leafC.certificatePem)])));

    // The operator restarts in the middle of the failing rotation: the new process continues it
    // from status.certificates.rotation (same start, failure counts going on, not from zero).
    const failing = (await getCluster(ns, CLUSTER))?.status?.certificates?.rotation;
    const counts = Object.fromEntries((failing?.nodes ?? []).map((node) => [node.pod, node.failures]));
    expect(Object.keys(counts).length).toBeGreaterThan(0);
    await operator?.restart();
    const continued = await waitFor('the restarted operator to count further failures', async () => {
      const rotation = (await getCluster(ns, CLUSTER))?.status?.certificates?.rotation;
      return (rotation?.nodes ?? []).some((node) => node.failures > (counts[node.pod] ?? Infinity)) ? rotation : undefined;
    }, 120_000, 1000);
    process.stdout.write(`[certificate-rotation] failures before the operator restart ${JSON.stringify(counts)}, after ${JSON.stringify(Object.fromEntries((continued?.nodes ?? []).map((node) => [node.pod, node.failures])))}\n`);
    expect(continued?.startedAt).toBe(failing?.startedAt);
    expect(continued?.secretChangedAt).toBe(failing?.secretChangedAt);
    for (const node of continued?.nodes ?? []) expect(node.failures).toBeGreaterThanOrEqual(counts[node.pod] ?? 1);

    // A backup does not wait for the failing rotation: it takes the cluster from it (the
    // rotation goes on next to it), completes, and gives the cluster back to the rotation.
    await create(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'rot-backups' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    const backupStartedMs = Date.now();
    applyBackup(ns, 'during-bad-key', { cluster: { name: CLUSTER }, method: 'FileCopy', fileCopy: { claimName: 'rot-backups' } });
    const backup = await waitBackupCompleted(ns, 'during-bad-key', 300_000);
    process.stdout.write(`[certificate-rotation] a FileCopy backup during the failing rotation completed in ${Date.now() - backupStartedMs} ms from ${backup.status?.sourcePod ?? ''}\n`);
    const afterBackup = await waitFor('the still failing rotation to be the operation again', async () => {
      const cluster = await getCluster(ns, CLUSTER);
      return cluster?.status?.operation?.kind === 'CertificateReload' ? cluster : undefined;
    }, 120_000, 1000);
    expect(afterBackup.status?.lastOperation).toMatchObject({ kind: 'Backup', id: 'during-bad-key', result: 'Succeeded' });
    expect(condition(afterBackup, 'CertificatesReloaded')).toMatchObject({ status: 'False' });

    putCertificate(ns, leafD);
    const cluster = await waitRotated(ns, hashOf(leafD, leafD.privateKeyPem, [caNew]));
    expect(cluster.status?.operation).toBeUndefined();
    expect(await servedInCluster(ns, 'probe-fixed')).toEqual(Object.fromEntries(pods().map((pod) => [pod, fingerprint(leafD.certificatePem)])));
  }, 600_000);
  it('next to a throttled scavenge cycle: every node is verified while the Scavenge holds the cluster, and the cycle completes', async () => {
    const leafE = leaf(ns, caNew, 'node-e.eventdb.test');
    const wrote = lastJsonLine<{ written: number; deleted: number }>(await runInCluster(ns, 'rot-garbage', garbageScript(40), { EVENTDB_PASSWORD: password }, 300_000, CLUSTER, 'rot-client-trust'));
    expect(wrote).toEqual({ written: 40, deleted: 38 });
    // Throttled to 1 %: a node scavenge rests 99 % of its time, so the cycle is long.
    applySchedule(ns, 'rot-scavenge', { cluster: { name: CLUSTER }, schedule: '* * * * *', timeZone: 'UTC', throttlePercent: 1 });
    const running = await waitFor('a cycle holding the cluster with a node scavenge running', async () => {
      const current = (await scheduleStatus(ns, 'rot-scavenge'))?.currentCycle;
      const operation = (await getCluster(ns, CLUSTER))?.status?.operation as { kind?: string; id?: string } | undefined;
      const scavenging = (current?.nodes ?? []).some((node) => node.result === 'InProgress');
      return current !== undefined && scavenging && operation?.kind === 'Scavenge' && operation.id === current.id ? current : undefined;
    }, 180_000, 250);
    const expected = hashOf(leafE, leafE.privateKeyPem, [caNew]);
    const changedAtMs = putCertificate(ns, leafE);
    let last: ClusterObject | undefined;
    let heldThroughout = true;
    const done = await waitFor('the rotation verified on every node next to the scavenge', async () => {
      last = await getCluster(ns, CLUSTER);
      const operation = last?.status?.operation as { kind?: string; id?: string } | undefined;
      const rotation = last?.status?.certificates?.rotation;
      const finished = rotation?.secretHash === expected && rotation.finishedAt !== undefined;
      if (!finished && !(operation?.kind === 'Scavenge' && operation.id === running.id)) heldThroughout = false;
      return finished && condition(last, 'CertificatesReloaded')?.status === 'True' ? last : undefined;
    }, 240_000, 250).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}\n${kubectl(['get', 'events', '-n', ns]).out}`);
    });
    const rotation = done.status?.certificates?.rotation;
    const observedSeconds = (Date.now() - changedAtMs) / 1000;
    const startDelaySeconds = (Date.parse(rotation?.startedAt ?? '') - changedAtMs) / 1000;
    const seconds = (Date.parse(rotation?.finishedAt ?? '') - changedAtMs) / 1000;
    process.stdout.write(`[certificate-rotation] next to Scavenge ${running.id}: Secret update to reload start ${startDelaySeconds.toFixed(1)} s, to the last verified node ${seconds.toFixed(1)} s (operator's figure ${rotation?.seconds ?? '?'} s from the Secret's write time; seen by the test after ${observedSeconds.toFixed(1)} s); status.operation ${JSON.stringify(done.status?.operation)}\n`);
    // The rotation did not wait: the cycle held the cluster from the Secret update to the last verified node.
    expect(heldThroughout).toBe(true);
    expect(rotation?.alongside).toBe(`Scavenge ${running.id}`);
    expect(rotation?.verified).toEqual(pods());
    expect(done.status?.certificates?.secretHash).toBe(expected);
    expect(seconds).toBeLessThan(120);
    expect(startDelaySeconds).toBeLessThan(5);
    expect(await servedInCluster(ns, 'probe-scavenge')).toEqual(Object.fromEntries(pods().map((pod) => [pod, fingerprint(leafE.certificatePem)])));
    // The cycle goes on to the end on every node (no longer throttled, to finish sooner).
    await api().call('PATCH', `/apis/eventdb.io/v1alpha1/namespaces/${ns}/scavengeschedules/rot-scavenge`, { spec: { throttlePercent: 100 } }, { patch: 'merge' });
    const completed = await waitFor('the scavenge cycle to complete', async () => (await scheduleStatus(ns, 'rot-scavenge'))?.history?.find((entry) => entry.id === running.id), 300_000, 500);
    await api().call('PATCH', `/apis/eventdb.io/v1alpha1/namespaces/${ns}/scavengeschedules/rot-scavenge`, { spec: { suspend: true } }, { patch: 'merge' });
    process.stdout.write(`[certificate-rotation] scavenge cycle ${running.id}: ${completed.result}\n`);
    expect(completed.result).toBe('Success');
    await waitRotated(ns, expected);
  }, 720_000);

  it('self-signed: a short-lived node certificate is renewed before expiry and reloaded, no write fails', async () => {
    const spec = {
      replicas: 1,
      storage: { data: { size: '256Mi' } },
      resources: { requests: { cpu: '20m', memory: '128Mi' } },
      tls: { mode: 'SelfSigned', certificateValidity: '6m', renewBefore: '4m' },
    };
    expect(applyCluster(ns, 'ssr', spec).status).toBe(0);
    await waitClusterReady(ns, 'ssr');
    const first = (await getCluster(ns, 'ssr'))?.status?.certificates;
    const firstNotAfterMs = Date.parse(first?.notAfter ?? '');
    expect(firstNotAfterMs - Date.now()).toBeLessThan(6 * 60_000);
    const load = await startWriters(ns, { name: 'writers-ssr', writeUrl: 'https://ssr-leader:2113', readUrls: ['https://ssr-0.ssr-headless.' + ns + '.svc:2113'], writers: 2, password: await secretValue(ns, 'ssr-admin', 'password'), cluster: 'ssr' });
    let last: ClusterObject | undefined;
    await waitFor('the renewed certificate reloaded', async () => {
      last = await getCluster(ns, 'ssr');
      const certificates = last?.status?.certificates;
      return certificates?.notAfter !== first?.notAfter && certificates?.secretHash !== first?.secretHash && last?.status?.operation === undefined && condition(last, 'CertificatesReloaded')?.reason === 'CertificatesReloaded' ? true : undefined;
    }, 200_000, 1000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}`);
    });
    const reloadedAtMs = Date.parse(last?.status?.certificates?.reloadedAt ?? '');
    process.stdout.write(`[certificate-rotation] self-signed: renewed and reloaded ${((firstNotAfterMs - reloadedAtMs) / 1000).toFixed(0)} s before the old certificate expired\n`);
    expect(reloadedAtMs).toBeLessThan(firstNotAfterMs);
    const summary = await load.stop();
    process.stdout.write(`[certificate-rotation] self-signed: writes acked ${summary.acked}, failed attempts ${summary.failedAttempts}${summary.firstError === undefined ? '' : `, first error ${summary.firstError}`}\n`);
    expect(summary.failedAttempts).toBe(0);
    expect(summary.acked).toBeGreaterThan(10);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
  }, 400_000);

  it('the plain-YAML install: a Signal rotation to a third CA and another common name, every node, no failed write', async () => {
    const leafF = leaf(ns, caThird, 'node-f.eventdb.test');
    const leafE = { certificatePem: await secretValue(ns, 'rot-tls', 'tls.crt'), privateKeyPem: await secretValue(ns, 'rot-tls', 'tls.key') };
    await operator?.stop();
    operator = await startOperator({ watchNamespaces: [ns], install: 'yaml' });
    process.stdout.write(`[certificate-rotation] operator installed by ${operator.install}${operator.namespace === '' ? '' : ` in ${operator.namespace}`}\n`);
    // back to Signal (the Endpoint test switched it; switching restarts no pod)
    await patchCluster(ns, CLUSTER, { spec: { tls: { reload: 'Signal' } } });
    await waitRotated(ns, hashOf(leafE, leafE.privateKeyPem, [caNew]));
    await migrateBySignal('plain-yaml', { ca: caNew, key: 'new-ca.crt' }, { ca: caThird, key: 'third-ca.crt' }, leafE, leafF);
  }, 600_000);
});

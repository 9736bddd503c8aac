// The controller's steps against the in-memory KubeApi and a stub of the nodes' gossip: which
// children it makes, what status says, and that an operation is persisted before a pod goes.
// The real thing runs on a kind cluster in test/operator/k8s/.
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { EventDBClusterStatus } from '../../api/eventdb-cluster.js';
import { NodeClient, type NodeRequest, type NodeTransport } from '../../node-client/node-client.js';
import { NodeSignalError, upgradeRefusal } from '../../node-client/node-signal.js';
import { decodeSecretValue } from '../../resources/secrets.js';
import { certificateFingerprint } from '../../resources/tls/certificate.js';
import type { NodeAccess } from '../../node-client/node-access.js';
import { ManualClock } from '../../runtime/clock.js';
import type { EventInput } from '../../runtime/events.js';
import { FakeKubeApi } from '../../runtime/fake-kube-api.js';
import { Informer } from '../../runtime/informer.js';
import { InformerSet } from '../../runtime/informer-set.js';
import { KubeApiError, type KubeObject } from '../../runtime/kube-api.js';
import { OperatorMetrics, valueOf } from '../../runtime/metrics.js';
import { BACKUPS, CONFIG_MAPS, EVENTDB_CLUSTERS, JOBS, PDBS, PODS, PVCS, SCAVENGE_SCHEDULES, SECRETS, SERVICES } from '../../runtime/resource-types.js';
import { buildCredentialsSecret } from '../../resources/backup-objects.js';
import { ChildApplier } from './children.js';
import { reconcileCluster, type ClusterControllerDeps } from './reconcile-cluster.js';

const log = pino({ level: 'silent' });

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

function clusterObject(spec: Record<string, unknown>, annotations: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name: 'orders', namespace: 'shop', annotations }, spec };
}

function backupObject(name: string, method: 'VolumeSnapshot' | 'FileCopy', status: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'eventdb.io/v1alpha1',
    kind: 'Backup',
    metadata: { name, namespace: 'shop' },
    spec: { cluster: { name: 'source' }, method, ...(method === 'FileCopy' ? { fileCopy: { claimName: 'backups' } } : {}) },
    status,
  };
}

class Harness {
  readonly api = new FakeKubeApi();
  readonly clock = new ManualClock(Date.parse('2026-03-04T10:00:00Z'));
  readonly events: EventInput[] = [];
  /** Gossip state each pod reports, by pod name. */
  readonly gossip = new Map<string, string>();
  /** A certificate (PEM) a pod serves instead of the Secret's. */
  readonly servedCertificate = new Map<string, string>();
  readonly requests: NodeRequest[] = [];
  /** Pods whose reloads are refused, and why (as a node refuses a key that does not match). */
  readonly refuseReload = new Map<string, string>();
  readonly lastReload = new Map<string, { at: string; result: string; message?: string }>();
  readonly signals: string[] = [];
  /** When set, every SIGHUP through exec fails with it (the node is not asked). */
  signalFailure: Error | undefined;

  private secretValue(name: string, key: string): string {
    return decodeSecretValue(this.api.objects(SECRETS).find((secret) => secret.metadata.name === name), key) ?? '';
  }

  /** A reload of the simulated node: it loads the Secret's files now, or refuses and keeps its own. */
  private reloadNode(pod: string): string | undefined {
    const refusal = this.refuseReload.get(pod);
    const at = new Date(this.clock.nowMs() + this.lastReload.size).toISOString() + pod;
    if (refusal !== undefined) {
      this.lastReload.set(pod, { at, result: 'Refused', message: refusal });
      return refusal;
    }
    this.servedCertificate.set(pod, this.secretValue('orders-node-tls', 'tls.crt'));
    this.lastReload.set(pod, { at, result: 'Applied' });
    return undefined;
  }
  readonly informers: Informer[] = [];
  deps!: ClusterControllerDeps;

  async start(spec: Record<string, unknown>, options: { clustering?: boolean; noSignaller?: boolean } = {}): Promise<void> {
    this.api.seed(EVENTDB_CLUSTERS, clusterObject(spec));
    const clusters = new Informer({ api: this.api, type: EVENTDB_CLUSTERS, clock: this.clock, log, resyncPeriodMs: 0 });
    const pods = new Informer({ api: this.api, type: PODS, clock: this.clock, log, resyncPeriodMs: 0 });
    this.informers.push(clusters, pods);
    for (const informer of this.informers) informer.start();
    await Promise.all(this.informers.map((informer) => informer.waitForSync()));
    const access: NodeAccess = {
      baseUrl: async (_namespace, pod, scheme) => (pod.ip === undefined ? undefined : `${scheme}://${pod.name}.test`),
      close: async () => undefined,
    };
    const transport: NodeTransport = async (request) => {
      this.requests.push(request);
      const pod = request.url.hostname.replace(/\.test$/, '');
      const state = this.gossip.get(pod);
      if (state === undefined) throw new Error('connection refused');
      const member = { instanceId: pod, state, isAlive: true, httpEndPointIp: '0.0.0.0', httpEndPointPort: 2113, writerCheckpoint: 100 };
      let text = JSON.stringify({ members: [member] });
      if (request.url.protocol !== 'https:') return { status: 200, text };
      // The node serves what it loaded: the Secret's certificate unless told otherwise.
      if (!this.servedCertificate.has(pod)) this.servedCertificate.set(pod, this.secretValue('orders-node-tls', 'tls.crt'));
      const served = this.servedCertificate.get(pod) ?? '';
      const nodeForm = (pem: string): string => new X509Certificate(pem).fingerprint256;
      if (request.url.pathname === '/admin/reloadconfig') {
        const refusal = this.reloadNode(pod);
        return refusal === undefined ? { status: 200, text: '{}' } : { status: 400, text: refusal };
      }
      if (request.url.pathname === '/info') {
        const last = this.lastReload.get(pod);
        text = JSON.stringify({
          certificate: { fingerprintSha256: nodeForm(served), trustedRoots: [{ fingerprintSha256: nodeForm(this.secretValue('orders-node-tls', 'ca.crt')) }] },
          certificateOnDisk: { fingerprintSha256: nodeForm(this.secretValue('orders-node-tls', 'tls.crt')) },
          ...(last === undefined ? {} : { lastReload: last }),
        });
      }
      return { status: 200, text, certificateFingerprint: certificateFingerprint(served) };
    };
    this.deps = {
      api: this.api,
      clusters: new InformerSet([clusters]),
      pods: new InformerSet([pods]),
      client: new NodeClient({ transport }),
      access,
      ...(options.noSignaller === true
        ? {}
        : {
            signaller: {
              hangUp: async (_namespace: string, pod: string) => {
                if (this.signalFailure !== undefined) throw this.signalFailure;
                this.signals.push(pod);
                this.reloadNode(pod);
              },
            },
          }),
      events: { record: async (_object, event) => void this.events.push(event) },
      clock: this.clock,
      metrics: new OperatorMetrics(),
      defaults: { nodeImage: 'eventdb:dev', dataSize: '1Gi' },
      applier: new ChildApplier(this.api, this.clock),
      clustering: options.clustering ?? true,
      writtenStatus: new Map(),
    };
  }

  async reconcile(): Promise<{ requeueAfterMs?: number }> {
    await settle();
    const result = await reconcileCluster(this.deps, { key: 'shop/orders', namespace: 'shop', name: 'orders', log, reconcileId: 'r' });
    await settle();
    this.clock.advance(2000);
    return result;
  }

  status(): EventDBClusterStatus {
    return (this.api.objects(EVENTDB_CLUSTERS)[0]?.['status'] ?? {}) as EventDBClusterStatus;
  }

  names(type: Parameters<FakeKubeApi['objects']>[0]): string[] {
    return this.api.objects(type).map((object) => object.metadata.name ?? '').sort();
  }

  /** What a kubelet and the node would do: the pod runs, is ready, and gossips `state`. */
  async runPod(name: string, state = 'Leader'): Promise<void> {
    await this.api.patch(PODS, 'shop', name, { status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] } }, { subresource: 'status' });
    this.gossip.set(name, state);
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }
}

let harness: Harness;
afterEach(async () => harness?.stop());

describe('reconcileCluster', () => {
  it('creates every child of a one-node cluster, owned by it, and reports Creating', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    expect(harness.names(SECRETS)).toEqual(['orders-admin', 'orders-ca', 'orders-node-tls', 'orders-ops']);
    expect(harness.names(SERVICES)).toEqual(['orders', 'orders-headless', 'orders-leader']);
    expect(harness.names(CONFIG_MAPS)).toEqual(['orders-config']);
    expect(harness.names(PDBS)).toEqual(['orders']);
    expect(harness.names(PVCS)).toEqual(['data-orders-0']);
    expect(harness.names(PODS)).toEqual(['orders-0']);
    const config = parse((harness.api.objects(CONFIG_MAPS)[0]?.['data'] as Record<string, string>)['eventdb.conf'] ?? '');
    expect(config).toEqual({});
    const pod = harness.api.objects(PODS)[0];
    expect(pod?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'EventDBCluster', name: 'orders', controller: true });
    await harness.reconcile();
    const status = harness.status();
    expect(status).toMatchObject({ phase: 'Creating', replicas: 1, readyReplicas: 0, selector: 'eventdb.io/cluster=orders', observedGeneration: 1 });
    expect(status.conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Creating', observedGeneration: 1 });
    expect(status.conditions?.find((condition) => condition.type === 'CertificatesReloaded')).toMatchObject({ status: 'Unknown', reason: 'NotObserved' });
    expect(harness.events.map((event) => event.reason)).toContain('NodeCreated');
  });

  it('becomes Ready once the node runs, labels it leader and lists it as a member', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    expect(harness.api.objects(PODS)[0]?.metadata.labels?.['eventdb.io/role']).toBe('leader');
    const status = harness.status();
    expect(status).toMatchObject({ phase: 'Ready', readyReplicas: 1, leader: 'orders-0', image: 'eventdb:dev' });
    expect(status.members?.[0]).toMatchObject({ pod: 'orders-0', role: 'Leader', alive: true, writerCheckpoint: 100 });
    expect(status.conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ status: 'True', reason: 'ClusterReady' });
    expect(status.conditions?.find((condition) => condition.type === 'QuorumHealthy')).toMatchObject({ status: 'True' });
  });

  it('writes the status only when it changed: a quiet Ready cluster is not rewritten, a restarted operator compares with the stored status', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.reconcile();
    expect(harness.status().phase).toBe('Ready');
    const version = harness.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.resourceVersion;
    for (let i = 0; i < 15; i++) {
      harness.clock.advance(13_000); // well past the old 20 s refresh, several times over
      await harness.reconcile();
    }
    expect(harness.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.resourceVersion).toBe(version);
    // a new operator process (no memory of its writes) finds the same status stored: no write either
    harness.deps = { ...harness.deps, writtenStatus: new Map() };
    await harness.reconcile();
    expect(harness.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.resourceVersion).toBe(version);
    // a real change is written at once
    harness.gossip.set('orders-0', 'Follower');
    await harness.reconcile();
    expect(harness.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.resourceVersion).not.toBe(version);
  });

  it('speaks https to a TLS node, verifying it against the cluster CA under its DNS name, and reports the certificate it serves', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    const pod = harness.api.objects(PODS)[0];
    const container = (pod?.['spec'] as { containers: { env: { name: string; value?: string }[]; readinessProbe: { httpGet: { scheme: string } } }[] }).containers[0];
    expect(container?.env.find((entry) => entry.name === 'SERVICE_INSECURE')).toBeUndefined();
    expect(container?.readinessProbe.httpGet.scheme).toBe('HTTPS');
    await harness.runPod('orders-0');
    await harness.reconcile();
    const request = harness.requests.at(-1);
    expect(request?.url.href).toBe('https://orders-0.test/gossip');
    const ca = decodeSecretValue(harness.api.objects(SECRETS).find((secret) => secret.metadata.name === 'orders-ca'), 'ca.crt');
    expect(request?.tls).toEqual({ ca: [ca], serverName: 'orders-0.orders-headless.shop.svc' });
    const nodeCertificate = decodeSecretValue(harness.api.objects(SECRETS).find((secret) => secret.metadata.name === 'orders-node-tls'), 'tls.crt') ?? '';
    let status = harness.status();
    expect(status.members?.[0]?.certificateFingerprint).toBe(certificateFingerprint(nodeCertificate));
    expect(status.conditions?.find((condition) => condition.type === 'CertificatesReloaded')).toMatchObject({ status: 'True', reason: 'CurrentCertificateServed' });
    expect(status.certificates).toMatchObject({ servedByNodes: true, reloadedAt: '2026-03-04T10:00:02.000Z' });

    // The certificate is renewed (here: its Secret is gone, so the operator issues another): the
    // node is sent SIGHUP once its file is the new one, and verified by its report and handshake.
    await harness.api.delete(SECRETS, 'shop', 'orders-node-tls');
    await harness.reconcile();
    expect(harness.events.map((event) => event.reason)).toContain('NodeCertificateIssued');
    expect(harness.signals).toEqual(['orders-0']);
    expect(harness.events.map((event) => event.reason)).toEqual(expect.arrayContaining(['CertificateReloadStarted', 'NodeCertificateReloaded', 'CertificatesReloaded']));
    status = harness.status();
    const condition = status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded');
    expect(condition).toMatchObject({ status: 'True', reason: 'CertificatesReloaded' });
    expect(status.certificates?.reloadedAt).toBe('2026-03-04T10:00:04.000Z');
    expect(status.certificates?.secretHash).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(status.lastOperation).toMatchObject({ kind: 'CertificateReload', result: 'Succeeded' });
    await harness.reconcile();
    expect(harness.status().members?.[0]?.certificateFingerprint).not.toBe(certificateFingerprint(nodeCertificate));
    expect(harness.signals).toEqual(['orders-0']);

    // A reload the node refuses (by the endpoint): retried, then reported with the node and the
    // reason; the node keeps its old certificate; once it takes the files the rotation completes.
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { replicas: 1, tls: { mode: 'SelfSigned', reload: 'Endpoint' } } });
    harness.refuseReload.set('orders-0', 'the private key does not match the certificate');
    await harness.api.delete(SECRETS, 'shop', 'orders-node-tls');
    for (let i = 0; i < 5; i++) await harness.reconcile();
    status = harness.status();
    expect(status.operation).toMatchObject({ kind: 'CertificateReload' });
    expect(status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded')).toMatchObject({
      status: 'False',
      reason: 'ReloadFailed',
      message: expect.stringContaining('orders-0: POST /admin/reloadconfig answered 400: the private key does not match the certificate'),
    });
    expect(harness.events.filter((event) => event.reason === 'CertificateReloadFailed').length).toBeGreaterThanOrEqual(2);
    expect(harness.signals).toEqual(['orders-0']);
    harness.refuseReload.delete('orders-0');
    for (let i = 0; i < 20 && harness.status().operation !== undefined; i++) await harness.reconcile();
    status = harness.status();
    expect(status.operation).toBeUndefined();
    expect(status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded')).toMatchObject({ status: 'True', reason: 'CertificatesReloaded' });
  });

  it('Signal denied by the apiserver: falls back to Endpoint at once, says so in an Event, the log and the condition, and completes', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, tls: { mode: 'SelfSigned', reload: 'Signal' } });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    harness.signalFailure = upgradeRefusal(403, JSON.stringify({ kind: 'Status', status: 'Failure', message: 'pods "orders-0" is forbidden: User "system:serviceaccount:ops:op" cannot create resource "pods/exec"', reason: 'Forbidden', code: 403 }));
    await harness.api.delete(SECRETS, 'shop', 'orders-node-tls');
    for (let i = 0; i < 5 && harness.status().operation !== undefined; i++) await harness.reconcile();
    await harness.reconcile();
    const status = harness.status();
    expect(status.operation).toBeUndefined();
    expect(status.certificates?.rotation).toMatchObject({ method: 'Signal', signalFailures: 1, fallback: { method: 'Endpoint', reason: expect.stringContaining('the apiserver denied pods/exec, last on orders-0: SIGHUP through pods/exec failed: the apiserver answered the exec upgrade with HTTP 403') } });
    const condition = status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded');
    expect(condition).toMatchObject({ status: 'True', reason: 'CertificatesReloaded' });
    const fallback = harness.events.filter((event) => event.reason === 'CertificateReloadFallback');
    expect(fallback).toHaveLength(1);
    expect(fallback[0]?.type).toBe('Warning');
    expect(fallback[0]?.note).toContain('cannot create resource "pods/exec" (Forbidden, HTTP 403)');
    expect(fallback[0]?.note).toContain('reloaded by Endpoint (POST /admin/reloadconfig)');
    expect(harness.events.filter((event) => event.reason === 'CertificatesReloaded').at(-1)?.note).toContain('reloaded by Endpoint (fallback from Signal: the apiserver denied pods/exec');
    expect(harness.requests.some((request) => request.url.pathname === '/admin/reloadconfig')).toBe(true);
    for (const event of harness.events) expect(event.note).not.toContain('[object');
  });

  it('Signal failing otherwise: retried, then after 3 failed SIGHUPs reloaded by Endpoint', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, tls: { mode: 'SelfSigned', reload: 'Signal' } });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    harness.signalFailure = new NodeSignalError('EDBOP_EXEC_UPGRADE_FAILED', 'the exec upgrade failed: socket hang up');
    await harness.api.delete(SECRETS, 'shop', 'orders-node-tls');
    await harness.reconcile();
    let status = harness.status();
    expect(status.certificates?.rotation).toMatchObject({ signalFailures: 1, nodes: [{ pod: 'orders-0', failures: 1, lastError: 'SIGHUP through pods/exec failed: the exec upgrade failed: socket hang up (EDBOP_EXEC_UPGRADE_FAILED)' }] });
    expect(status.certificates?.rotation?.fallback).toBeUndefined();
    for (let i = 0; i < 20 && harness.status().operation !== undefined; i++) {
      harness.clock.advance(10_000);
      await harness.reconcile();
    }
    status = harness.status();
    expect(status.operation).toBeUndefined();
    expect(status.certificates?.rotation).toMatchObject({ signalFailures: 3, fallback: { method: 'Endpoint', reason: expect.stringMatching(/^3 SIGHUPs through pods\/exec failed, last on orders-0: /) } });
    expect(harness.events.filter((event) => event.reason === 'CertificateReloadFailed')).toHaveLength(2);
    expect(harness.events.filter((event) => event.reason === 'CertificateReloadFallback')).toHaveLength(1);
  });

  it('an operator without pods/exec (POD_EXEC=false) reloads a Signal cluster by Endpoint from the start and says why', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, tls: { mode: 'SelfSigned', reload: 'Signal' } }, { noSignaller: true });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.delete(SECRETS, 'shop', 'orders-node-tls');
    for (let i = 0; i < 5 && harness.status().operation !== undefined; i++) await harness.reconcile();
    await harness.reconcile();
    const status = harness.status();
    expect(status.operation).toBeUndefined();
    expect(status.certificates?.rotation?.fallback?.reason).toContain('POD_EXEC=false');
    expect(status.certificates?.rotation?.signalFailures).toBeUndefined();
    expect(harness.events.find((event) => event.reason === 'CertificateReloadStarted')?.note).toContain('by Endpoint (fallback from Signal: the operator may not exec in pods');
    expect(harness.events.filter((event) => event.reason === 'CertificateReloadFallback')).toHaveLength(1);
    expect(harness.events.filter((event) => event.reason === 'CertificateReloadFailed')).toHaveLength(0);
  });

  it('rotates next to a scavenge cycle that holds the cluster: status.operation stays the Scavenge; failures persist in the status across a restart', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, tls: { mode: 'SelfSigned', reload: 'Endpoint' } });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    const cycle = '5f0c1a2b-0000-4000-8000-000000000001';
    harness.api.seed(SCAVENGE_SCHEDULES, {
      apiVersion: 'eventdb.io/v1alpha1',
      kind: 'ScavengeSchedule',
      metadata: { name: 'weekly', namespace: 'shop' },
      spec: { cluster: { name: 'orders' }, schedule: '0 3 * * 0' },
      status: { state: 'InProgress', currentCycle: { id: cycle, startedAt: '2026-03-04T10:00:00Z' } },
    });
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/scavenge-hold': `weekly/${cycle}` } } });
    await harness.reconcile();
    expect(harness.status().operation).toMatchObject({ kind: 'Scavenge', id: cycle });

    // A refused reload during the scavenge: counted in status.certificates.rotation.
    harness.refuseReload.set('orders-0', 'the private key does not match the certificate');
    await harness.api.delete(SECRETS, 'shop', 'orders-node-tls');
    await harness.reconcile();
    let status = harness.status();
    expect(status.operation).toMatchObject({ kind: 'Scavenge', id: cycle });
    expect(status.certificates?.rotation).toMatchObject({ method: 'Endpoint', alongside: `Scavenge ${cycle}`, verified: [], nodes: [{ pod: 'orders-0', failures: 1 }] });
    expect(status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded')).toMatchObject({ status: 'False', reason: 'Reloading', message: expect.stringContaining(`next to Scavenge ${cycle}`) });
    const startedAt = status.certificates?.rotation?.startedAt;

    // The operator restarts (nothing kept in the process but the status): the count goes on.
    harness.deps = { ...harness.deps, writtenStatus: new Map(), metrics: new OperatorMetrics() };
    harness.clock.advance(10_000);
    await harness.reconcile();
    status = harness.status();
    expect(status.certificates?.rotation).toMatchObject({ startedAt, nodes: [{ pod: 'orders-0', failures: 2 }] });
    // the new process's metrics say what the status says: the Scavenge cycle holds this cluster
    expect(await valueOf(harness.deps.metrics.operationsInProgress, { namespace: 'shop', name: 'orders', kind: 'Scavenge' })).toBe(1);
    expect(await valueOf(harness.deps.metrics.operationStarted, { namespace: 'shop', name: 'orders', kind: 'Scavenge' })).toBe(Date.parse(status.operation?.startedAt ?? '') / 1000);
    expect(status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded')).toMatchObject({ status: 'False', reason: 'ReloadFailed' });

    harness.refuseReload.delete('orders-0');
    for (let i = 0; i < 20 && harness.status().certificates?.rotation?.finishedAt === undefined; i++) await harness.reconcile();
    status = harness.status();
    expect(status.operation).toMatchObject({ kind: 'Scavenge', id: cycle });
    expect(status.certificates?.rotation).toMatchObject({ alongside: `Scavenge ${cycle}`, verified: ['orders-0'], startedAt });
    expect(status.certificates?.rotation?.nodes).toBeUndefined();
    expect(status.certificates?.secretHash).toBe(status.certificates?.rotation?.secretHash);
    expect(status.conditions?.find((candidate) => candidate.type === 'CertificatesReloaded')).toMatchObject({ status: 'True', reason: 'CertificatesReloaded' });
    expect(harness.events.filter((event) => event.reason === 'CertificatesReloaded').at(-1)?.note).toContain(`next to Scavenge ${cycle}`);
  });

  it('self-signed: renews the node certificate tls.renewBefore before it expires, and reloads the node with it', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, tls: { mode: 'SelfSigned', certificateValidity: '10m', renewBefore: '8m' } });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    const first = harness.status().certificates;
    expect(Date.parse(first?.notAfter ?? '') - Date.parse('2026-03-04T10:00:00Z')).toBe(10 * 60_000);
    const issued = (): number => harness.events.filter((event) => event.reason === 'NodeCertificateIssued').length;
    expect(issued()).toBe(1);
    // Not yet due 1 min 50 s in; due once less than 8 minutes are left.
    while (harness.clock.nowMs() < Date.parse('2026-03-04T10:01:50Z')) await harness.reconcile();
    expect(issued()).toBe(1);
    for (let i = 0; i < 10; i++) await harness.reconcile();
    expect(issued()).toBe(2);
    for (let i = 0; i < 5 && harness.status().operation !== undefined; i++) await harness.reconcile();
    const status = harness.status();
    expect(status.certificates?.notAfter).not.toBe(first?.notAfter);
    expect(status.certificates?.secretHash).not.toBe(first?.secretHash);
    expect(harness.signals).toEqual(['orders-0']);
    expect(status.conditions?.find((condition) => condition.type === 'CertificatesReloaded')).toMatchObject({ status: 'True', reason: 'CertificatesReloaded' });
    expect((await harness.deps.metrics.render()).body).toMatch(/eventdb_operator_certificate_rotation_seconds\{namespace="shop",name="orders"\} \d/);
  });

  it('speaks plain http with tls.mode Disabled: nodes run Insecure with HTTP probes', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, tls: { mode: 'Disabled' } });
    await harness.reconcile();
    const pod = harness.api.objects(PODS)[0];
    const container = (pod?.['spec'] as { containers: { env: { name: string; value?: string }[]; livenessProbe: { httpGet: { scheme: string } } }[] }).containers[0];
    expect(container?.env.find((entry) => entry.name === 'SERVICE_INSECURE')?.value).toBe('true');
    expect(container?.livenessProbe.httpGet.scheme).toBe('HTTP');
    await harness.runPod('orders-0');
    await harness.reconcile();
    expect(harness.requests.at(-1)?.url.href).toBe('http://orders-0.test/gossip');
    expect(harness.requests.at(-1)?.tls).toBeUndefined();
    expect(harness.status()).toMatchObject({ phase: 'Ready' });
    expect(harness.status().conditions?.find((condition) => condition.type === 'CertificatesReloaded')).toMatchObject({ status: 'Unknown', reason: 'TlsDisabled' });
  });

  it('persists the operation in status before it restarts the pod for a new image, then finishes it', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { image: 'eventdb:next' } });
    harness.api.writes.length = 0;
    await harness.reconcile();
    const order = harness.api.writes.map((write) => `${write.verb} ${write.kind}${write.subresource ? '/status' : ''}`);
    expect(order.indexOf('apply EventDBCluster/status')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('apply EventDBCluster/status')).toBeLessThan(order.indexOf('delete Pod'));
    expect(harness.status().operation).toMatchObject({ kind: 'RollingUpdate', reason: 'ImageChanged', pod: 'orders-0', podStep: 'Restarting' });
    expect(harness.status().phase).toBe('Updating');
    expect(harness.names(PODS)).toEqual([]);
    await harness.reconcile();
    expect((harness.api.objects(PODS)[0]?.['spec'] as { containers: { image: string }[] }).containers[0]?.image).toBe('eventdb:next');
    await harness.runPod('orders-0');
    for (let i = 0; i < 3 && harness.status().operation !== undefined; i++) await harness.reconcile();
    expect(harness.status().operation).toBeUndefined();
    expect(harness.status().lastOperation).toMatchObject({ kind: 'RollingUpdate', result: 'Succeeded' });
    expect(harness.status().phase).toBe('Ready');
    expect(harness.events.map((event) => event.reason)).toEqual(expect.arrayContaining(['RollingUpdateStarted', 'NodeRestarting', 'RollingUpdateCompleted']));
  });

  it('reports an invalid spec in Ready, names the field, and changes nothing', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, maintenanceWindows: [{ schedule: '0 2 * * 6', timeZone: 'Mars/Olympus', duration: '1h' }] });
    const result = await harness.reconcile();
    expect(result.requeueAfterMs).toBeUndefined();
    expect(harness.names(PODS)).toEqual([]);
    const ready = harness.status().conditions?.find((condition) => condition.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(ready?.message).toContain('spec.maintenanceWindows[0].timeZone');
    expect(harness.status().phase).toBe('Failed');
  });

  it('refuses several nodes while the node has no clustering, saying why', async () => {
    harness = new Harness();
    await harness.start({ replicas: 3 }, { clustering: false });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.status().conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ClusteringUnsupported' });
  });

  it('creates no node while spec.sourceBackup names no Backup, and says so', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, sourceBackup: { name: 'nightly-42' } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.names(PVCS)).toEqual([]);
    const ready = harness.status().conditions?.find((condition) => condition.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'SourceBackupNotFound' });
    expect(ready?.message).toContain('spec.sourceBackup nightly-42');
  });

  it('makes the new nodes\' PVCs from a completed Backup\'s VolumeSnapshots, and records the restore once Ready', async () => {
    harness = new Harness();
    harness.api.seed(BACKUPS, backupObject('nightly-42', 'VolumeSnapshot', { phase: 'Running' }));
    harness.api.seed(SECRETS, buildCredentialsSecret({ name: 'nightly-42', namespace: 'shop', uid: 'b' }, 'source', { admin: 'source-admin-pw', ops: 'source-ops-pw' }));
    await harness.start({ replicas: 1, sourceBackup: { name: 'nightly-42' } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.status().conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ reason: 'SourceBackupNotCompleted' });
    await harness.api.patch(BACKUPS, 'shop', 'nightly-42', { status: { phase: 'Completed', writerCheckpoint: 4242, snapshots: [{ volume: 'data', name: 'nightly-42-data', readyToUse: true }] } }, { subresource: 'status' });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0']);
    const claim = harness.api.objects(PVCS)[0];
    expect((claim?.['spec'] as { dataSource?: unknown }).dataSource).toEqual({ apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'nightly-42-data' });
    // The restored database holds the source's users: the generated Secrets take their passwords.
    const admin = harness.api.objects(SECRETS).find((secret) => secret.metadata.name === 'orders-admin');
    expect(Buffer.from((admin?.['data'] as Record<string, string>)['password'] ?? '', 'base64').toString()).toBe('source-admin-pw');
    await harness.runPod('orders-0');
    await harness.reconcile();
    expect(harness.status().restoredFrom).toMatchObject({ backup: 'nightly-42', method: 'VolumeSnapshot', writerCheckpoint: 4242 });
    expect(harness.events.map((event) => event.reason)).toContain('RestoreCompleted');
  });

  it('refuses a snapshot restore whose index layout differs from the spec', async () => {
    harness = new Harness();
    harness.api.seed(BACKUPS, backupObject('nightly-42', 'VolumeSnapshot', { phase: 'Completed', snapshots: [{ volume: 'data', name: 'nightly-42-data', readyToUse: true }] }));
    await harness.start({ replicas: 1, sourceBackup: { name: 'nightly-42' }, storage: { data: { size: '1Gi' }, index: { size: '1Gi' } } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.status().conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ reason: 'RestoreLayoutMismatch' });
  });

  it('restores a file copy with a Job into the PVC before the pod exists, then starts the node', async () => {
    harness = new Harness();
    harness.api.seed(BACKUPS, backupObject('copy-1', 'FileCopy', { phase: 'Completed', path: 'orders/2026-03-04T09:00:00Z' }));
    await harness.start({ replicas: 1, sourceBackup: { name: 'copy-1' } });
    await harness.reconcile();
    expect(harness.names(PVCS)).toEqual(['data-orders-0']);
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.names(JOBS)).toEqual(['orders-restore-0']);
    const job = harness.api.objects(JOBS)[0];
    const env = (job?.['spec'] as { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } }).template.spec.containers[0]?.env;
    expect(env).toContainEqual({ name: 'BACKUP_PATH', value: 'orders/2026-03-04T09:00:00Z' });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    await harness.api.patch(JOBS, 'shop', 'orders-restore-0', { status: { succeeded: 1 } }, { subresource: 'status' });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0']);
    expect(harness.api.objects(PVCS)[0]?.metadata.annotations?.['eventdb.io/restored-from']).toBe('copy-1');
    expect(harness.names(JOBS)).toEqual([]);
  });

  it('holds the cluster for a backup: the node stops, nothing restarts it until the hold goes', async () => {
    harness = new Harness();
    harness.api.seed(BACKUPS, backupObject('nightly-42', 'VolumeSnapshot', { phase: 'Running' }));
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/backup-hold': 'nightly-42/orders-0/Stop' } } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.status().operation).toMatchObject({ kind: 'Backup', id: 'nightly-42', pod: 'orders-0' });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.status().operation).toMatchObject({ kind: 'Backup', podStep: 'Stopped' });
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/backup-hold': null } } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0']);
    expect(harness.status().operation).toBeUndefined();
    expect(harness.status().lastOperation).toMatchObject({ kind: 'Backup', id: 'nightly-42', result: 'Succeeded' });
    expect(harness.events.map((event) => event.reason)).toEqual(expect.arrayContaining(['NodeStoppingForBackup', 'BackupReleased']));
  });

  it('a volume-snapshot backup of the leader: it resigns first, and stops only once another node leads', async () => {
    harness = new Harness();
    harness.api.seed(BACKUPS, backupObject('nightly-43', 'VolumeSnapshot', { phase: 'Running' }));
    await harness.start({ replicas: 3 });
    await harness.reconcile();
    await harness.runPod('orders-0', 'Leader');
    await harness.runPod('orders-1', 'Follower');
    await harness.runPod('orders-2', 'Follower');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/backup-hold': 'nightly-43/orders-0/Stop' } } });
    harness.requests.length = 0;
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-1', 'orders-2']);
    expect(harness.requests.filter((request) => request.method === 'POST').map((request) => `${request.url.hostname} ${request.url.pathname}`)).toEqual(['orders-0.test /admin/node/resign']);
    expect(harness.status().operation).toMatchObject({ kind: 'Backup', podStep: 'Resigning' });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-1', 'orders-2']);
    // the hand-over: orders-1 leads; now orders-0 stops for its snapshots
    harness.gossip.set('orders-0', 'Follower');
    harness.gossip.set('orders-1', 'Leader');
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-1', 'orders-2']);
    const reasons = harness.events.map((event) => event.reason);
    expect(reasons.indexOf('LeaderResignRequested')).toBeLessThan(reasons.indexOf('NodeStoppingForBackup'));
  });

  it('creates every node of a new three-node cluster at once, each started with the cluster size and the others as seeds', async () => {
    harness = new Harness();
    await harness.start({ replicas: 3 });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-1', 'orders-2']);
    const pod = harness.api.objects(PODS).find((candidate) => candidate.metadata.name === 'orders-1');
    const env = (pod?.['spec'] as { containers: { env: { name: string; value?: string }[] }[] }).containers[0]?.env ?? [];
    const value = (name: string): string | undefined => env.find((entry) => entry.name === name)?.value;
    expect(value('SERVICE_CLUSTER_SIZE')).toBe('3');
    expect(value('SERVICE_GOSSIP_SEED')).toBe('orders-0.orders-headless.shop.svc:2113,orders-2.orders-headless.shop.svc:2113');
    expect(value('SERVICE_NODE_HOST_ADVERTISE_AS')).toBe('orders-1.orders-headless.shop.svc');
    expect(value('SERVICE_DISCOVER_VIA_DNS')).toBe('false');
    expect(pod?.metadata.annotations?.['eventdb.io/cluster-size']).toBe('3');
    expect(harness.names(PDBS)).toEqual(['orders']);
    expect(harness.api.objects(PDBS)[0]?.['spec']).toMatchObject({ minAvailable: 2 });
  });

  it('changes nothing while paused, and still reports what it sees', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { paused: true, image: 'eventdb:next' } });
    harness.api.writes.length = 0;
    await harness.reconcile();
    expect(harness.api.writes.map((write) => `${write.verb} ${write.kind}${write.subresource ? '/status' : ''}`)).toEqual(['apply EventDBCluster/status']);
    expect(harness.status()).toMatchObject({ phase: 'Paused', leader: 'orders-0' });
  });

  it('waits for the maintenance window before restarting, and says when it opens', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, maintenanceWindows: [{ schedule: '0 2 * * 6', timeZone: 'Europe/Berlin', duration: '1h' }] });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { image: 'eventdb:next' } });
    const result = await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0']);
    expect(harness.status().nextMaintenanceWindow).toBe('2026-03-07T01:00:00.000Z');
    expect(harness.status().conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ reason: 'WaitingForMaintenanceWindow' });
    expect(result.requeueAfterMs).toBe(60_000);
  });

  it('grows the PVCs when spec.storage.data.size grows, reports the resize until the capacity follows, and says when none are left', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, storage: { data: { size: '1Gi' } } });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.patch(PVCS, 'shop', 'data-orders-0', { status: { capacity: { storage: '1Gi' } } }, { subresource: 'status' });
    await harness.reconcile();
    expect(harness.status().conditions?.find((condition) => condition.type === 'VolumesExpanded')).toMatchObject({ status: 'True', reason: 'VolumesAtSize' });
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { storage: { data: { size: '3Gi' } } } });
    const result = await harness.reconcile();
    const claim = harness.api.objects(PVCS).find((object) => object.metadata.name === 'data-orders-0');
    expect((claim?.['spec'] as { resources: { requests: { storage: string } } }).resources.requests.storage).toBe('3Gi');
    expect(harness.events.find((event) => event.reason === 'VolumeExpansionStarted')?.note).toBe('data-orders-0: request raised from 1Gi to 3Gi');
    expect(result.requeueAfterMs).toBeLessThanOrEqual(5000);
    // the CSI driver resized the volume; the kubelet has not grown the file system yet
    await harness.api.patch(PVCS, 'shop', 'data-orders-0', { status: { capacity: { storage: '1Gi' }, conditions: [{ type: 'FileSystemResizePending', status: 'True' }] } }, { subresource: 'status' });
    await harness.reconcile();
    let status = harness.status();
    expect(status.conditions?.find((condition) => condition.type === 'VolumesExpanded')).toMatchObject({ status: 'False', reason: 'Expanding', message: 'expanding data-orders-0: capacity 1Gi, FileSystemResizePending' });
    expect(status.conditions?.find((condition) => condition.type === 'Reconciling')).toMatchObject({ status: 'True', reason: 'ExpandingVolumes' });
    expect(status.phase).toBe('Ready');
    await harness.api.patch(PVCS, 'shop', 'data-orders-0', { status: { capacity: { storage: '3Gi' }, conditions: null } }, { subresource: 'status' });
    await harness.reconcile();
    status = harness.status();
    expect(status.conditions?.find((condition) => condition.type === 'VolumesExpanded')).toMatchObject({ status: 'True', reason: 'VolumesAtSize' });
    expect(status.conditions?.find((condition) => condition.type === 'Reconciling')).toMatchObject({ status: 'False' });
    expect(harness.events.map((event) => event.reason)).toContain('VolumesExpanded');
    expect(harness.events.filter((event) => event.reason === 'VolumeExpansionStarted')).toHaveLength(1);
  });

  it('reports a PVC the apiserver will not expand (StorageClass without allowVolumeExpansion) as Stalled, with one Warning Event', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1, storage: { data: { size: '1Gi' } } });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { storage: { data: { size: '3Gi' } } } });
    const refusal = 'persistentvolumeclaims "data-orders-0" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize';
    for (let i = 0; i < 3; i++) {
      harness.api.failNext.set('patch', new KubeApiError(403, 'Forbidden', refusal));
      await harness.reconcile();
    }
    const claim = harness.api.objects(PVCS).find((object) => object.metadata.name === 'data-orders-0');
    expect((claim?.['spec'] as { resources: { requests: { storage: string } } }).resources.requests.storage).toBe('1Gi');
    const status = harness.status();
    expect(status.conditions?.find((condition) => condition.type === 'VolumesExpanded')).toMatchObject({ status: 'False', reason: 'ExpansionRefused' });
    expect(status.conditions?.find((condition) => condition.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'VolumeExpansionRefused' });
    expect(status.conditions?.find((condition) => condition.type === 'Stalled')?.message).toContain('allowVolumeExpansion');
    expect(harness.events.filter((event) => event.reason === 'VolumeExpansionRefused')).toHaveLength(1);
  });

  it('switches over to the named follower: priorities set, the leader resigns, done when it leads; the annotation is cleared', async () => {
    harness = new Harness();
    await harness.start({ replicas: 3 });
    await harness.reconcile();
    await harness.runPod('orders-0', 'Leader');
    await harness.runPod('orders-1', 'Follower');
    await harness.runPod('orders-2', 'Follower');
    await harness.reconcile();
    expect(harness.status()).toMatchObject({ phase: 'Ready', leader: 'orders-0' });
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/switchover': 'orders-2', 'eventdb.io/switchover-now': 'true' } } });
    harness.requests.length = 0;
    await harness.reconcile();
    const posts = harness.requests.filter((request) => request.method === 'POST').map((request) => `${request.url.hostname.replace(/\.test$/, '')} ${request.url.pathname}`);
    expect(posts).toEqual(['orders-0 /admin/node/priority/0', 'orders-1 /admin/node/priority/0', 'orders-2 /admin/node/priority/100', 'orders-0 /admin/node/resign']);
    expect(harness.status().operation).toMatchObject({ kind: 'Switchover', pod: 'orders-2', previousLeader: 'orders-0' });
    expect(harness.events.map((event) => event.reason)).toContain('SwitchoverStarted');
    // the election: orders-2 leads
    harness.gossip.set('orders-0', 'Follower');
    harness.gossip.set('orders-2', 'Leader');
    await harness.reconcile();
    const status = harness.status();
    expect(status.operation).toBeUndefined();
    expect(status).toMatchObject({ leader: 'orders-2', lastOperation: { kind: 'Switchover', result: 'Succeeded' } });
    expect(harness.events.find((event) => event.reason === 'SwitchoverCompleted')?.note).toMatch(/^switchover to orders-2 completed in [0-9.]+ s \(resigned: orders-0\)$/);
    const annotations = harness.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.annotations ?? {};
    expect(annotations['eventdb.io/switchover']).toBeUndefined();
    expect(annotations['eventdb.io/switchover-now']).toBeUndefined();
  });

  it('refuses a switchover to a pod that does not exist, with a Warning Event, and clears the annotation without touching a node', async () => {
    harness = new Harness();
    await harness.start({ replicas: 3 });
    await harness.reconcile();
    await harness.runPod('orders-0', 'Leader');
    await harness.runPod('orders-1', 'Follower');
    await harness.runPod('orders-2', 'Follower');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/switchover': 'orders-9' } } });
    harness.requests.length = 0;
    await harness.reconcile();
    expect(harness.requests.filter((request) => request.method === 'POST')).toEqual([]);
    expect(harness.events.find((event) => event.reason === 'SwitchoverTargetNotFound')).toMatchObject({ type: 'Warning' });
    expect(harness.api.objects(EVENTDB_CLUSTERS)[0]?.metadata.annotations?.['eventdb.io/switchover']).toBeUndefined();
    expect(harness.status().operation).toBeUndefined();
  });

  it('hibernates: followers stop first, the leader last after it resigned, PVCs and Secrets kept, phase Hibernated; waking brings every node back on the same PVCs', async () => {
    harness = new Harness();
    await harness.start({ replicas: 3 });
    await harness.reconcile();
    await harness.runPod('orders-0', 'Follower');
    await harness.runPod('orders-1', 'Leader');
    await harness.runPod('orders-2', 'Follower');
    await harness.reconcile();
    expect(harness.status().phase).toBe('Ready');
    const claimUids = harness.api.objects(PVCS).map((claim) => claim.metadata.uid).sort();
    const secrets = harness.names(SECRETS);
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { hibernation: true } });
    harness.requests.length = 0;
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-1']);
    expect(harness.requests.filter((request) => request.method === 'POST')).toEqual([]);
    expect(harness.status().phase).toBe('Hibernating');
    harness.gossip.delete('orders-0');
    harness.gossip.delete('orders-2');
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.requests.filter((request) => request.method === 'POST').map((request) => `${request.url.hostname} ${request.url.pathname}`)).toEqual(['orders-1.test /admin/node/resign']);
    harness.gossip.delete('orders-1');
    await harness.reconcile();
    await harness.reconcile();
    const status = harness.status();
    expect(status.phase).toBe('Hibernated');
    expect(status.conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Hibernated' });
    expect(status.conditions?.find((condition) => condition.type === 'Reconciling')).toMatchObject({ status: 'False', reason: 'Hibernated' });
    expect(harness.names(PODS)).toEqual([]);
    expect(harness.api.objects(PVCS).map((claim) => claim.metadata.uid).sort()).toEqual(claimUids);
    expect(harness.names(SECRETS)).toEqual(secrets);
    const reasons = harness.events.map((event) => event.reason);
    expect(reasons.filter((reason) => reason === 'NodeStoppingForHibernation')).toHaveLength(3);
    expect(reasons.filter((reason) => reason === 'Hibernated')).toHaveLength(1);
    // wake
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { spec: { hibernation: false } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-1', 'orders-2']);
    expect(harness.api.objects(PVCS).map((claim) => claim.metadata.uid).sort()).toEqual(claimUids);
    expect(harness.events.map((event) => event.reason)).toContain('ClusterWaking');
    await harness.runPod('orders-0', 'Follower');
    await harness.runPod('orders-1', 'Leader');
    await harness.runPod('orders-2', 'Follower');
    await harness.reconcile();
    expect(harness.status().phase).toBe('Ready');
  });

  it('fences a follower: its pod is stopped and not recreated, the PVC kept; below quorum refused without force; unfencing starts it again', async () => {
    harness = new Harness();
    await harness.start({ replicas: 3 });
    await harness.reconcile();
    await harness.runPod('orders-0', 'Leader');
    await harness.runPod('orders-1', 'Follower');
    await harness.runPod('orders-2', 'Follower');
    await harness.reconcile();
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/fenced': '["orders-1"]' } } });
    await harness.reconcile();
    harness.gossip.delete('orders-1');
    for (let i = 0; i < 3; i++) await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-2']);
    expect(harness.names(PVCS)).toEqual(['data-orders-0', 'data-orders-1', 'data-orders-2']);
    let status = harness.status();
    expect(status.conditions?.find((condition) => condition.type === 'Fenced')).toMatchObject({ status: 'True', reason: 'NodesFenced', message: 'fenced: orders-1' });
    expect(status.leader).toBe('orders-0');
    expect(harness.events.filter((event) => event.reason === 'NodeFenced')).toHaveLength(1);
    expect(harness.events.map((event) => event.reason)).not.toContain('NodeRecreated');
    // a second voting node: below quorum, refused without force; nothing more is stopped
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/fenced': '["orders-1","orders-2"]' } } });
    await harness.reconcile();
    await harness.reconcile();
    // orders-1 stays fenced (a refused addition unfences nothing), orders-2 runs on
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-2']);
    status = harness.status();
    expect(status.conditions?.find((condition) => condition.type === 'Fenced')).toMatchObject({ status: 'False', reason: 'FencingBelowQuorum' });
    expect(harness.events.filter((event) => event.reason === 'FencingBelowQuorum')).toHaveLength(1);
    // unfenced: the node starts again on its PVC
    await harness.api.patch(EVENTDB_CLUSTERS, 'shop', 'orders', { metadata: { annotations: { 'eventdb.io/fenced': null } } });
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0', 'orders-1', 'orders-2']);
  });

  it('recreates a pod someone deleted, on the same PVC', async () => {
    harness = new Harness();
    await harness.start({ replicas: 1 });
    await harness.reconcile();
    await harness.runPod('orders-0');
    await harness.reconcile();
    await harness.api.delete(PODS, 'shop', 'orders-0');
    await harness.reconcile();
    expect(harness.names(PODS)).toEqual(['orders-0']);
    expect(harness.names(PVCS)).toEqual(['data-orders-0']);
    expect(harness.events.map((event) => event.reason)).toContain('NodeRecreated');
  });
});

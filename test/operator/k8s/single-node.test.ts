// A one-node EventDBCluster on the kind cluster, with the operator installed from the chart in the
// cluster (watching every namespace: each test makes its own), reaching the node by pod IP over
// https. EVENTDB_K8S_LOCAL_OPERATOR=1 runs a local process instead (port-forwards; debugging only).
import { createHash, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ctx, deleteNamespace, kubectl, sleep, useNamespace, waitFor } from '../../k8s/helpers.js';
import {
  SMALL_CLUSTER,
  applyCluster,
  clusterPods,
  getCluster,
  installCrds,
  lastJsonLine,
  patchCluster,
  readyCondition,
  runInCluster,
  secretValue,
  startOperator,
  startWriters,
  tagNodeImage,
  waitClusterReady,
  writeThenReadScript,
  type OperatorUnderTest,
} from './operator-support.js';


describe.skipIf(ctx().skipReason !== '')('a one-node EventDBCluster, operator installed from the chart', () => {
  const namespace = useNamespace('edb-one');
  let operator: OperatorUnderTest | undefined;
  beforeAll(async () => {
    installCrds();
    operator = await startOperator({ watchNamespaces: [] });
  }, 400_000);
  afterAll(async () => {
    await operator?.stop();
    operator = undefined;
  }, 400_000);

  async function writeAndRead(stream: string, n: number): Promise<{ written: number; reads: Record<string, unknown> }> {
    const ns = namespace();
    const password = await secretValue(ns, 'orders-admin', 'password');
    const script = writeThenReadScript({
      writeUrl: 'https://orders-leader:2113',
      readUrls: ['https://orders:2113', `https://orders-0.orders-headless.${ns}.svc:2113`],
      stream,
      n,
    });
    return lastJsonLine(await runInCluster(ns, `probe-${stream}`, script, { EVENTDB_PASSWORD: password }));
  }

  it('becomes Ready, shows in kubectl get edb, and serves a write through <cluster>-leader on every address', async () => {
    const ns = namespace();
    expect(applyCluster(ns, 'orders', SMALL_CLUSTER).status).toBe(0);
    const cluster = await waitClusterReady(ns, 'orders');
    expect(cluster.status).toMatchObject({ phase: 'Ready', replicas: 1, readyReplicas: 1, leader: 'orders-0', image: ctx().image });
    expect(cluster.status?.members?.[0]).toMatchObject({ pod: 'orders-0', role: 'Leader', alive: true });
    // Through the port-forward, over https verified under the pod's name: the certificate of the Secret.
    const certificate = new X509Certificate(await secretValue(ns, 'orders-node-tls', 'tls.crt'));
    expect(cluster.status?.members?.[0]?.certificateFingerprint).toBe(`sha256:${createHash('sha256').update(certificate.raw).digest('hex')}`);
    expect(cluster.status?.conditions?.find((condition) => condition.type === 'CertificatesReloaded')).toMatchObject({ status: 'True' });
    const row = kubectl(['get', 'edb', 'orders', '-n', ns, '--no-headers']).stdout.trim().split(/\s+/);
    expect(row.slice(0, 6)).toEqual(['orders', '1', '1', 'orders-0', 'Ready', ctx().image]);
    expect((await clusterPods(ns, 'orders'))[0]?.role).toBe('leader');
    expect(kubectl(['wait', '--for=condition=Ready', '--timeout=10s', 'edb/orders', '-n', ns]).status).toBe(0);
    const result = await writeAndRead('first', 1);
    expect(result.written).toBe(201);
    expect(Object.values(result.reads)).toEqual([{ n: 1 }, { n: 1 }]);
  });

  it('restarts the node for a configuration change, records the operation, and keeps its data', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    expect((await writeAndRead('kept', 7)).written).toBe(201);
    const before = await clusterPods(ns, 'orders');
    await patchCluster(ns, 'orders', { spec: { configuration: { MaxMemTableSize: 5000 } } });
    const seen = await waitFor('the rolling update in status.operation', async () => (await getCluster(ns, 'orders'))?.status?.operation, 60_000, 250);
    expect(seen).toMatchObject({ kind: 'RollingUpdate', reason: 'ConfigurationChanged' });
    const after = await waitClusterReady(ns, 'orders');
    expect(after.status?.lastOperation).toMatchObject({ kind: 'RollingUpdate', result: 'Succeeded' });
    expect((await clusterPods(ns, 'orders'))[0]?.uid).not.toBe(before[0]?.uid);
    const config = kubectl(['get', 'configmap', 'orders-config', '-n', ns, '-o', 'jsonpath={.data.eventdb\\.conf}']).stdout;
    expect(config).toContain('MaxMemTableSize: 5000');
    const reads = await writeAndRead('kept', 8);
    expect(Object.values(reads.reads)).toEqual([{ n: 7 }, { n: 7 }]);
    const events = kubectl(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.kind=EventDBCluster', '-o', 'jsonpath={.items[*].reason}']).stdout;
    expect(events).toContain('RollingUpdateStarted');
    expect(events).toContain('NodeRestarting');
    expect(events).toContain('RollingUpdateCompleted');
  });

  it('changes image and configuration while 16 writers append: one restart, no acknowledged write lost', async () => {
    const ns = namespace();
    const newImage = tagNodeImage('dev-b');
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    const before = await clusterPods(ns, 'orders');
    const writers = await startWriters(ns, {
      name: 'writers',
      writeUrl: 'https://orders-leader:2113',
      readUrls: ['https://orders:2113', `https://orders-0.orders-headless.${ns}.svc:2113`],
      writers: 16,
      password: await secretValue(ns, 'orders-admin', 'password'),
    });
    await sleep(5000);
    await patchCluster(ns, 'orders', { spec: { image: newImage, configuration: { MaxMemTableSize: 9000 } } });
    const after = await waitFor('the rolling update to finish', async () => {
      const cluster = await getCluster(ns, 'orders');
      return cluster?.status?.lastOperation !== undefined && cluster.status.operation === undefined ? cluster : undefined;
    }, 300_000, 1000);
    await waitClusterReady(ns, 'orders');
    await sleep(5000);
    const summary = await writers.stop();
    const pods = await clusterPods(ns, 'orders');
    expect(pods).toHaveLength(1);
    expect(pods[0]?.uid).not.toBe(before[0]?.uid);
    expect(pods[0]?.image).toBe(newImage);
    expect((await getCluster(ns, 'orders'))?.status?.image).toBe(newImage);
    expect(after.status?.lastOperation).toMatchObject({ kind: 'RollingUpdate', result: 'Succeeded' });
    expect(summary.acked).toBeGreaterThan(100);
    expect(summary.missing).toEqual({ 'https://orders:2113': 0, [`https://orders-0.orders-headless.${ns}.svc:2113`]: 0 });
    process.stdout.write(`[single-node rollout] acked ${summary.acked} writes, ${summary.failedAttempts} failed attempts, longest gap ${summary.maxGapMs} ms\n`);
  });

  it('restarts for a new eventdb.io/restartedAt value, and once only', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    const before = await clusterPods(ns, 'orders');
    expect(kubectl(['annotate', 'edb/orders', '-n', ns, 'eventdb.io/restartedAt=2026-03-04T10:00:00Z']).status).toBe(0);
    await waitFor('the restart', async () => (await clusterPods(ns, 'orders'))[0]?.uid !== before[0]?.uid, 120_000);
    const after = await waitClusterReady(ns, 'orders');
    const uid = (await clusterPods(ns, 'orders'))[0]?.uid;
    expect(after.status?.restartedAt).toBe('2026-03-04T10:00:00Z');
    await sleep(10_000);
    expect((await clusterPods(ns, 'orders'))[0]?.uid).toBe(uid);
  });

  it('changes nothing while paused, and applies the change once unpaused', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    const before = await clusterPods(ns, 'orders');
    await patchCluster(ns, 'orders', { spec: { paused: true, configuration: { MaxMemTableSize: 4000 } } });
    await waitFor('phase Paused', async () => (await getCluster(ns, 'orders'))?.status?.phase === 'Paused', 60_000);
    await sleep(10_000);
    expect((await clusterPods(ns, 'orders'))[0]?.uid).toBe(before[0]?.uid);
    expect(kubectl(['get', 'configmap', 'orders-config', '-n', ns, '-o', 'jsonpath={.data.eventdb\\.conf}']).stdout).not.toContain('4000');
    await patchCluster(ns, 'orders', { spec: { paused: false } });
    await waitFor('the restart', async () => (await clusterPods(ns, 'orders'))[0]?.uid !== before[0]?.uid, 120_000);
    await waitClusterReady(ns, 'orders');
  });

  it('with updateStrategy Supervised, waits for the approve annotation naming the operation', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', { ...SMALL_CLUSTER, updateStrategy: 'Supervised' });
    await waitClusterReady(ns, 'orders');
    const before = await clusterPods(ns, 'orders');
    await patchCluster(ns, 'orders', { spec: { configuration: { MaxMemTableSize: 3000 } } });
    const waiting = await waitFor('WaitingForApproval', async () => {
      const cluster = await getCluster(ns, 'orders');
      return readyCondition(cluster)?.reason === 'WaitingForApproval' ? cluster : undefined;
    }, 60_000);
    const id = waiting.status?.operation?.id ?? '';
    expect(readyCondition(waiting)?.message).toContain(`eventdb.io/approve: ${id}`);
    await sleep(8000);
    expect((await clusterPods(ns, 'orders'))[0]?.uid).toBe(before[0]?.uid);
    expect(kubectl(['annotate', 'edb/orders', '-n', ns, `eventdb.io/approve=${id}`]).status).toBe(0);
    await waitFor('the restart', async () => (await clusterPods(ns, 'orders'))[0]?.uid !== before[0]?.uid, 120_000);
    await waitClusterReady(ns, 'orders');
  });

  it('waits for the maintenance window, and says when it opens', async () => {
    const ns = namespace();
    // A window one hour from now, for one minute: closed during the test.
    const opens = new Date(Date.now() + 3_600_000);
    const schedule = `${opens.getUTCMinutes()} ${opens.getUTCHours()} * * *`;
    applyCluster(ns, 'orders', { ...SMALL_CLUSTER, maintenanceWindows: [{ schedule, timeZone: 'UTC', duration: '1m' }] });
    await waitClusterReady(ns, 'orders');
    const before = await clusterPods(ns, 'orders');
    await patchCluster(ns, 'orders', { spec: { configuration: { MaxMemTableSize: 2000 } } });
    const waiting = await waitFor('WaitingForMaintenanceWindow', async () => {
      const cluster = await getCluster(ns, 'orders');
      return readyCondition(cluster)?.reason === 'WaitingForMaintenanceWindow' ? cluster : undefined;
    }, 60_000);
    expect(Date.parse(waiting.status?.nextMaintenanceWindow ?? '')).toBe(Math.floor(opens.getTime() / 60_000) * 60_000);
    await sleep(8000);
    expect((await clusterPods(ns, 'orders'))[0]?.uid).toBe(before[0]?.uid);
    // Opening the window now lets the update go on.
    const now = new Date(Date.now() - 60_000);
    await patchCluster(ns, 'orders', { spec: { maintenanceWindows: [{ schedule: `${now.getUTCMinutes()} ${now.getUTCHours()} * * *`, timeZone: 'UTC', duration: '30m' }] } });
    await waitFor('the restart', async () => (await clusterPods(ns, 'orders'))[0]?.uid !== before[0]?.uid, 120_000);
    await waitClusterReady(ns, 'orders');
  });

  it('reports a spec it cannot act on, naming the field, and makes nothing', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', { ...SMALL_CLUSTER, maintenanceWindows: [{ schedule: '0 2 * * 6', timeZone: 'Mars/Olympus', duration: '1h' }] });
    const cluster = await waitFor('InvalidSpec', async () => {
      const current = await getCluster(ns, 'orders');
      return readyCondition(current)?.reason === 'InvalidSpec' ? current : undefined;
    }, 60_000);
    expect(readyCondition(cluster)?.message).toContain('spec.maintenanceWindows[0].timeZone');
    expect(cluster.status?.conditions?.find((condition) => condition.type === 'Stalled')?.status).toBe('True');
    expect(cluster.status?.phase).toBe('Failed');
    expect(await clusterPods(ns, 'orders')).toEqual([]);
  });

  it('remakes a pod someone deleted, on the same volume with its data', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    expect((await writeAndRead('survives', 3)).written).toBe(201);
    const before = await clusterPods(ns, 'orders');
    expect(kubectl(['delete', 'pod', 'orders-0', '-n', ns, '--wait=false']).status).toBe(0);
    await waitFor('a new orders-0', async () => {
      const pods = await clusterPods(ns, 'orders');
      return pods[0] !== undefined && pods[0].uid !== before[0]?.uid;
    }, 120_000);
    await waitClusterReady(ns, 'orders');
    const reads = await writeAndRead('survives', 4);
    expect(Object.values(reads.reads)).toEqual([{ n: 3 }, { n: 3 }]);
  });

  it('leaves nothing behind when its namespace is deleted: no pod, no PVC, no finalizer', async () => {
    const ns = namespace();
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    const cluster = await getCluster(ns, 'orders');
    expect(cluster?.metadata).not.toHaveProperty('finalizers');
    expect(kubectl(['delete', 'edb', 'orders', '-n', ns, '--wait=true', '--timeout=120s']).status).toBe(0);
    await waitFor('the children to go with the cluster', async () => {
      const pods = await api().get<{ items: unknown[] }>(`/api/v1/namespaces/${ns}/pods`);
      const claims = await api().get<{ items: unknown[] }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims`);
      const services = await api().get<{ items: unknown[] }>(`/api/v1/namespaces/${ns}/services?labelSelector=eventdb.io%2Fcluster%3Dorders`);
      return pods?.items.length === 0 && claims?.items.length === 0 && services?.items.length === 0;
    }, 180_000, 1000);
    // And a whole namespace with a running cluster goes, while the operator watches it.
    applyCluster(ns, 'again', SMALL_CLUSTER);
    await waitClusterReady(ns, 'again');
    await deleteNamespace(ns, 180_000);
    expect(await operator?.healthy()).toBe(true);
  });
});

// A three-node EventDBCluster with the operator in the cluster from its image (two replicas):
// Ready with one leader, every node serving TLS with the operator's certificate; a write through <cluster>-leader readable through every pod; an image
// and configuration change with 16 writers (followers one at a time, then the leader after it
// resigned; no acknowledged write lost); scaling 3 -> 5 -> 3 -> 1 -> 3 with the acting operator
// killed mid-scale. Nothing here is skipped when the nodes do not form a cluster: the tests fail.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createNamespace, ctx, deleteNamespace, kubectl, sleep, waitFor } from '../../k8s/helpers.js';
import {
  applyCluster,
  clusterPods,
  getCluster,
  createOperatorNamespace,
  installCrds,
  installOperatorRelease,
  lastJsonLine,
  patchCluster,
  removeOperatorRelease,
  runInCluster,
  secretValue,
  startWriters,
  tagNodeImage,
  waitClusterReady,
  writeThenReadScript,
  type PodSnapshot,
  type WritersSummary,
} from './operator-support.js';

const SPEC = { replicas: 3, storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '20m', memory: '128Mi' } } };

describe.skipIf(ctx().skipReason !== '')('a three-node EventDBCluster, operator in the cluster', () => {
  let ns = '';
  let operatorNamespace = '';

  beforeAll(async () => {
    installCrds();
    ns = await createNamespace('edb-three');
    operatorNamespace = await createOperatorNamespace();
    installOperatorRelease(operatorNamespace, [ns]);
    expect(applyCluster(ns, 'orders', SPEC).status).toBe(0);
  }, 900_000);

  afterAll(async () => {
    if (operatorNamespace !== '') await removeOperatorRelease(operatorNamespace);
    if (ns !== '') await deleteNamespace(ns, 300_000);
  }, 600_000);

  async function leaderOf(): Promise<string | undefined> {
    return (await getCluster(ns, 'orders'))?.status?.leader;
  }

  it('is Ready with one leader, and a write through <cluster>-leader is readable through every pod', async () => {
    const cluster = await waitClusterReady(ns, 'orders');
    expect(cluster.status).toMatchObject({ phase: 'Ready', replicas: 3, readyReplicas: 3 });
    const pods = await clusterPods(ns, 'orders');
    expect(pods.filter((pod) => pod.role === 'leader').map((pod) => pod.name)).toEqual([cluster.status?.leader]);
    expect(pods.filter((pod) => pod.role === 'follower')).toHaveLength(2);
    const row = kubectl(['get', 'edb', 'orders', '-n', ns, '--no-headers']).stdout.trim().split(/\s+/);
    expect(row.slice(0, 5)).toEqual(['orders', '3', '3', cluster.status?.leader ?? '', 'Ready']);
    // TLS by default: every node serves the certificate of the operator's Secret, and says so.
    const served = `sha256:${crypto.createHash('sha256').update(new crypto.X509Certificate(await secretValue(ns, 'orders-node-tls', 'tls.crt')).raw).digest('hex')}`;
    expect(cluster.status?.members?.map((member) => member.certificateFingerprint)).toEqual([served, served, served]);
    // CurrentCertificateServed when first seen; CertificatesReloaded (with the Secret hash and time)
    // once the operator has verified the nodes against the Secret it rotates from.
    const certificates = cluster.status?.conditions?.find((condition) => condition.type === 'CertificatesReloaded');
    expect(certificates?.status).toBe('True');
    expect(['CurrentCertificateServed', 'CertificatesReloaded']).toContain(certificates?.reason);
    expect(cluster.status?.certificates).toMatchObject({ servedByNodes: true });
    const password = await secretValue(ns, 'orders-admin', 'password');
    const readUrls = pods.map((pod) => `https://${pod.name}.orders-headless.${ns}.svc:2113`);
    const script = writeThenReadScript({ writeUrl: 'https://orders-leader:2113', readUrls, stream: 'everywhere', n: 42 });
    const result = lastJsonLine<{ written: number; reads: Record<string, unknown> }>(await runInCluster(ns, 'probe-everywhere', script, { EVENTDB_PASSWORD: password }));
    expect(result.written).toBe(201);
    expect(Object.values(result.reads)).toEqual([{ n: 42 }, { n: 42 }, { n: 42 }]);
  });

  it('rolls an image and configuration change: followers one at a time, then the leader after it resigned; no acknowledged write lost', async () => {
    await waitClusterReady(ns, 'orders');
    const newImage = tagNodeImage('dev-c');
    const leaderBefore = await leaderOf();
    const pods = await clusterPods(ns, 'orders');
    const writers = await startWriters(ns, {
      name: 'writers-rollout',
      writeUrl: 'https://orders-leader:2113',
      readUrls: pods.map((pod) => `https://${pod.name}.orders-headless.${ns}.svc:2113`),
      writers: 16,
      password: await secretValue(ns, 'orders-admin', 'password'),
    });
    await sleep(5000);
    await patchCluster(ns, 'orders', { spec: { image: newImage, configuration: { MaxMemTableSize: 9000 } } });
    // Watch the restarts: which pod, in which order, what role it had, and how many voting pods were down.
    const uids = new Map(pods.map((pod) => [pod.name, pod.uid]));
    const order: { pod: string; roleBefore: string | undefined }[] = [];
    const leaders: string[] = [];
    let roles = new Map<string, string | undefined>(pods.map((pod) => [pod.name, pod.role]));
    let mostDown = 0;
    await waitFor('the rolling update to finish', async () => {
      const now: PodSnapshot[] = await clusterPods(ns, 'orders');
      for (const [name, uid] of uids) {
        const current = now.find((pod) => pod.name === name);
        if (current?.uid !== uid && !order.some((entry) => entry.pod === name)) order.push({ pod: name, roleBefore: roles.get(name) });
      }
      const ready = await api().get<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(`/api/v1/namespaces/${ns}/pods?labelSelector=eventdb.io%2Fnode-kind%3Dquorum`);
      const readyCount = (ready?.items ?? []).filter((pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
      mostDown = Math.max(mostDown, 3 - readyCount);
      roles = new Map(now.map((pod) => [pod.name, pod.role]));
      const leader = await leaderOf();
      if (leader !== undefined && leaders.at(-1) !== leader) leaders.push(leader);
      const cluster = await getCluster(ns, 'orders');
      return order.length === 3 && cluster?.status?.operation === undefined && cluster?.status?.lastOperation !== undefined ? true : undefined;
    }, 900_000, 500);
    await waitClusterReady(ns, 'orders');
    const summary = await writers.stop();
    process.stdout.write(`[three-node rollout] order ${order.map((entry) => `${entry.pod}(${entry.roleBefore})`).join(' ')}, leaders ${leaders.join(' -> ')}, acked ${summary.acked}, longest gap ${summary.maxGapMs} ms\n`);
    expect(order.slice(0, 2).every((entry) => entry.roleBefore === 'follower')).toBe(true);
    expect(order[2]?.pod).toBe(leaderBefore);
    expect(leaders.length).toBeGreaterThanOrEqual(2);
    expect(mostDown).toBeLessThanOrEqual(1);
    const events = kubectl(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.kind=EventDBCluster', '-o', 'jsonpath={.items[*].reason}']).stdout;
    expect(events).toContain('LeaderResignRequested');
    expect((await clusterPods(ns, 'orders')).every((pod) => pod.image === newImage)).toBe(true);
    expect(summary.acked).toBeGreaterThan(100);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
  });

  function scaleWriters(name: string): Promise<{ stop(): Promise<WritersSummary> }> {
    return secretValue(ns, 'orders-admin', 'password').then((password) =>
      startWriters(ns, {
        name,
        writeUrl: 'https://orders-leader:2113',
        readUrls: ['https://orders-0.orders-headless.' + ns + '.svc:2113', 'https://orders:2113'],
        writers: 16,
        password,
      }),
    );
  }

  it('scales 3 -> 5 with writers running, the acting operator killed mid-scale (the new one resumes from status.operation)', async () => {
    await waitClusterReady(ns, 'orders');
    const writers = await scaleWriters('writers-scale-up');
    expect(kubectl(['scale', 'edb/orders', '-n', ns, '--replicas=5']).status).toBe(0);
    const operation = await waitFor('the scale in status.operation', async () => (await getCluster(ns, 'orders'))?.status?.operation, 120_000, 500);
    expect(operation).toMatchObject({ kind: 'Scale', fromReplicas: 3, toReplicas: 5 });
    const holder = (await api().get<{ spec?: { holderIdentity?: string } }>(`/apis/coordination.k8s.io/v1/namespaces/${operatorNamespace}/leases/eventdb-operator`))?.spec?.holderIdentity ?? '';
    expect(kubectl(['delete', 'pod', holder, '-n', operatorNamespace, '--grace-period=0', '--force']).status).toBe(0);
    const five = await waitClusterReady(ns, 'orders', 900_000);
    expect(five.status).toMatchObject({ replicas: 5, readyReplicas: 5, clusterSize: 5 });
    expect(five.status?.lastOperation).toMatchObject({ id: operation.id, kind: 'Scale', result: 'Succeeded' });
    expect((await clusterPods(ns, 'orders')).filter((pod) => pod.role === 'leader')).toHaveLength(1);
    const summary = await writers.stop();
    process.stdout.write(`[three-node scale 3->5] acked ${summary.acked}, longest gap ${summary.maxGapMs} ms\n`);
    expect(summary.acked).toBeGreaterThan(100);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
  });

  it('scales 5 -> 3 with writers running; the removed nodes\' PVCs stay', async () => {
    await waitClusterReady(ns, 'orders');
    const writers = await scaleWriters('writers-scale-down');
    expect(kubectl(['scale', 'edb/orders', '-n', ns, '--replicas=3']).status).toBe(0);
    await waitFor('the scale down to start', async () => (await getCluster(ns, 'orders'))?.status?.operation !== undefined, 120_000, 500);
    const three = await waitClusterReady(ns, 'orders', 420_000);
    expect(three.status).toMatchObject({ replicas: 3, readyReplicas: 3, clusterSize: 3 });
    expect((await clusterPods(ns, 'orders')).map((pod) => pod.name)).toEqual(['orders-0', 'orders-1', 'orders-2']);
    expect(kubectl(['get', 'pvc', 'data-orders-3', 'data-orders-4', '-n', ns]).status).toBe(0);
    const summary = await writers.stop();
    process.stdout.write(`[three-node scale 5->3] acked ${summary.acked}, longest gap ${summary.maxGapMs} ms\n`);
    expect(summary.acked).toBeGreaterThan(100);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
  });

  it('scales 3 -> 1 -> 3 keeping every acknowledged write', async () => {
    await waitClusterReady(ns, 'orders', 120_000);
    const password = await secretValue(ns, 'orders-admin', 'password');
    const written = lastJsonLine<{ written: number }>(await runInCluster(ns, 'probe-before-one', writeThenReadScript({ writeUrl: 'https://orders-leader:2113', readUrls: [], stream: 'through-one', n: 1 }), { EVENTDB_PASSWORD: password }));
    expect(written.written).toBe(201);
    expect(kubectl(['scale', 'edb/orders', '-n', ns, '--replicas=1']).status).toBe(0);
    await waitFor('the scale to start', async () => (await getCluster(ns, 'orders'))?.status?.operation !== undefined, 120_000, 500);
    const one = await waitClusterReady(ns, 'orders', 900_000);
    expect(one.status).toMatchObject({ replicas: 1, readyReplicas: 1, leader: 'orders-0', clusterSize: 1 });
    expect(kubectl(['scale', 'edb/orders', '-n', ns, '--replicas=3']).status).toBe(0);
    await waitFor('the scale to start', async () => (await getCluster(ns, 'orders'))?.status?.operation !== undefined, 120_000, 500);
    await waitClusterReady(ns, 'orders', 900_000);
    const pods = await clusterPods(ns, 'orders');
    const script = writeThenReadScript({ writeUrl: 'https://orders-leader:2113', readUrls: pods.map((pod) => `https://${pod.name}.orders-headless.${ns}.svc:2113`), stream: 'through-one', n: 2 });
    const after = lastJsonLine<{ reads: Record<string, unknown> }>(await runInCluster(ns, 'probe-after-one', script, { EVENTDB_PASSWORD: password }));
    expect(Object.values(after.reads)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }]);
  });

  it('leaves nothing behind when its namespace is deleted: no pod on any kubelet, no PVC or volume, no finalizer', async () => {
    // Whatever state the tests above left the cluster in (its pods run).
    await waitFor('the cluster\'s pods to run', async () => (await clusterPods(ns, 'orders')).length >= 1 ? true : undefined, 120_000, 1000);
    expect((await getCluster(ns, 'orders'))?.metadata).not.toHaveProperty('finalizers');
    const claims = await api().get<{ items: { spec?: { volumeName?: string } }[] }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims`);
    const volumes = (claims?.items ?? []).map((claim) => claim.spec?.volumeName).filter((name): name is string => name !== undefined);
    expect(volumes.length).toBeGreaterThanOrEqual(3);
    const gone = ns;
    await deleteNamespace(gone, 300_000);
    ns = '';
    // What the kubelets run (their own pod lists), not only what the apiserver says.
    const nodes = await api().get<{ items: { metadata: { name: string } }[] }>('/api/v1/nodes');
    for (const node of nodes?.items ?? []) {
      const running = await api().get<{ items: { metadata: { namespace: string } }[] }>(`/api/v1/nodes/${node.metadata.name}/proxy/pods`);
      expect((running?.items ?? []).filter((pod) => pod.metadata.namespace === gone)).toEqual([]);
    }
    await waitFor('the volumes of the deleted claims to go', async () => {
      const all = await api().get<{ items: { metadata: { name: string } }[] }>('/api/v1/persistentvolumes');
      return (all?.items ?? []).every((volume) => !volumes.includes(volume.metadata.name));
    }, 180_000, 2000);
    expect(kubectl(['get', 'edb', '-A', '-o', 'jsonpath={.items[*].metadata.namespace}']).stdout).not.toContain(gone);
  });
});

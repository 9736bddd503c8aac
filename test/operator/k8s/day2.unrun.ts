// NOT YET RUN ON KIND (issue 33): written with the day-2 steps, but no kind run fitted in the session that wrote it.
// Rename it back to day2.test.ts (the k8s tier then runs it) once it has passed on kind.
// Day-2 operations on a three-node EventDBCluster, operator in the cluster: a switchover to a
// named follower under writers (no acknowledged write lost), fencing a follower (the cluster keeps
// serving, unfence brings it back), hibernate and wake (the events written before are all there),
// and growing storage.data.size on this test cluster's StorageClass, which does not allow
// expansion (allowVolumeExpansion: false, no csi-resizer): the refusal is a condition, Stalled
// and an Event, not silence.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createNamespace, ctx, deleteNamespace, kubectl, waitFor } from '../../k8s/helpers.js';
import {
  applyCluster,
  clusterPods,
  createOperatorNamespace,
  getCluster,
  installCrds,
  installOperatorRelease,
  lastJsonLine,
  patchCluster,
  removeOperatorRelease,
  runInCluster,
  secretValue,
  startWriters,
  waitClusterReady,
  writeThenReadScript,
} from './operator-support.js';

const SPEC = { replicas: 3, storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '20m', memory: '128Mi' } } };

describe.skipIf(ctx().skipReason !== '')('day-2 operations on a three-node EventDBCluster', () => {
  let ns = '';
  let operatorNamespace = '';

  beforeAll(async () => {
    installCrds();
    ns = await createNamespace('edb-day2');
    operatorNamespace = await createOperatorNamespace();
    installOperatorRelease(operatorNamespace, [ns]);
    expect(applyCluster(ns, 'orders', SPEC).status).toBe(0);
  }, 900_000);

  afterAll(async () => {
    if (operatorNamespace !== '') await removeOperatorRelease(operatorNamespace);
    if (ns !== '') await deleteNamespace(ns, 300_000);
  }, 600_000);

  function clusterEvents(): string {
    return kubectl(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.kind=EventDBCluster', '-o', 'jsonpath={range .items[*]}{.reason}: {.note}{.message}{"\\n"}{end}']).stdout;
  }

  async function readEverywhere(stream: string, n: number): Promise<{ written: unknown; reads: Record<string, unknown> }> {
    const pods = await clusterPods(ns, 'orders');
    const readUrls = pods.map((pod) => `https://${pod.name}.orders-headless.${ns}.svc:2113`);
    const script = writeThenReadScript({ writeUrl: 'https://orders-leader:2113', readUrls, stream, n });
    return lastJsonLine(await runInCluster(ns, `probe-${stream}`, script, { EVENTDB_PASSWORD: await secretValue(ns, 'orders-admin', 'password') }));
  }

  it('switches over to a named follower under writers: it leads, the annotation is cleared, no acknowledged write lost', async () => {
    const before = await waitClusterReady(ns, 'orders');
    const leader = before.status?.leader ?? '';
    const target = ['orders-0', 'orders-1', 'orders-2'].filter((name) => name !== leader).sort().at(-1) ?? '';
    const pods = await clusterPods(ns, 'orders');
    const writers = await startWriters(ns, {
      name: 'writers-switchover',
      writeUrl: 'https://orders-leader:2113',
      readUrls: pods.map((pod) => `https://${pod.name}.orders-headless.${ns}.svc:2113`),
      writers: 8,
      password: await secretValue(ns, 'orders-admin', 'password'),
    });
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const startedMs = Date.now();
    kubectl(['annotate', 'edb', 'orders', '-n', ns, `eventdb.io/switchover=${target}`, 'eventdb.io/switchover-now=true']);
    await waitFor(`${target} to lead and the annotation to go`, async () => {
      const cluster = await getCluster(ns, 'orders');
      const annotations = (cluster as { metadata?: { annotations?: Record<string, string> } } | undefined)?.metadata?.annotations ?? {};
      return cluster?.status?.leader === target && annotations['eventdb.io/switchover'] === undefined ? true : undefined;
    }, 240_000, 1000);
    const seconds = (Date.now() - startedMs) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const summary = await writers.stop();
    process.stdout.write(`[day2 switchover] ${leader} -> ${target} in ${seconds.toFixed(1)} s; acked ${summary.acked}, failed attempts ${summary.failedAttempts}, longest gap ${summary.maxGapMs} ms\n`);
    expect(clusterEvents()).toMatch(new RegExp(`SwitchoverCompleted: switchover to ${target} completed`));
    expect((await clusterPods(ns, 'orders')).find((pod) => pod.name === target)?.role).toBe('leader');
    expect(summary.acked).toBeGreaterThan(50);
    expect(Object.values(summary.missing).every((missing) => missing === 0)).toBe(true);
    // a read-only replica or a pod that does not exist is refused with an Event
    kubectl(['annotate', 'edb', 'orders', '-n', ns, 'eventdb.io/switchover=orders-9', '--overwrite']);
    await waitFor('the refusal', async () => (clusterEvents().includes('SwitchoverTargetNotFound') ? true : undefined), 60_000, 1000);
    expect((await getCluster(ns, 'orders'))?.status?.leader).toBe(target);
  });

  it('fences a follower: its pod stops and stays stopped, the PVC stays, the cluster keeps serving; unfencing brings it back', async () => {
    const cluster = await waitClusterReady(ns, 'orders');
    const follower = ['orders-0', 'orders-1', 'orders-2'].find((name) => name !== cluster.status?.leader) ?? '';
    kubectl(['annotate', 'edb', 'orders', '-n', ns, `eventdb.io/fenced=["${follower}"]`]);
    await waitFor(`${follower} to be fenced`, async () => {
      const pods = await clusterPods(ns, 'orders');
      const fenced = (await getCluster(ns, 'orders'))?.status?.conditions?.find((condition) => condition.type === 'Fenced');
      return !pods.some((pod) => pod.name === follower) && fenced?.status === 'True' ? true : undefined;
    }, 120_000, 1000);
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    expect((await clusterPods(ns, 'orders')).map((pod) => pod.name)).not.toContain(follower);
    expect(kubectl(['get', 'pvc', `data-${follower}`, '-n', ns, '-o', 'name']).stdout.trim()).toBe(`persistentvolumeclaim/data-${follower}`);
    const result = await readEverywhere('while-fenced', 3);
    expect(result.written).toBe(201);
    expect(Object.values(result.reads)).toEqual([{ n: 3 }, { n: 3 }]);
    // fencing a second voting node would leave no quorum: refused without force
    const other = ['orders-0', 'orders-1', 'orders-2'].find((name) => name !== follower && name !== cluster.status?.leader) ?? '';
    kubectl(['annotate', 'edb', 'orders', '-n', ns, `eventdb.io/fenced=["${follower}","${other}"]`, '--overwrite']);
    await waitFor('the below-quorum refusal', async () => (clusterEvents().includes('FencingBelowQuorum') ? true : undefined), 60_000, 1000);
    expect((await clusterPods(ns, 'orders')).map((pod) => pod.name)).toContain(other);
    kubectl(['annotate', 'edb', 'orders', '-n', ns, 'eventdb.io/fenced-']);
    await waitClusterReady(ns, 'orders');
    expect((await clusterPods(ns, 'orders')).map((pod) => pod.name).sort()).toEqual(['orders-0', 'orders-1', 'orders-2']);
  });

  it('hibernates (no pod left, PVCs and Secrets kept, phase Hibernated) and wakes with every event still there', async () => {
    await waitClusterReady(ns, 'orders');
    const written = await readEverywhere('before-hibernation', 7);
    expect(written.written).toBe(201);
    const claims = kubectl(['get', 'pvc', '-n', ns, '-l', 'eventdb.io/cluster=orders', '-o', 'jsonpath={.items[*].metadata.uid}']).stdout.trim().split(' ').sort();
    expect(claims).toHaveLength(3);
    await patchCluster(ns, 'orders', { spec: { hibernation: true } });
    await waitFor('phase Hibernated', async () => ((await getCluster(ns, 'orders'))?.status?.phase === 'Hibernated' && (await clusterPods(ns, 'orders')).length === 0 ? true : undefined), 300_000, 2000);
    const pods = await api().get<{ items: unknown[] }>(`/api/v1/namespaces/${ns}/pods?labelSelector=eventdb.io%2Fcluster%3Dorders`);
    expect(pods?.items ?? []).toHaveLength(0);
    expect(kubectl(['get', 'pvc', '-n', ns, '-l', 'eventdb.io/cluster=orders', '-o', 'jsonpath={.items[*].metadata.uid}']).stdout.trim().split(' ').sort()).toEqual(claims);
    expect(kubectl(['get', 'secret', 'orders-admin', '-n', ns, '-o', 'name']).stdout.trim()).toBe('secret/orders-admin');
    expect(clusterEvents()).toContain('LeaderResignRequested');
    await patchCluster(ns, 'orders', { spec: { hibernation: false } });
    await waitClusterReady(ns, 'orders', 400_000);
    // event 0 of the stream is the one written before hibernation, on every node
    const after = await readEverywhere('before-hibernation', 8);
    expect(after.written).toBe(201);
    expect(Object.values(after.reads)).toEqual([{ n: 7 }, { n: 7 }, { n: 7 }]);
  });

  it('growing storage.data.size on a StorageClass without allowVolumeExpansion is reported: VolumesExpanded=False ExpansionRefused, Stalled=True, a Warning Event', async () => {
    await waitClusterReady(ns, 'orders');
    await patchCluster(ns, 'orders', { spec: { storage: { data: { size: '512Mi' } } } });
    await waitFor('the refusal in the status', async () => {
      const conditions = (await getCluster(ns, 'orders'))?.status?.conditions ?? [];
      const volumes = conditions.find((condition) => condition.type === 'VolumesExpanded');
      const stalled = conditions.find((condition) => condition.type === 'Stalled');
      return volumes?.reason === 'ExpansionRefused' && stalled?.status === 'True' ? true : undefined;
    }, 120_000, 1000);
    expect(clusterEvents()).toContain('VolumeExpansionRefused');
    expect(kubectl(['get', 'pvc', 'data-orders-0', '-n', ns, '-o', 'jsonpath={.spec.resources.requests.storage}']).stdout.trim()).toBe('256Mi');
  });
});

// The operator in the cluster from its image (eventdb-operator:dev), installed by its chart with
// two replicas: one holds the Lease and acts; killing it mid-rollout hands the operation to the
// other, which resumes it from status.operation.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, ctx, kubectl, useNamespace, waitFor } from '../../k8s/helpers.js';
import {
  SMALL_CLUSTER,
  applyCluster,
  clusterPods,
  getCluster,
  createOperatorNamespace,
  installCrds,
  installOperatorRelease,
  patchCluster,
  removeOperatorRelease,
  waitClusterReady,
} from './operator-support.js';

interface Lease {
  spec?: { holderIdentity?: string; leaseTransitions?: number };
}

describe.skipIf(ctx().skipReason !== '')('the operator in the cluster, two replicas', () => {
  const namespace = useNamespace('edb-inc');
  let operatorNamespace = '';
  beforeAll(() => installCrds(), 120_000);
  afterEach(async () => {
    if (operatorNamespace === '') return;
    await removeOperatorRelease(operatorNamespace);
    operatorNamespace = '';
  }, 300_000);

  async function install(): Promise<void> {
    operatorNamespace = await createOperatorNamespace();
    installOperatorRelease(operatorNamespace, [namespace()]);
  }

  async function lease(): Promise<Lease | undefined> {
    return await api().get<Lease>(`/apis/coordination.k8s.io/v1/namespaces/${operatorNamespace}/leases/eventdb-operator`);
  }

  it('runs two replicas of which one holds the Lease, makes the cluster Ready, and reports metrics', async () => {
    await install();
    const operatorPods = kubectl(['get', 'pods', '-n', operatorNamespace, '-l', 'app.kubernetes.io/name=eventdb-operator', '-o', 'jsonpath={.items[*].metadata.name}']).stdout.split(' ').filter(Boolean);
    expect(operatorPods).toHaveLength(2);
    const holder = await waitFor('a Lease holder', async () => (await lease())?.spec?.holderIdentity || undefined, 60_000);
    expect(operatorPods).toContain(holder);
    expect(applyCluster(namespace(), 'orders', SMALL_CLUSTER).status).toBe(0);
    await waitClusterReady(namespace(), 'orders');
    const metrics = await api().call('GET', `/api/v1/namespaces/${operatorNamespace}/pods/${holder}:8080/proxy/metrics`);
    expect(metrics.text).toMatch(/eventdb_operator_reconcile_total\{controller="eventdbcluster",result="(success|requeue)"\} \d+/);
    expect(metrics.text).toMatch(/eventdb_operator_leader 1/);
    expect(metrics.text).toContain(`eventdb_operator_cluster_phase{namespace="${namespace()}",name="orders",phase="Ready"} 1`);
    const standby = operatorPods.find((name) => name !== holder) ?? '';
    const standbyMetrics = await api().call('GET', `/api/v1/namespaces/${operatorNamespace}/pods/${standby}:8080/proxy/metrics`);
    expect(standbyMetrics.text).not.toMatch(/eventdb_operator_reconcile_total\{/);
  });

  it('hands a rolling update over to the standby replica when the acting one is killed mid-way', async () => {
    await install();
    const ns = namespace();
    applyCluster(ns, 'orders', SMALL_CLUSTER);
    await waitClusterReady(ns, 'orders');
    const first = (await clusterPods(ns, 'orders'))[0]?.uid;
    const holder = (await lease())?.spec?.holderIdentity ?? '';
    await patchCluster(ns, 'orders', { spec: { configuration: { MaxMemTableSize: 6000 } } });
    const operation = await waitFor('the restart step persisted', async () => {
      const current = await getCluster(ns, 'orders');
      return current?.status?.operation?.podStep === 'Restarting' ? current.status.operation : undefined;
    }, 120_000, 200);
    // Kill the acting operator at once (no graceful Lease release).
    expect(kubectl(['delete', 'pod', holder, '-n', operatorNamespace, '--grace-period=0', '--force']).status).toBe(0);
    const uids = new Set<string>();
    if (first !== undefined) uids.add(first);
    const done = await waitFor('the other replica to finish the operation', async () => {
      for (const pod of await clusterPods(ns, 'orders')) uids.add(pod.uid);
      const current = await getCluster(ns, 'orders');
      return current?.status?.lastOperation?.id === operation.id ? current : undefined;
    }, 300_000, 1000);
    expect(done.status?.lastOperation).toMatchObject({ kind: 'RollingUpdate', result: 'Succeeded' });
    const newHolder = (await lease())?.spec?.holderIdentity;
    expect(newHolder).not.toBe(holder);
    // The node restarted exactly once: the uid before and the one after.
    expect(uids.size).toBe(2);
    await waitClusterReady(ns, 'orders');
  });
});

// Installing the operator: helm install (with the CRDs), helm upgrade, helm uninstall (the CRDs,
// the clusters and their data stay), then the plain-YAML install.yaml taking over the same cluster.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { api, createNamespace, ctx, deleteNamespace, kubectl, run, useNamespace, waitFor } from '../../k8s/helpers.js';
import {
  EVENTDB_CRDS,
  OPERATOR_IMAGE,
  REPO,
  SMALL_CLUSTER,
  applyCluster,
  clusterPods,
  getCluster,
  helmInstallOperator,
  helmUninstall,
  installCrds,
  lastJsonLine,
  patchCluster,
  removeOperatorRelease,
  runInCluster,
  secretValue,
  waitClusterReady,
  writeThenReadScript,
} from './operator-support.js';

// every CRD the chart installs (BackupSchedule too: one left behind blocks the chart's install)
const CRDS = [...EVENTDB_CRDS];

describe.skipIf(ctx().skipReason !== '')('installing the operator', () => {
  const namespace = useNamespace('edb-install');

  async function probe(ns: string, stream: string, n: number): Promise<{ written: number; reads: Record<string, unknown> }> {
    const password = await secretValue(ns, 'orders-admin', 'password');
    const script = writeThenReadScript({ writeUrl: 'https://orders-leader:2113', readUrls: ['https://orders:2113'], stream, n });
    return lastJsonLine(await runInCluster(ns, `probe-${stream}-${n}`, script, { EVENTDB_PASSWORD: password }));
  }

  it('ships install.yaml and operator/deploy/ as the chart renders them', () => {
    const check = run(path.join(REPO, 'operator/scripts/render-manifests.sh'), ['--check'], { HELM: ctx().helm });
    expect(check.status, check.out).toBe(0);
  });

  it('helm install, upgrade and uninstall (CRDs and data kept), then install.yaml takes over', async () => {
    const ns = namespace();
    // The chart installs the CRDs itself: start without them.
    kubectl(['delete', 'crd', ...CRDS, '--ignore-not-found', '--wait=true', '--timeout=180s']);
    const operatorNamespace = await createNamespace('edb-helm');
    try {
      helmInstallOperator({ release: 'eventdb-operator', namespace: operatorNamespace, watchNamespaces: [ns], crds: true });
      for (const crd of CRDS) {
        const annotations = kubectl(['get', 'crd', crd, '-o', 'jsonpath={.metadata.annotations}']).stdout;
        expect(annotations).toContain('"helm.sh/resource-policy":"keep"');
      }
      expect(applyCluster(ns, 'orders', SMALL_CLUSTER).status).toBe(0);
      await waitClusterReady(ns, 'orders');
      expect((await probe(ns, 'kept', 1)).written).toBe(201);

      helmInstallOperator({ release: 'eventdb-operator', namespace: operatorNamespace, watchNamespaces: [ns], crds: true, set: ['logLevel=debug'] });
      const env = kubectl(['get', 'deployment', 'eventdb-operator', '-n', operatorNamespace, '-o', 'jsonpath={.spec.template.spec.containers[0].env}']).stdout;
      expect(env).toContain('"name":"LOG_LEVEL","value":"debug"');
      await patchCluster(ns, 'orders', { spec: { configuration: { MaxMemTableSize: 7000 } } });
      await waitFor('the upgraded operator to act', async () => (await getCluster(ns, 'orders'))?.status?.lastOperation !== undefined, 300_000, 1000);
      await waitClusterReady(ns, 'orders');

      const node = (await clusterPods(ns, 'orders'))[0];
      helmUninstall('eventdb-operator', operatorNamespace);
      for (const crd of CRDS) expect(kubectl(['get', 'crd', crd]).status).toBe(0);

      // Another release name while the kept CRDs belong to the old one: refused, saying how.
      const other = (extra: string[]): { status: number; out: string } =>
        run(ctx().helm, ['install', 'other-operator', path.join(REPO, 'charts/eventdb-operator'), '--kubeconfig', ctx().kubeconfig, '--namespace', operatorNamespace, '--dry-run=server', '--set', `watchNamespaces={${ns}}`, ...extra]);
      const refused = other([]);
      expect(refused.status).not.toBe(0);
      expect(refused.out).toContain(`installed by the Helm release "eventdb-operator" in namespace "${operatorNamespace}"`);
      expect(refused.out).toContain('meta.helm.sh/release-name=other-operator');
      expect(refused.out).toContain('--set crds.install=false');
      // Either way out the README gives: without the CRDs, or with them adopted.
      expect(other(['--set', 'crds.install=false']).status).toBe(0);
      expect(kubectl(['annotate', 'crd', ...CRDS, 'meta.helm.sh/release-name=other-operator', `meta.helm.sh/release-namespace=${operatorNamespace}`, '--overwrite']).status).toBe(0);
      const adopted = other([]);
      expect(adopted.status, adopted.out).toBe(0);
      // back to the first release's ownership
      expect(kubectl(['annotate', 'crd', ...CRDS, 'meta.helm.sh/release-name=eventdb-operator', '--overwrite']).status).toBe(0);
      expect(await getCluster(ns, 'orders')).toBeDefined();
      expect(kubectl(['get', 'pvc', 'data-orders-0', '-n', ns]).status).toBe(0);
      expect((await clusterPods(ns, 'orders'))[0]?.uid).toBe(node?.uid);
    } finally {
      await removeOperatorRelease(operatorNamespace);
    }

    // The plain YAML, with this checkout's images.
    const install = readFileSync(path.join(REPO, 'operator/install.yaml'), 'utf8')
      .replace(/image: "eventdb-operator:[^"]+"/g, `image: "${OPERATOR_IMAGE}"`)
      .replace(/value: "eventdb:[^"]+"/g, `value: "${ctx().image}"`);
    const applied = kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], install);
    expect(applied.status, applied.out).toBe(0);
    try {
      expect(kubectl(['rollout', 'status', 'deployment/eventdb-operator', '-n', 'eventdb-system', '--timeout=180s']).status).toBe(0);
      const before = (await clusterPods(ns, 'orders'))[0]?.uid;
      await patchCluster(ns, 'orders', { spec: { configuration: { MaxMemTableSize: 8000 } } });
      await waitFor('the plain-YAML operator to restart the node', async () => (await clusterPods(ns, 'orders'))[0]?.uid !== before, 300_000, 1000);
      await waitClusterReady(ns, 'orders');
      const reads = await probe(ns, 'kept', 2);
      expect(Object.values(reads.reads)).toEqual([{ n: 1 }]);
    } finally {
      kubectl(['delete', '-f', path.join(REPO, 'operator/deploy/operator.yaml'), '--ignore-not-found', '--wait=true']);
      await deleteNamespace('eventdb-system');
      // Leave the CRDs as other tests and `make run` expect them: owned by no Helm release.
      kubectl(['annotate', 'crd', ...CRDS, 'meta.helm.sh/release-name-', 'meta.helm.sh/release-namespace-', 'helm.sh/resource-policy-']);
      kubectl(['label', 'crd', ...CRDS, 'app.kubernetes.io/managed-by-']);
      installCrds();
      expect(await api().get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/eventdbclusters.eventdb.io')).toBeDefined();
    }
  });
});

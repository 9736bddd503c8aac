import { describe, expect, it } from 'vitest';
import { OperatorMetrics, valueOf } from './metrics.js';

const orders = { namespace: 'shop', name: 'orders' };
const other = { namespace: 'shop', name: 'other' };

describe('OperatorMetrics', () => {
  it('reports one operation in progress per cluster, replacing the previous kind, and none when it ends', async () => {
    const m = new OperatorMetrics();
    m.setOperation(orders, { kind: 'RollingUpdate', startedAtMs: 10_000 });
    m.setOperation(other, { kind: 'Scale', startedAtMs: 20_000 });
    expect(await valueOf(m.operationsInProgress, { ...orders, kind: 'RollingUpdate' })).toBe(1);
    expect(await valueOf(m.operationStarted, { ...orders, kind: 'RollingUpdate' })).toBe(10);
    m.setOperation(orders, { kind: 'Backup', startedAtMs: 30_000 });
    expect(await valueOf(m.operationsInProgress, { ...orders, kind: 'RollingUpdate' })).toBeUndefined();
    expect(await valueOf(m.operationsInProgress, { ...orders, kind: 'Backup' })).toBe(1);
    m.setOperation(orders, undefined);
    const { values } = await m.operationsInProgress.get();
    expect(values.map((v) => `${v.labels.name}/${v.labels.kind}`)).toEqual(['other/Scale']);
  });

  it('removes every series of a deleted cluster and keeps the others', async () => {
    const m = new OperatorMetrics();
    for (const c of [orders, other]) {
      m.setClusterPhase(c, 'Ready');
      m.clusterReadyNodes.set(c, 3);
      m.setOperation(c, { kind: 'Scale', startedAtMs: 1000 });
      m.certificateNotAfter.set(c, 99);
      m.backupLastSuccess.set({ namespace: c.namespace, cluster: c.name }, 5);
    }
    expect(await valueOf(m.clusterPhase, { ...orders, phase: 'Ready' })).toBe(1);
    expect(await valueOf(m.clusterPhase, { ...orders, phase: 'Degraded' })).toBe(0);
    m.forgetCluster(orders);
    const { body } = await m.render();
    expect(body).not.toMatch(/name="orders"|cluster="orders"/);
    expect(body).toMatch(/eventdb_operator_cluster_ready_nodes\{namespace="shop",name="other"\} 3/);
    expect(body).toMatch(/eventdb_operator_backup_last_success_timestamp_seconds\{namespace="shop",cluster="other"\} 5/);
  });

  it('renders the Prometheus text format, or OpenMetrics on request', async () => {
    const m = new OperatorMetrics();
    m.reconciles.inc({ controller: 'eventdbcluster', result: 'success' });
    m.reconcileSeconds.observe({ controller: 'eventdbcluster' }, 0.05);
    const text = await m.render();
    expect(text.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text.body).toMatch(/^eventdb_operator_reconcile_total\{controller="eventdbcluster",result="success"\} 1$/m);
    expect(text.body).toMatch(/^eventdb_operator_reconcile_duration_seconds_bucket\{le="0\.1",controller="eventdbcluster"\} 1$/m);
    const om = await m.render(true);
    expect(om.contentType).toMatch(/^application\/openmetrics-text/);
    expect(om.body.trimEnd().endsWith('# EOF')).toBe(true);
  });
});

// The CRDs on a real apiserver: `kubectl apply` rejects a bad object before any operator sees it,
// with a message naming the field; the samples are accepted; short names, categories, printer
// columns and the scale subresource work. No operator runs in this file.
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ctx, kubectl, useNamespace } from '../../k8s/helpers.js';
import { REPO, applyCluster, installCrds } from './operator-support.js';

function apply(namespace: string, document: Record<string, unknown>): { status: number; out: string } {
  return kubectl(['apply', '-n', namespace, '-f', '-'], stringify(document));
}

describe.skipIf(ctx().skipReason !== '')('EventDB CRDs on the apiserver', () => {
  const namespace = useNamespace('edb-crd');
  beforeAll(() => installCrds(), 120_000);

  it('rejects replicas 2, naming the field', () => {
    const result = applyCluster(namespace(), 'two', { replicas: 2 });
    expect(result.status).not.toBe(0);
    expect(result.out).toMatch(/spec\.replicas/);
    expect(result.out).toContain('replicas must be 1, 3 or 5');
  });

  it('rejects read-only replicas beside a single node', () => {
    const result = applyCluster(namespace(), 'lonely', { replicas: 1, readOnlyReplicas: 1 });
    expect(result.status).not.toBe(0);
    expect(result.out).toContain('readOnlyReplicas need replicas 3 or 5');
  });

  it('rejects a misspelt configuration key, naming it', () => {
    const result = applyCluster(namespace(), 'typo', { replicas: 1, configuration: { MaxMemTabelSize: 1000 } });
    expect(result.status).not.toBe(0);
    expect(result.out).toMatch(/unknown field "spec\.configuration\.MaxMemTabelSize"/);
  });

  it('rejects a configuration value of the wrong type or range', () => {
    const wrongType = applyCluster(namespace(), 'type', { replicas: 1, configuration: { MaxMemTableSize: 'lots' } });
    expect(wrongType.status).not.toBe(0);
    expect(wrongType.out).toMatch(/spec\.configuration\.MaxMemTableSize/);
    const tooSmall = applyCluster(namespace(), 'range', { replicas: 1, configuration: { MaxMemTableSize: 0 } });
    expect(tooSmall.status).not.toBe(0);
    expect(tooSmall.out).toMatch(/spec\.configuration\.MaxMemTableSize/);
  });

  it('rejects options the operator owns, saying which spec field to use', () => {
    const result = applyCluster(namespace(), 'owned', { replicas: 1, configuration: { HttpPort: 2114, DefaultAdminPassword: 'x' } });
    expect(result.status).not.toBe(0);
    expect(result.out).toContain('HttpPort is managed by the operator');
    expect(result.out).toContain('DefaultAdminPassword is managed by the operator: set spec.users.adminPasswordSecret');
  });

  it('rejects a maintenance window that is not five CRON fields', () => {
    const result = applyCluster(namespace(), 'cron', { replicas: 1, maintenanceWindows: [{ schedule: '0 2 * *', duration: '4h' }] });
    expect(result.status).not.toBe(0);
    expect(result.out).toMatch(/spec\.maintenanceWindows\[0\]\.schedule/);
  });

  it('rejects a name too long for the pods and Services made from it', () => {
    const result = applyCluster(namespace(), 'a'.repeat(46), { replicas: 1 });
    expect(result.status).not.toBe(0);
    expect(result.out).toContain('at most 45');
  });

  it('keeps spec.sourceBackup immutable', () => {
    expect(applyCluster(namespace(), 'restored', { replicas: 1, sourceBackup: { name: 'nightly-1' } }).status).toBe(0);
    const result = applyCluster(namespace(), 'restored', { replicas: 1, sourceBackup: { name: 'nightly-2' } });
    expect(result.status).not.toBe(0);
    expect(result.out).toContain('sourceBackup is immutable');
  });

  it('refuses tls.mode Disabled <-> TLS on a three-node cluster (no quorum across the switch), allows it on one node', () => {
    expect(applyCluster(namespace(), 'plain', { replicas: 3, tls: { mode: 'Disabled' } }).status).toBe(0);
    const refused = applyCluster(namespace(), 'plain', { replicas: 3, tls: { mode: 'SelfSigned' } });
    expect(refused.status).not.toBe(0);
    expect(refused.out).toMatch(/spec\.tls/);
    expect(refused.out).toContain('tls.mode cannot switch between Disabled and SelfSigned or Secret while replicas is 3 or 5');
    // Scaling in the same change does not get round it; TLS to TLS is a certificate rotation, allowed.
    expect(applyCluster(namespace(), 'plain', { replicas: 1, tls: { mode: 'SelfSigned' } }).status).not.toBe(0);
    expect(applyCluster(namespace(), 'secure', { replicas: 3 }).status).toBe(0);
    expect(applyCluster(namespace(), 'secure', { replicas: 3, tls: { mode: 'Disabled' } }).status).not.toBe(0);
    expect(applyCluster(namespace(), 'secure', { replicas: 3, tls: { mode: 'Secret', certificateSecret: { name: 'secure-tls' } } }).status).toBe(0);
    expect(applyCluster(namespace(), 'single', { replicas: 1, tls: { mode: 'Disabled' } }).status).toBe(0);
    expect(applyCluster(namespace(), 'single', { replicas: 1 }).status).toBe(0);
  });

  it('rejects a ScavengeSchedule with threads 2 and throttle 50, naming the field', () => {
    const result = apply(namespace(), {
      apiVersion: 'eventdb.io/v1alpha1',
      kind: 'ScavengeSchedule',
      metadata: { name: 'weekly' },
      spec: { cluster: { name: 'orders' }, schedule: '0 3 * * 0', threads: 2, throttlePercent: 50 },
    });
    expect(result.status).not.toBe(0);
    expect(result.out).toMatch(/spec\.throttlePercent/);
    expect(result.out).toContain('throttlePercent must be 100 when threads > 1');
  });

  it('keeps a Backup immutable except its ttl', () => {
    const backup = (spec: Record<string, unknown>) => ({ apiVersion: 'eventdb.io/v1alpha1', kind: 'Backup', metadata: { name: 'b1' }, spec: { cluster: { name: 'orders' }, ...spec } });
    expect(apply(namespace(), backup({ ttl: '24h' })).status).toBe(0);
    expect(apply(namespace(), backup({ ttl: '48h' })).status).toBe(0);
    const changed = apply(namespace(), backup({ ttl: '48h', node: 'Leader' }));
    expect(changed.status).not.toBe(0);
    expect(changed.out).toContain('a Backup is immutable except spec.ttl');
  });

  it('accepts every sample under operator/examples', () => {
    const result = kubectl(['apply', '--dry-run=server', '-n', namespace(), '-f', path.join(REPO, 'operator/examples')]);
    expect(result.status, result.out).toBe(0);
  });

  it('shows the printer columns, answers to short names and the eventdb category, and scales through the scale subresource', () => {
    expect(applyCluster(namespace(), 'orders', { replicas: 1 }).status).toBe(0);
    const table = kubectl(['get', 'edb', '-n', namespace()]);
    expect(table.out.split('\n')[0]?.split(/\s+/).filter(Boolean)).toEqual(['NAME', 'REPLICAS', 'READY', 'LEADER', 'PHASE', 'IMAGE', 'AGE']);
    expect(kubectl(['get', 'edbc,edbscav,edbbackup', '-n', namespace()]).status).toBe(0);
    expect(kubectl(['get', 'eventdb', '-n', namespace()]).out).toContain('eventdbcluster.eventdb.io/orders');
    const refused = kubectl(['scale', 'edb/orders', '-n', namespace(), '--replicas=2']);
    expect(refused.status).not.toBe(0);
    expect(refused.out).toContain('replicas must be 1, 3 or 5');
    expect(kubectl(['scale', 'edb/orders', '-n', namespace(), '--replicas=3']).status).toBe(0);
    expect(kubectl(['get', 'edb/orders', '-n', namespace(), '-o', 'jsonpath={.spec.replicas}']).stdout).toBe('3');
  });
});

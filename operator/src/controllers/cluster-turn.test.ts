import { describe, expect, it } from 'vitest';

import type { EventDBClusterStatus } from '../api/eventdb-cluster.js';
import { clusterTurn } from './cluster-turn.js';

const at = '2026-03-01T00:00:00Z';
const readyCluster: EventDBClusterStatus = {
  replicas: 3,
  readyReplicas: 3,
  conditions: [
    { type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: at },
    { type: 'Degraded', status: 'False', reason: 'AllNodesReady', message: '', lastTransitionTime: at },
  ],
};
/** The same cluster while a certificate rotation is its operation: Ready names the rotation. */
function rotating(overrides: Partial<EventDBClusterStatus> = {}): EventDBClusterStatus {
  return {
    ...readyCluster,
    conditions: [
      { type: 'Ready', status: 'False', reason: 'CertificateReload', message: 'reload certificates: 2 of 3 verified', lastTransitionTime: at },
      { type: 'Degraded', status: 'False', reason: 'AllNodesReady', message: '', lastTransitionTime: at },
    ],
    operation: { id: 'certificates-ab12', kind: 'CertificateReload', step: 'reload certificates: 2 of 3 verified', startedAt: at },
    ...overrides,
  };
}

describe('clusterTurn', () => {
  it('gives a Ready cluster with no operation', () => {
    expect(clusterTurn(readyCluster, 3)).toEqual({ ok: true });
  });

  it('waits for a rolling update, a scale, a backup or a scavenge cycle, naming it', () => {
    for (const kind of ['RollingUpdate', 'Scale', 'Backup', 'Scavenge'] as const) {
      expect(clusterTurn({ ...readyCluster, operation: { id: 'x', kind, step: 'restart orders-2', startedAt: at } }, 3))
        .toEqual({ ok: false, reason: 'WaitingForOperation', why: `the cluster runs ${kind} (restart orders-2)` });
    }
  });

  it('waits for a cluster that is not Ready', () => {
    const notReady: EventDBClusterStatus = { ...readyCluster, conditions: [{ type: 'Ready', status: 'False', reason: 'NodesNotReady', message: '', lastTransitionTime: at }] };
    expect(clusterTurn(notReady, 3)).toEqual({ ok: false, reason: 'WaitingForCluster', why: 'the cluster is not Ready (NodesNotReady)' });
    expect(clusterTurn(undefined, 3)).toMatchObject({ ok: false, reason: 'WaitingForCluster', why: 'the cluster is not Ready (no status yet)' });
  });

  it('does not wait for a certificate rotation (even one that keeps failing) while every node is ready', () => {
    expect(clusterTurn(rotating(), 3)).toEqual({ ok: true });
  });

  it('waits during a rotation when a node is missing, not ready, or the cluster is degraded', () => {
    expect(clusterTurn(rotating({ readyReplicas: 2 }), 3)).toMatchObject({ ok: false, reason: 'WaitingForCluster', why: 'the cluster is not Ready (2 of 3 nodes ready, certificates being reloaded)' });
    expect(clusterTurn(rotating({ replicas: 2, readyReplicas: 2 }), 3)).toMatchObject({ ok: false, reason: 'WaitingForCluster' });
    const degraded = rotating();
    degraded.conditions = degraded.conditions?.map((c) => (c.type === 'Degraded' ? { ...c, status: 'True', reason: 'NodesDown' } : c));
    expect(clusterTurn(degraded, 3)).toMatchObject({ ok: false, reason: 'WaitingForCluster' });
  });
});

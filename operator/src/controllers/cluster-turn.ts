/**
 * Whether a Backup or a ScavengeSchedule cycle may ask for its cluster now: one disruptive
 * operation at a time, and only on a cluster whose nodes are all ready (stopping or scavenging
 * one node then never leaves fewer than a quorum).
 *
 * A certificate rotation that is `status.operation` (CertificateReload) does not keep them away.
 * A reload restarts nothing; when a hold annotation arrives the cluster controller gives the
 * operation to the hold and the rotation goes on next to it (rotationPlacement). Without this a
 * rotation that keeps failing (a key that does not match its certificate) would keep every
 * backup and scavenge away until someone fixes the Secret. The cluster's Ready condition then
 * names the rotation, so readiness is read from the nodes: every voting node exists and is ready.
 */
import type { EventDBClusterStatus } from '../api/eventdb-cluster.js';

export type ClusterTurn =
  | { readonly ok: true }
  /** `why`: what keeps the cluster, e.g. "the cluster runs RollingUpdate (restart orders-2)". */
  | { readonly ok: false; readonly reason: 'WaitingForOperation' | 'WaitingForCluster'; readonly why: string };

export function clusterTurn(status: EventDBClusterStatus | undefined, desiredReplicas: number | undefined): ClusterTurn {
  const operation = status?.operation;
  const ready = status?.conditions?.find((condition) => condition.type === 'Ready');
  if (operation === undefined) {
    return ready?.status === 'True' ? { ok: true } : { ok: false, reason: 'WaitingForCluster', why: `the cluster is not Ready (${ready?.reason ?? 'no status yet'})` };
  }
  if (operation.kind !== 'CertificateReload') return { ok: false, reason: 'WaitingForOperation', why: `the cluster runs ${operation.kind} (${operation.step})` };
  const existing = status?.replicas ?? 0;
  const readyNodes = status?.readyReplicas ?? 0;
  const degraded = status?.conditions?.find((condition) => condition.type === 'Degraded');
  if (existing === 0 || readyNodes < existing || (desiredReplicas !== undefined && existing < desiredReplicas) || degraded?.status === 'True') {
    return { ok: false, reason: 'WaitingForCluster', why: `the cluster is not Ready (${readyNodes} of ${desiredReplicas ?? existing} nodes ready, certificates being reloaded)` };
  }
  return { ok: true };
}

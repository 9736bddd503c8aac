/** PVCs `data-<pod>` and `index-<pod>`: owned by the cluster, so they outlive pods and scale-down. */
import { LABEL_NODE_KIND, LABEL_POD } from '../api/group.js';
import type { KubeObject } from '../runtime/kube-api.js';
import type { EffectiveSpec, VolumeSettings } from './effective-spec.js';
import { commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { dataClaimName, indexClaimName } from './names.js';
import type { NodeKind } from './pod.js';

/** VolumeSnapshots a new cluster's PVCs are made from (spec.sourceBackup, method VolumeSnapshot). */
export interface ClaimSnapshots {
  readonly data?: string;
  readonly index?: string;
}

function claim(cluster: ClusterIdentity, name: string, pod: string, nodeKind: NodeKind, volume: string, settings: VolumeSettings, snapshot?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: cluster.namespace,
      labels: { ...commonLabels(cluster), [LABEL_POD]: pod, [LABEL_NODE_KIND]: nodeKind, 'eventdb.io/volume': volume },
      ownerReferences: [ownerReference(cluster)],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: String(settings.size) } },
      ...(settings.storageClassName === undefined ? {} : { storageClassName: settings.storageClassName }),
      ...(snapshot === undefined ? {} : { dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshot } }),
    },
  };
}

export function buildClaims(cluster: ClusterIdentity, spec: EffectiveSpec, pod: string, nodeKind: NodeKind, snapshots: ClaimSnapshots = {}): KubeObject[] {
  const claims = [claim(cluster, dataClaimName(pod), pod, nodeKind, 'data', spec.storage.data, snapshots.data)];
  if (spec.storage.index !== undefined) claims.push(claim(cluster, indexClaimName(pod), pod, nodeKind, 'index', spec.storage.index, snapshots.index));
  return claims;
}

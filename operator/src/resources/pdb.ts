/**
 * PodDisruptionBudget `<cluster>`: voluntary evictions (node drains) never take the voting nodes
 * below a quorum. The operator's own restarts do not go through evictions; it keeps the same
 * rule itself (one voting node down at a time).
 */
import { LABEL_NODE_KIND } from '../api/group.js';
import type { KubeObject } from '../runtime/kube-api.js';
import { clusterSelector, commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { pdbName } from './names.js';

export function quorumOf(replicas: number): number {
  return Math.floor(replicas / 2) + 1;
}

export function buildPdb(cluster: ClusterIdentity, replicas: number): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: pdbName(cluster.name), namespace: cluster.namespace, labels: commonLabels(cluster), ownerReferences: [ownerReference(cluster)] },
    spec: {
      minAvailable: quorumOf(replicas),
      selector: { matchLabels: { ...clusterSelector(cluster), [LABEL_NODE_KIND]: 'quorum' } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}

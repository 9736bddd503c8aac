/** Labels and owner references every child of a cluster carries. */
import {
  API_VERSION,
  KIND_CLUSTER,
  LABEL_CLUSTER,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  MANAGED_BY_VALUE,
  NAME_VALUE,
} from '../api/group.js';
import type { OwnerReference } from '../runtime/kube-api.js';

export interface ClusterIdentity {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

export function commonLabels(cluster: ClusterIdentity): Record<string, string> {
  return {
    [LABEL_NAME]: NAME_VALUE,
    [LABEL_INSTANCE]: cluster.name,
    [LABEL_MANAGED_BY]: MANAGED_BY_VALUE,
    [LABEL_CLUSTER]: cluster.name,
  };
}

/** The selector of every pod of the cluster, as status.selector reports it. */
export function clusterSelector(cluster: ClusterIdentity): Record<string, string> {
  return { [LABEL_CLUSTER]: cluster.name };
}

export function selectorString(selector: Record<string, string>): string {
  return Object.entries(selector)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/** The cluster owns its children: they go when it goes (garbage collection, no finalizer). */
export function ownerReference(cluster: ClusterIdentity): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND_CLUSTER,
    name: cluster.name,
    uid: cluster.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

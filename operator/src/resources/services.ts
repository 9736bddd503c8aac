/**
 * The three Services: `<cluster>` (every ready node), `<cluster>-leader` (the pod gossip names
 * leader: the stable write endpoint), `<cluster>-headless` (pod DNS names for gossip and
 * replication, published before pods are ready so nodes can find each other while they start).
 */
import { LABEL_ROLE, NODE_HTTP_PORT, ROLE_LEADER } from '../api/group.js';
import type { KubeObject } from '../runtime/kube-api.js';
import { clusterSelector, commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { clientServiceName, headlessServiceName, leaderServiceName } from './names.js';
import { NODE_REPLICATION_PORT, has } from './node-settings.js';

function service(cluster: ClusterIdentity, name: string, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: cluster.namespace, labels: commonLabels(cluster), ownerReferences: [ownerReference(cluster)] },
    spec,
  };
}

const HTTP_PORT = { name: 'http', port: NODE_HTTP_PORT, targetPort: 'http', protocol: 'TCP' };

export function buildServices(cluster: ClusterIdentity): KubeObject[] {
  const headlessPorts: unknown[] = [HTTP_PORT];
  if (has('replicationPort')) {
    headlessPorts.push({ name: 'replication', port: NODE_REPLICATION_PORT, targetPort: 'replication', protocol: 'TCP' });
  }
  return [
    service(cluster, clientServiceName(cluster.name), { type: 'ClusterIP', selector: clusterSelector(cluster), ports: [HTTP_PORT] }),
    service(cluster, leaderServiceName(cluster.name), {
      type: 'ClusterIP',
      selector: { ...clusterSelector(cluster), [LABEL_ROLE]: ROLE_LEADER },
      ports: [HTTP_PORT],
    }),
    service(cluster, headlessServiceName(cluster.name), {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: clusterSelector(cluster),
      ports: headlessPorts,
    }),
  ];
}

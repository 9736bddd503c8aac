/** ConfigMap `<cluster>-config`: the nodes' YAML configuration file. */
import type { KubeObject } from '../runtime/kube-api.js';
import { commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { configMapName } from './names.js';
import { CONFIG_FILE_NAME } from './node-settings.js';

export function buildConfigMap(cluster: ClusterIdentity, configFile: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: configMapName(cluster.name),
      namespace: cluster.namespace,
      labels: commonLabels(cluster),
      ownerReferences: [ownerReference(cluster)],
    },
    data: { [CONFIG_FILE_NAME]: configFile },
  };
}

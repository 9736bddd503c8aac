/** The kinds the operator reads and writes, and where they live in the API. */
import {
  GROUP,
  KIND_BACKUP,
  KIND_BACKUP_SCHEDULE,
  KIND_CLUSTER,
  KIND_SCAVENGE_SCHEDULE,
  PLURAL_BACKUP,
  PLURAL_BACKUP_SCHEDULE,
  PLURAL_CLUSTER,
  PLURAL_SCAVENGE_SCHEDULE,
  VERSION,
} from '../api/group.js';
import type { ResourceType } from './kube-api.js';

function core(kind: string, plural: string, namespaced = true): ResourceType {
  return { group: '', version: 'v1', kind, plural, namespaced };
}

export const EVENTDB_CLUSTERS: ResourceType = { group: GROUP, version: VERSION, kind: KIND_CLUSTER, plural: PLURAL_CLUSTER, namespaced: true };
export const SCAVENGE_SCHEDULES: ResourceType = {
  group: GROUP,
  version: VERSION,
  kind: KIND_SCAVENGE_SCHEDULE,
  plural: PLURAL_SCAVENGE_SCHEDULE,
  namespaced: true,
};
export const BACKUPS: ResourceType = { group: GROUP, version: VERSION, kind: KIND_BACKUP, plural: PLURAL_BACKUP, namespaced: true };
export const BACKUP_SCHEDULES: ResourceType = {
  group: GROUP,
  version: VERSION,
  kind: KIND_BACKUP_SCHEDULE,
  plural: PLURAL_BACKUP_SCHEDULE,
  namespaced: true,
};

export const PODS = core('Pod', 'pods');
export const SERVICES = core('Service', 'services');
export const CONFIG_MAPS = core('ConfigMap', 'configmaps');
export const SECRETS = core('Secret', 'secrets');
export const PVCS = core('PersistentVolumeClaim', 'persistentvolumeclaims');
export const NAMESPACES = core('Namespace', 'namespaces', false);
export const PDBS: ResourceType = { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', namespaced: true };
export const JOBS: ResourceType = { group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true };
export const VOLUME_SNAPSHOTS: ResourceType = {
  group: 'snapshot.storage.k8s.io',
  version: 'v1',
  kind: 'VolumeSnapshot',
  plural: 'volumesnapshots',
  namespaced: true,
};
export const LEASES: ResourceType = { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true };
export const EVENTS: ResourceType = { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true };

export function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

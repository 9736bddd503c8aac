/**
 * PURE builder of the Backups a BackupSchedule creates: the schedule's backupTemplate, its
 * cluster and ttl; labelled with the schedule (and cluster) and owned by the schedule, so that
 * deleting the schedule deletes them through the garbage collector.
 */
import type { BackupTemplate } from '../api/backup.js';
import { API_VERSION, KIND_BACKUP, KIND_BACKUP_SCHEDULE, LABEL_BACKUP_SCHEDULE, LABEL_CLUSTER } from '../api/group.js';
import type { KubeObject } from '../runtime/kube-api.js';

/** Annotation on a scheduled Backup: the scheduled time it was made for (RFC 3339). */
export const ANNOTATION_SCHEDULED_AT = 'eventdb.io/scheduled-at';

export interface ScheduledBackupInput {
  readonly schedule: { readonly name: string; readonly namespace: string; readonly uid: string };
  readonly name: string;
  readonly scheduledMs: number;
  readonly cluster: string;
  readonly template: BackupTemplate;
  readonly ttl?: string;
}

export function buildScheduledBackup(input: ScheduledBackupInput): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: KIND_BACKUP,
    metadata: {
      name: input.name,
      namespace: input.schedule.namespace,
      labels: { [LABEL_BACKUP_SCHEDULE]: input.schedule.name, [LABEL_CLUSTER]: input.cluster },
      annotations: { [ANNOTATION_SCHEDULED_AT]: new Date(input.scheduledMs).toISOString() },
      ownerReferences: [
        { apiVersion: API_VERSION, kind: KIND_BACKUP_SCHEDULE, name: input.schedule.name, uid: input.schedule.uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: {
      cluster: { name: input.cluster },
      ...structuredClone(input.template),
      ...(input.ttl === undefined ? {} : { ttl: input.ttl }),
    },
  };
}

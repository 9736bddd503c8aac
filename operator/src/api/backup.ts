/**
 * Backup: one backup of one node of a cluster, by VolumeSnapshot or by the spec's file-copy
 * procedure. Immutable except `ttl` (CEL). The controller is ../controllers/backup/.
 */
import { z } from 'zod';
import { ClusterReference, Conditions, Duration, ObjectMeta, Timestamp, celRules } from './common.js';
import { API_VERSION, KIND_BACKUP } from './group.js';

/** Fields of Backup.spec that may not change; `ttl` is the only one that may. */
const IMMUTABLE_FIELDS = ['cluster', 'method', 'node', 'volumeSnapshotClassName', 'fileCopy'] as const;

function immutableExceptTtl(): string {
  return IMMUTABLE_FIELDS.map(
    (field) => `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
  ).join(' && ');
}

/** How a backup is taken: the part of a Backup's spec a BackupSchedule's backupTemplate gives. */
const backupMethodFields = {
  method: z
    .enum(['VolumeSnapshot', 'FileCopy'])
    .default('VolumeSnapshot')
    .describe('VolumeSnapshot: CSI snapshots of the node\'s volumes (index, then data); FileCopy: the spec\'s file-copy procedure into a PVC.'),
  node: z
    .string()
    .min(1)
    .max(253)
    .default('PreferFollower')
    .describe('PreferFollower (the most caught-up follower), Leader, or a pod name.'),
  volumeSnapshotClassName: z
    .string()
    .max(253)
    .optional()
    .describe('VolumeSnapshotClass of the snapshots (method VolumeSnapshot); absent: the cluster\'s default class.'),
  fileCopy: z
    .object({
      claimName: z.string().min(1).max(253).describe('PVC that receives the copy.'),
      differential: z
        .boolean()
        .optional()
        .describe('Copy only what changed since the last backup in that claim (default false).'),
    })
    .optional()
    .describe('Method FileCopy: where the files are copied to.'),
};

const FILE_COPY_NEEDS_CLAIM = {
  rule: "self.method != 'FileCopy' || has(self.fileCopy)",
  message: 'method FileCopy needs spec.fileCopy.claimName',
  fieldPath: '.fileCopy',
  reason: 'FieldValueRequired',
} as const;

/** BackupSchedule.spec.backupTemplate: every Backup the schedule creates takes these. */
export const BackupTemplate = z
  .object(backupMethodFields)
  .meta(celRules({ ...FILE_COPY_NEEDS_CLAIM, message: 'method FileCopy needs backupTemplate.fileCopy.claimName' }))
  .describe('The spec of every Backup the schedule creates (its cluster and ttl come from the schedule).');
export type BackupTemplate = z.infer<typeof BackupTemplate>;

export const BackupSpec = z
  .object({
    cluster: ClusterReference.describe('The EventDBCluster (same namespace) to back up.'),
    ...backupMethodFields,
    ttl: Duration.optional().describe(
      'Delete the backup this long after it completed; the last successful backup of a cluster is kept.',
    ),
  })
  .meta(
    celRules(
      {
        rule: immutableExceptTtl(),
        message: 'a Backup is immutable except spec.ttl',
      },
      FILE_COPY_NEEDS_CLAIM,
    ),
  )
  .describe('What to back up and how; immutable except ttl.');
export type BackupSpec = z.infer<typeof BackupSpec>;

export const BackupStatus = z.object({
  observedGeneration: z.number().int().optional().describe('The generation of the spec this status describes.'),
  phase: z.enum(['Pending', 'Running', 'Completed', 'Failed']).optional().describe('Pending, Running, Completed or Failed.'),
  sourcePod: z.string().optional().describe('Pod of the node backed up.'),
  sourceRole: z.string().optional().describe('Its role when the backup started: Leader or Follower.'),
  startedAt: Timestamp.optional(),
  completedAt: Timestamp.optional(),
  writerCheckpoint: z
    .number()
    .int()
    .optional()
    .describe('Every event acknowledged at or below this log position is in the backup.'),
  snapshots: z
    .array(
      z.object({
        volume: z.string().describe('Volume of the node: index or data.'),
        name: z.string().describe('Name of the VolumeSnapshot.'),
        readyToUse: z.boolean().optional().describe('The snapshot can be restored from.'),
      }),
    )
    .max(8)
    .optional()
    .describe('VolumeSnapshot: the snapshots, index before data.'),
  path: z.string().optional().describe('FileCopy: folder inside the claim.'),
  differentialFrom: z
    .string()
    .optional()
    .describe('FileCopy differential: the earlier Backup whose folder this one was taken against (absent: full).'),
  sourceNode: z.string().optional().describe('Kubernetes node of the source pod (FileCopy runs there).'),
  message: z.string().optional().describe('What the backup is doing, or why it failed.'),
  conditions: Conditions.optional(),
}).describe('What the operator observed and does.');

export const Backup = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND_BACKUP),
  metadata: ObjectMeta,
  spec: BackupSpec,
  status: BackupStatus.optional(),
});
export type Backup = z.infer<typeof Backup>;

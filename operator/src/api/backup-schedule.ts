/**
 * BackupSchedule: Backups of a cluster on a CRON schedule, with retention by count (`keep`) and
 * by age (`ttl`, copied to each Backup). The Backups it creates are named
 * `<schedule>-<yyyymmdd-hhmm>` (the scheduled time in UTC), labelled
 * `eventdb.io/backup-schedule: <schedule>` and owned by the schedule. The controller is
 * ../controllers/backupschedule/.
 */
import { z } from 'zod';
import { BackupTemplate } from './backup.js';
import {
  ClusterReference,
  Conditions,
  CronSchedule,
  Duration,
  ObjectMeta,
  TimeZone,
  Timestamp,
  celRules,
} from './common.js';
import { API_VERSION, KIND_BACKUP_SCHEDULE } from './group.js';

/** `<schedule>-yyyymmdd-hhmm` must stay a valid object name whose children (`-filecopy`, ...) fit 63 characters. */
export const BACKUP_SCHEDULE_NAME_MAX = 40;

export const BackupScheduleSpec = z
  .object({
    cluster: ClusterReference.meta(
      celRules({ rule: 'self == oldSelf', message: 'spec.cluster of a BackupSchedule is immutable: create another schedule' }),
    ).describe('The EventDBCluster (same namespace) to back up; immutable.'),
    schedule: CronSchedule,
    timeZone: TimeZone.default('UTC').describe('IANA time zone the schedule is read in, such as UTC or Europe/Berlin.'),
    suspend: z
      .boolean()
      .default(false)
      .describe('true: no new Backup is created (a running one finishes); false resumes the schedule.'),
    backupTemplate: BackupTemplate,
    keep: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe(
        'Completed Backups of this schedule kept; older ones are deleted (never a running one, never the newest completed one). Failed ones: at most this many are kept too. Absent: no count limit.',
      ),
    ttl: Duration.optional().describe(
      'Copied to each Backup: deleted this long after it completed (the last successful backup of the cluster is kept).',
    ),
    startingDeadline: Duration.optional().describe(
      'A backup not started within this after its scheduled time (the previous one still running, the operator down) is skipped, with an Event. Absent: it starts late.',
    ),
  })
  .describe('When to back up a cluster, how, and how many backups to keep.');
export type BackupScheduleSpec = z.infer<typeof BackupScheduleSpec>;

const BackupReference = z.object({ name: z.string().describe('Name of the Backup.') });

export const BackupScheduleStatus = z
  .object({
    observedGeneration: z.number().int().optional().describe('The generation of the spec this status describes.'),
    lastScheduleTime: Timestamp.optional().describe('The scheduled time of the last Backup created.'),
    lastSkippedTime: Timestamp.optional().describe('The scheduled time of the last backup skipped (past its startingDeadline).'),
    nextScheduleTime: Timestamp.optional().describe('The next scheduled time (absent while suspended).'),
    lastSuccessfulBackup: z
      .object({
        name: z.string().describe('Name of the Backup.'),
        completedAt: Timestamp.optional().describe('When it completed.'),
        writerCheckpoint: z.number().int().optional().describe('Every event acknowledged at or below this log position is in it.'),
      })
      .optional()
      .describe('The newest Completed Backup of this schedule.'),
    active: z.array(BackupReference).max(100).optional().describe('Backups of this schedule not yet finished (Pending or Running).'),
    conditions: Conditions.optional(),
  })
  .describe('What the operator observed and did.');

export const BackupSchedule = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND_BACKUP_SCHEDULE),
  metadata: ObjectMeta,
  spec: BackupScheduleSpec,
  status: BackupScheduleStatus.optional(),
});
export type BackupSchedule = z.infer<typeof BackupSchedule>;

/**
 * PURE decisions of the BackupSchedule controller, with the time passed in:
 *
 * - `planSchedule`: is a Backup due now (the latest CRON time at or before now that is later than
 *   the last one handled), and what to do about it: create it, wait for this schedule's running
 *   Backup (one at a time per schedule), skip it (past `startingDeadline`), or nothing. Missed
 *   times (the operator down, suspended) collapse into the latest one, as a CronJob's do.
 * - `planPrune`: which finished Backups of the schedule go by count (`keep`): the oldest
 *   Completed ones beyond `keep`, and the oldest Failed ones beyond `keep`; never a Pending or
 *   Running one, never the newest Completed one.
 * - `scheduleStatusSummary`: lastSuccessfulBackup and active, from the schedule's Backups.
 */
import { CronExpressionParser } from 'cron-parser';
import { nextOccurrenceMs } from '../scavengeschedule/scavenge-plan.js';

export interface ScheduledBackupView {
  readonly name: string;
  readonly phase?: string;
  readonly completedAt?: string;
  readonly creationTimestamp?: string;
  readonly writerCheckpoint?: number;
  readonly ttl?: string;
}

/** The ttl a pruned Backup is given: the Backup controller then removes it (and a file copy's folder). */
export const PRUNE_TTL = '0s';

const pad2 = (value: number): string => String(value).padStart(2, '0');

/** `<schedule>-yyyymmdd-hhmm`, the scheduled time in UTC (unambiguous across DST changes). */
export function scheduledBackupName(schedule: string, scheduledMs: number): string {
  const at = new Date(scheduledMs);
  return `${schedule}-${at.getUTCFullYear()}${pad2(at.getUTCMonth() + 1)}${pad2(at.getUTCDate())}-${pad2(at.getUTCHours())}${pad2(at.getUTCMinutes())}`;
}

/** The latest CRON occurrence at or before `nowMs` in `timeZone`; undefined when there is none. */
export function latestOccurrenceMs(schedule: string, timeZone: string, nowMs: number): number | undefined {
  try {
    // prev() is strictly before currentDate: one ms past now lets now itself count.
    return CronExpressionParser.parse(schedule, { tz: timeZone, currentDate: nowMs + 1 }).prev().getTime();
  } catch {
    return undefined;
  }
}

export const finishedPhase = (phase: string | undefined): boolean => phase === 'Completed' || phase === 'Failed';

export interface ScheduleInput {
  readonly scheduleName: string;
  readonly schedule: string;
  readonly timeZone: string;
  readonly suspend: boolean;
  readonly startingDeadlineMs?: number;
  readonly nowMs: number;
  /** The schedule's creation: no time before it is due. */
  readonly createdMs: number;
  readonly lastScheduleMs?: number;
  readonly lastSkippedMs?: number;
  readonly backups: readonly ScheduledBackupView[];
}

export type ScheduleDecision =
  | { readonly kind: 'suspended' }
  | { readonly kind: 'idle'; readonly nextMs?: number }
  | { readonly kind: 'create'; readonly scheduledMs: number; readonly name: string; readonly nextMs?: number }
  /** The Backup of that time exists already (created before the status recording it was written). */
  | { readonly kind: 'already-created'; readonly scheduledMs: number; readonly name: string; readonly nextMs?: number }
  | { readonly kind: 'wait-for-active'; readonly scheduledMs: number; readonly active: string; readonly nextMs?: number; readonly deadlineMs?: number }
  | { readonly kind: 'skip'; readonly scheduledMs: number; readonly name: string; readonly why: string; readonly nextMs?: number };

export function planSchedule(input: ScheduleInput): ScheduleDecision {
  if (input.suspend) return { kind: 'suspended' };
  const nextMs = nextOccurrenceMs(input.schedule, input.timeZone, input.nowMs);
  const withNext = nextMs === undefined ? {} : { nextMs };
  const anchorMs = Math.max(input.createdMs, input.lastScheduleMs ?? -Infinity, input.lastSkippedMs ?? -Infinity);
  const dueMs = latestOccurrenceMs(input.schedule, input.timeZone, input.nowMs);
  if (dueMs === undefined || dueMs <= anchorMs) return { kind: 'idle', ...withNext };
  const name = scheduledBackupName(input.scheduleName, dueMs);
  if (input.backups.some((backup) => backup.name === name)) return { kind: 'already-created', scheduledMs: dueMs, name, ...withNext };
  const active = input.backups.filter((backup) => !finishedPhase(backup.phase)).map((backup) => backup.name).sort()[0];
  const lateMs = input.nowMs - dueMs;
  if (input.startingDeadlineMs !== undefined && lateMs > input.startingDeadlineMs) {
    const why = active === undefined
      ? `not started within startingDeadline of its time (${Math.round(lateMs / 1000)} s late)`
      : `backup ${active} of this schedule was still running at the startingDeadline`;
    return { kind: 'skip', scheduledMs: dueMs, name, why, ...withNext };
  }
  if (active !== undefined) {
    return {
      kind: 'wait-for-active',
      scheduledMs: dueMs,
      active,
      ...withNext,
      ...(input.startingDeadlineMs === undefined ? {} : { deadlineMs: dueMs + input.startingDeadlineMs }),
    };
  }
  return { kind: 'create', scheduledMs: dueMs, name, ...withNext };
}

const timeOf = (backup: ScheduledBackupView): number => {
  const atMs = Date.parse(backup.completedAt ?? backup.creationTimestamp ?? '');
  return Number.isNaN(atMs) ? 0 : atMs;
};

/** Newest first: by completion (creation for one without), then by name (names carry the time). */
const newestFirst = (a: ScheduledBackupView, b: ScheduledBackupView): number => timeOf(b) - timeOf(a) || b.name.localeCompare(a.name);

export interface PruneDecision {
  readonly name: string;
  readonly why: string;
}

export function planPrune(backups: readonly ScheduledBackupView[], keep: number | undefined): PruneDecision[] {
  if (keep === undefined) return [];
  const limit = Math.max(1, keep);
  const pruned: PruneDecision[] = [];
  for (const phase of ['Completed', 'Failed'] as const) {
    const finished = backups.filter((backup) => backup.phase === phase).sort(newestFirst);
    for (const backup of finished.slice(limit)) {
      if (backup.ttl === PRUNE_TTL) continue; // already on its way out
      pruned.push({ name: backup.name, why: `keep ${limit}: ${finished.length} ${phase} backups of the schedule` });
    }
  }
  return pruned;
}

export interface ScheduleStatusSummary {
  readonly lastSuccessfulBackup?: { readonly name: string; readonly completedAt?: string; readonly writerCheckpoint?: number };
  readonly active: readonly { readonly name: string }[];
  /** The newest finished Backup of the schedule failed (no later one completed). */
  readonly lastFailed?: string;
}

export function scheduleStatusSummary(backups: readonly ScheduledBackupView[]): ScheduleStatusSummary {
  const finished = backups.filter((backup) => finishedPhase(backup.phase)).sort(newestFirst);
  const good = finished.find((backup) => backup.phase === 'Completed');
  const newest = finished[0];
  return {
    ...(good === undefined
      ? {}
      : {
          lastSuccessfulBackup: {
            name: good.name,
            ...(good.completedAt === undefined ? {} : { completedAt: good.completedAt }),
            ...(good.writerCheckpoint === undefined ? {} : { writerCheckpoint: good.writerCheckpoint }),
          },
        }),
    active: backups.filter((backup) => !finishedPhase(backup.phase)).map((backup) => ({ name: backup.name })).sort((a, b) => a.name.localeCompare(b.name)),
    ...(newest?.phase === 'Failed' ? { lastFailed: newest.name } : {}),
  };
}

// The BackupSchedule's pure decisions with the time passed in: what is due, when it waits or is
// skipped, what keep prunes (never a running backup, never the newest completed one).
import { describe, expect, it } from 'vitest';
import { PRUNE_TTL, latestOccurrenceMs, planPrune, planSchedule, scheduleStatusSummary, scheduledBackupName, type ScheduleInput, type ScheduledBackupView } from './backup-schedule-plan.js';

const at = (text: string): number => Date.parse(text);
const base: ScheduleInput = {
  scheduleName: 'nightly',
  schedule: '0 2 * * *',
  timeZone: 'UTC',
  suspend: false,
  nowMs: at('2026-12-01T02:00:30Z'),
  createdMs: at('2026-11-01T00:00:00Z'),
  backups: [],
};

describe('scheduledBackupName', () => {
  it('is <schedule>-yyyymmdd-hhmm of the scheduled time in UTC', () => {
    expect(scheduledBackupName('nightly', at('2026-12-01T02:00:00Z'))).toBe('nightly-20261201-0200');
    expect(scheduledBackupName('s', at('2026-03-09T23:05:00+01:00'))).toBe('s-20260309-2205');
  });
});

describe('latestOccurrenceMs', () => {
  it('counts now itself, and reads the schedule in its time zone', () => {
    expect(latestOccurrenceMs('0 2 * * *', 'UTC', at('2026-12-01T02:00:00Z'))).toBe(at('2026-12-01T02:00:00Z'));
    expect(latestOccurrenceMs('0 2 * * *', 'UTC', at('2026-12-01T01:59:59Z'))).toBe(at('2026-11-30T02:00:00Z'));
    expect(latestOccurrenceMs('0 2 * * *', 'Europe/Berlin', at('2026-12-01T01:30:00Z'))).toBe(at('2026-12-01T01:00:00Z'));
  });
});

describe('planSchedule', () => {
  it('creates the Backup of the latest due time once, then waits for the next time', () => {
    const first = planSchedule(base);
    expect(first).toEqual({ kind: 'create', scheduledMs: at('2026-12-01T02:00:00Z'), name: 'nightly-20261201-0200', nextMs: at('2026-12-02T02:00:00Z') });
    const after = planSchedule({ ...base, lastScheduleMs: at('2026-12-01T02:00:00Z'), nowMs: at('2026-12-01T05:00:00Z') });
    expect(after).toEqual({ kind: 'idle', nextMs: at('2026-12-02T02:00:00Z') });
  });

  it('never makes a backup for a time before the schedule existed', () => {
    expect(planSchedule({ ...base, createdMs: at('2026-12-01T02:00:10Z') })).toMatchObject({ kind: 'idle' });
  });

  it('finds a Backup created before its status was written instead of making it again', () => {
    expect(planSchedule({ ...base, backups: [{ name: 'nightly-20261201-0200' }] })).toMatchObject({ kind: 'already-created', name: 'nightly-20261201-0200' });
  });

  it('collapses missed times into the latest one (the operator was down three days)', () => {
    const decision = planSchedule({ ...base, lastScheduleMs: at('2026-11-28T02:00:00Z'), nowMs: at('2026-12-01T03:00:00Z') });
    expect(decision).toMatchObject({ kind: 'create', name: 'nightly-20261201-0200' });
  });

  it('waits for the schedule\'s running Backup, then skips the time once past startingDeadline', () => {
    const running: ScheduledBackupView[] = [{ name: 'nightly-20261130-0200', phase: 'Running' }];
    expect(planSchedule({ ...base, backups: running })).toMatchObject({ kind: 'wait-for-active', active: 'nightly-20261130-0200' });
    expect(planSchedule({ ...base, backups: running, startingDeadlineMs: 3_600_000 })).toMatchObject({ kind: 'wait-for-active', deadlineMs: at('2026-12-01T03:00:00Z') });
    const late = planSchedule({ ...base, backups: running, startingDeadlineMs: 3_600_000, nowMs: at('2026-12-01T03:00:01Z') });
    expect(late).toMatchObject({ kind: 'skip', name: 'nightly-20261201-0200' });
    expect(late.kind === 'skip' && late.why).toContain('nightly-20261130-0200');
    // once skipped it is not skipped again, nor created
    expect(planSchedule({ ...base, backups: running, startingDeadlineMs: 3_600_000, nowMs: at('2026-12-01T03:00:05Z'), lastSkippedMs: at('2026-12-01T02:00:00Z') })).toMatchObject({ kind: 'idle' });
  });

  it('a Pending backup counts as active; finished ones do not', () => {
    expect(planSchedule({ ...base, backups: [{ name: 'x', phase: undefined as never }] })).toMatchObject({ kind: 'wait-for-active' });
    expect(planSchedule({ ...base, backups: [{ name: 'a', phase: 'Completed' }, { name: 'b', phase: 'Failed' }] })).toMatchObject({ kind: 'create' });
  });

  it('suspended: nothing, not even a next time', () => {
    expect(planSchedule({ ...base, suspend: true })).toEqual({ kind: 'suspended' });
  });

  it('every minute: one backup per minute', () => {
    const minute = { ...base, schedule: '* * * * *', createdMs: at('2026-12-01T02:00:10Z') };
    expect(planSchedule({ ...minute, nowMs: at('2026-12-01T02:00:50Z') })).toMatchObject({ kind: 'idle', nextMs: at('2026-12-01T02:01:00Z') });
    expect(planSchedule({ ...minute, nowMs: at('2026-12-01T02:01:00Z') })).toMatchObject({ kind: 'create', name: 'nightly-20261201-0201', nextMs: at('2026-12-01T02:02:00Z') });
  });
});

describe('planPrune', () => {
  const completed = (day: number): ScheduledBackupView => ({ name: `nightly-202612${String(day).padStart(2, '0')}-0200`, phase: 'Completed', completedAt: `2026-12-${String(day).padStart(2, '0')}T02:05:00Z` });

  it('keeps the newest `keep` Completed backups and prunes the older ones', () => {
    const backups = [completed(3), completed(1), completed(4), completed(2)];
    expect(planPrune(backups, 2).map((decision) => decision.name)).toEqual(['nightly-20261202-0200', 'nightly-20261201-0200']);
    expect(planPrune(backups, 4)).toEqual([]);
    expect(planPrune(backups, undefined)).toEqual([]);
  });

  it('never prunes a Pending or Running backup, and counts Failed ones apart', () => {
    const backups: ScheduledBackupView[] = [
      completed(1),
      { name: 'r', phase: 'Running', creationTimestamp: '2026-11-01T00:00:00Z' },
      { name: 'p', phase: 'Pending' },
      { name: 'n' },
      { name: 'f1', phase: 'Failed', completedAt: '2026-11-01T00:00:00Z' },
      { name: 'f2', phase: 'Failed', completedAt: '2026-11-02T00:00:00Z' },
    ];
    expect(planPrune(backups, 1).map((decision) => decision.name)).toEqual(['f1']);
  });

  it('does not prune again a backup already given ttl 0s', () => {
    expect(planPrune([completed(2), { ...completed(1), ttl: PRUNE_TTL }], 1)).toEqual([]);
  });
});

describe('scheduleStatusSummary', () => {
  it('names the newest Completed backup, the active ones, and a failure newer than any success', () => {
    const summary = scheduleStatusSummary([
      { name: 'a', phase: 'Completed', completedAt: '2026-12-01T02:05:00Z', writerCheckpoint: 42 },
      { name: 'b', phase: 'Failed', completedAt: '2026-12-02T02:05:00Z' },
      { name: 'c', phase: 'Running' },
    ]);
    expect(summary).toEqual({ lastSuccessfulBackup: { name: 'a', completedAt: '2026-12-01T02:05:00Z', writerCheckpoint: 42 }, active: [{ name: 'c' }], lastFailed: 'b' });
    expect(scheduleStatusSummary([{ name: 'a', phase: 'Failed', completedAt: '2026-12-01T00:00:00Z' }, { name: 'b', phase: 'Completed', completedAt: '2026-12-02T00:00:00Z' }]).lastFailed).toBeUndefined();
  });
});

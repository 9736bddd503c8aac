/**
 * PURE: the one-off scavenge cycle. The ScavengeSchedule API has no "run now" trigger, so the
 * plugin creates a schedule whose CRON names one minute of one day (`M H D Mon *`, UTC): its one
 * occurrence comes at least `leadMs` from now (so the controller computes it as the next one
 * and does not skip it as missed), and the next would be a year later. `scavenge --wait` deletes
 * the schedule when the cycle has a result.
 */
import { API_VERSION, KIND_SCAVENGE_SCHEDULE, LABEL_CLUSTER } from '../api/group.js';

export const LABEL_ONE_OFF = 'eventdb.io/one-off';

export function oneShotCron(nowMs: number, leadMs = 30_000): { schedule: string; atMs: number } {
  const atMs = Math.ceil((nowMs + leadMs) / 60_000) * 60_000;
  const at = new Date(atMs);
  return { schedule: `${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} *`, atMs };
}

/** `20261202-014500`: UTC, for object names. */
export function stamp(nowMs: number): string {
  return new Date(nowMs).toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

export function oneOffSchedule(options: { cluster: string; namespace: string; nowMs: number; respectMaintenanceWindows: boolean; throttlePercent: number; nodeTimeout: string }) {
  const { schedule, atMs } = oneShotCron(options.nowMs);
  return {
    atMs,
    object: {
      apiVersion: API_VERSION,
      kind: KIND_SCAVENGE_SCHEDULE,
      metadata: {
        name: `${options.cluster}-once-${stamp(options.nowMs)}`.slice(0, 63),
        namespace: options.namespace,
        labels: { [LABEL_CLUSTER]: options.cluster, [LABEL_ONE_OFF]: 'true' },
        annotations: { 'eventdb.io/created-by': 'kubectl-eventdb scavenge' },
      },
      spec: {
        cluster: { name: options.cluster },
        schedule,
        timeZone: 'UTC',
        respectMaintenanceWindows: options.respectMaintenanceWindows,
        throttlePercent: options.throttlePercent,
        nodeTimeout: options.nodeTimeout,
        historyLimit: 1,
      },
    },
  };
}

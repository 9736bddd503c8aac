/**
 * Maintenance windows: a five-field CRON for when a window opens, its time zone, and how long it
 * stays open (cert-manager's renewal windows). Disruptive steps start only while a window is
 * open; a step already running finishes. Pure: the time is passed in.
 */
import { CronExpressionParser } from 'cron-parser';
import { parseDurationMs } from '../../api/common.js';

export interface Window {
  readonly schedule: string;
  readonly timeZone: string;
  readonly durationMs: number;
}

export type WindowState =
  | { readonly open: true; readonly closesAtMs: number }
  | { readonly open: false; readonly opensAtMs: number | undefined };

/** Throws a message naming the problem when the schedule or zone cannot be used. */
export function checkWindow(window: { schedule: string; timeZone?: string; duration: string }): Window {
  const timeZone = window.timeZone ?? 'UTC';
  const durationMs = parseDurationMs(window.duration);
  if (durationMs <= 0) throw new Error(`duration ${window.duration} must be longer than zero`);
  if (window.schedule.trim().split(/\s+/).length !== 5 && !window.schedule.startsWith('@')) {
    throw new Error(`schedule '${window.schedule}' must have five fields`);
  }
  try {
    CronExpressionParser.parse(window.schedule, { tz: timeZone, currentDate: 0 }).next();
  } catch (err: unknown) {
    throw new Error(`schedule '${window.schedule}' in ${timeZone}: ${(err as Error).message}`);
  }
  return { schedule: window.schedule, timeZone, durationMs };
}

function latestStartMs(window: Window, nowMs: number): number | undefined {
  try {
    // A window that opens exactly now is open: look back from just after now.
    return CronExpressionParser.parse(window.schedule, { tz: window.timeZone, currentDate: nowMs + 1 }).prev().getTime();
  } catch {
    return undefined;
  }
}

function nextStartMs(window: Window, nowMs: number): number | undefined {
  try {
    return CronExpressionParser.parse(window.schedule, { tz: window.timeZone, currentDate: nowMs }).next().getTime();
  } catch {
    return undefined;
  }
}

/** Open when any window is (none at all: always open); else when the next one opens. */
export function windowState(windows: readonly Window[], nowMs: number): WindowState {
  if (windows.length === 0) return { open: true, closesAtMs: Number.POSITIVE_INFINITY };
  let closesAtMs: number | undefined;
  let opensAtMs: number | undefined;
  for (const window of windows) {
    const startMs = latestStartMs(window, nowMs);
    if (startMs !== undefined && startMs + window.durationMs > nowMs) {
      closesAtMs = Math.max(closesAtMs ?? 0, startMs + window.durationMs);
    }
    const next = nextStartMs(window, nowMs);
    if (next !== undefined) opensAtMs = Math.min(opensAtMs ?? Number.POSITIVE_INFINITY, next);
  }
  return closesAtMs !== undefined ? { open: true, closesAtMs } : { open: false, opensAtMs };
}

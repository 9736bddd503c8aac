/**
 * PURE: the nodes' pino JSON log lines (as the apiserver returns them with timestamps=true:
 * `<RFC 3339 time> <line>`) merged into one time-ordered list and rendered readable.
 */
import { paint } from './render.js';

export interface LogEntry {
  readonly pod: string;
  /** The line's time: pino's `time` (ms), else the kubelet's timestamp. */
  readonly timeMs: number;
  /** The line without the kubelet's timestamp. */
  readonly raw: string;
  readonly record: Record<string, unknown> | undefined;
}

const PINO_LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const RESERVED = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'v']);

export function parseLogLine(pod: string, line: string): LogEntry | undefined {
  if (line.trim() === '') return undefined;
  const match = /^(\d{4}-\d\d-\d\dT\S+)\s(.*)$/s.exec(line);
  const kubeletMs = match === null ? Number.NaN : Date.parse(match[1] ?? '');
  const raw = match === null ? line : (match[2] ?? '');
  let record: Record<string, unknown> | undefined;
  if (raw.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) record = parsed as Record<string, unknown>;
    } catch {
      record = undefined;
    }
  }
  const pinoMs = typeof record?.['time'] === 'number' ? record['time'] : typeof record?.['time'] === 'string' ? Date.parse(record['time']) : Number.NaN;
  const timeMs = Number.isFinite(pinoMs) ? pinoMs : Number.isFinite(kubeletMs) ? kubeletMs : 0;
  return { pod, timeMs, raw, record };
}

/** Every pod's lines, one list ordered by time (stable: a pod's own order is kept on ties). */
export function interleave(logs: ReadonlyMap<string, string>): LogEntry[] {
  const entries: LogEntry[] = [];
  for (const [pod, text] of logs) {
    for (const line of text.split('\n')) {
      const entry = parseLogLine(pod, line);
      if (entry !== undefined) entries.push(entry);
    }
  }
  return entries.map((entry, index) => ({ entry, index })).sort((a, b) => a.entry.timeMs - b.entry.timeMs || a.index - b.index).map(({ entry }) => entry);
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (value !== null && typeof value === 'object') {
    const err = value as { message?: unknown; type?: unknown };
    if (typeof err.message === 'string' && typeof err.type === 'string') return JSON.stringify(`${err.type}: ${err.message}`);
    return JSON.stringify(value);
  }
  return String(value);
}

/** `2026-12-02T01:02:03.456Z orders-1 INFO  message key=value ...`, or with `json`, the raw line prefixed with nothing. */
export function renderLogEntry(entry: LogEntry, options: { readonly colour: boolean; readonly podWidth: number; readonly json: boolean }): string {
  if (options.json) return entry.record === undefined ? JSON.stringify({ pod: entry.pod, time: entry.timeMs, msg: entry.raw }) : JSON.stringify({ pod: entry.pod, ...entry.record });
  const p = paint(options.colour);
  const time = entry.timeMs > 0 ? new Date(entry.timeMs).toISOString() : '-'.padEnd(24);
  const pod = entry.pod.padEnd(options.podWidth);
  if (entry.record === undefined) return `${p.dim(time)} ${pod} ${entry.raw}`;
  const levelNumber = Number(entry.record['level'] ?? 30);
  const level = (PINO_LEVELS[levelNumber] ?? String(entry.record['level'])).padEnd(5);
  const coloured = levelNumber >= 50 ? p.red(level) : levelNumber >= 40 ? p.yellow(level) : levelNumber <= 20 ? p.dim(level) : level;
  const fields = Object.entries(entry.record)
    .filter(([key]) => !RESERVED.has(key))
    .map(([key, value]) => `${p.dim(`${key}=`)}${formatValue(value)}`);
  return [`${p.dim(time)} ${pod} ${coloured} ${String(entry.record['msg'] ?? '')}`, ...fields].join(' ');
}

/** Where following a pod's log starts after its backlog was printed, and which lines it already printed. */
export interface FollowStart {
  /** RFC 3339, whole seconds (what the apiserver's sinceTime takes): the second of the last line printed, else when the backlog was asked for. */
  readonly sinceTime: string;
  /** The backlog's lines (with their kubelet timestamps, nanosecond precision) from that second on: the follow stream repeats them. */
  readonly printed: ReadonlySet<string>;
}

const wholeSecond = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * PURE: the follow stream of a pod starts at the second of the last backlog line (so nothing
 * written between the backlog and the follow is lost); the lines of that second it repeats are
 * dropped by their exact text.
 */
export function followStart(backlog: string, askedAtMs: number): FollowStart {
  const lines = backlog.split('\n').filter((line) => line.trim() !== '');
  const stamps = lines.map((line) => Date.parse(/^(\d{4}-\d\d-\d\dT\S+)\s/.exec(line)?.[1] ?? ''));
  const lastMs = stamps.filter((ms) => Number.isFinite(ms)).reduce((max, ms) => Math.max(max, ms), Number.NEGATIVE_INFINITY);
  if (!Number.isFinite(lastMs)) return { sinceTime: wholeSecond(askedAtMs), printed: new Set() };
  const fromMs = Math.floor(lastMs / 1000) * 1000;
  return { sinceTime: wholeSecond(lastMs), printed: new Set(lines.filter((_, i) => (stamps[i] ?? Number.NaN) >= fromMs)) };
}

/** PURE: a filter for one pod's follow stream: drops the lines the backlog printed, until the first new one. */
export function newLinesOnly(start: FollowStart): (line: string) => boolean {
  let caughtUp = start.printed.size === 0;
  return (line) => {
    if (caughtUp) return true;
    if (start.printed.has(line)) return false;
    caughtUp = true;
    return true;
  };
}

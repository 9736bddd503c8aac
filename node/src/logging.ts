/**
 * The node's root logger. Created once in main.ts and passed down; modules take a child with a
 * `component` binding, never a module-level singleton.
 *
 * Redaction is set here, at the root, so no child can leak credentials: authorization headers
 * and anything named password or token.
 *
 * Two formats (`--log-format`): `json`, pino's one JSON object a line, and `pretty`, one
 * readable line an entry for a terminal, written by a small destination here (no pino-pretty).
 */
import { writeSync } from 'node:fs';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  '*.password',
  '*.token',
  '*.defaultAdminPassword',
  '*.defaultOpsPassword',
];

export interface RootLogger {
  readonly log: Logger;
  /** Writes anything buffered synchronously; call before process.exit. */
  readonly flushSync: () => void;
}

export type LogFormat = 'json' | 'pretty';

const LEVEL_NAMES: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Keys a pretty line shows in its own place, not as `key=value`. */
const PLACED_KEYS = new Set(['time', 'level', 'msg', 'component', 'pid', 'hostname', 'err']);

function prettyValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/**
 * One pino JSON line as one readable line: `time LEVEL [component] message key=value ...`,
 * an error as `err=Type: message` (its stack stays in the JSON format). A line that is not
 * JSON is passed on as it is.
 */
export function prettyLine(jsonLine: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  if (entry === null || typeof entry !== 'object') return `${jsonLine.trimEnd()}\n`;
  const level = typeof entry.level === 'number' ? (LEVEL_NAMES[entry.level] ?? `L${entry.level}`) : String(entry.level ?? '');
  const parts = [String(entry.time ?? ''), level.padEnd(5)];
  if (entry.component !== undefined) parts.push(`[${String(entry.component)}]`);
  if (typeof entry.msg === 'string' && entry.msg !== '') parts.push(entry.msg.replace(/[\r\n]+/g, ' '));
  for (const [key, value] of Object.entries(entry)) {
    if (!PLACED_KEYS.has(key) && value !== undefined) parts.push(`${key}=${prettyValue(value)}`);
  }
  const err = entry.err as { type?: unknown; message?: unknown } | undefined;
  if (err !== undefined && err !== null && typeof err === 'object')
    parts.push(`err=${prettyValue(`${String(err.type ?? 'Error')}: ${String(err.message ?? '')}`)}`);
  return `${parts.join(' ')}\n`;
}

/** A destination that writes every entry as a pretty line, synchronously, to file descriptor `fd`. */
export function prettyDestination(fd = 1, write: (fd: number, text: string) => void = (f, t) => void writeSync(f, t)): DestinationStream {
  return {
    write(line: string): void {
      try {
        write(fd, prettyLine(line));
      } catch {
        // stdout is gone (a closed pipe): there is nowhere left to report to.
      }
    },
  };
}

export function createRootLogger(options: {
  level: string;
  format?: LogFormat;
  destination?: DestinationStream;
}): RootLogger {
  const destination =
    options.destination ?? (options.format === 'pretty' ? prettyDestination() : pino.destination({ dest: 1, sync: true }));
  const log = pino(
    {
      level: options.level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
  const flushSync = (): void => {
    const sonic = destination as { flushSync?: () => void };
    try {
      sonic.flushSync?.();
    } catch {
      // Nothing buffered, or stdout is gone: there is nowhere left to report to.
    }
  };
  return { log, flushSync };
}

/** A child logger for one component (`api`, `storage`, `config`). */
export function componentLogger(parent: Logger, component: string): Logger {
  return parent.child({ component });
}

/**
 * The node's root logger. Created once in main.ts and passed down; modules take a child with a
 * `component` binding, never a module-level singleton.
 *
 * Redaction is set here, at the root, so no child can leak credentials: authorization headers
 * and anything named password or token.
 */
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

export function createRootLogger(options: {
  level: string;
  destination?: DestinationStream;
}): RootLogger {
  const destination = options.destination ?? pino.destination({ dest: 1, sync: true });
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

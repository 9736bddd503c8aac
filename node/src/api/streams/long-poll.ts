/**
 * Long polling (SVC-LongPoll / ES-LongPoll): a read that finds nothing new waits up to N
 * seconds for a matching commit, then reads again. The watcher subscribes before the first
 * read, so a write that lands between the read and the wait is not missed.
 */
import type { CommittedWrite, EventDb } from '../../storage/event-db-types.js';

export interface CommitWatcher {
  /**
   * Resolves true on a matching commit (also one seen before the call), false on timeout or
   * abort.
   */
  wait(timeoutMs: number, signal: AbortSignal): Promise<boolean>;
  dispose(): void;
}

/** Aborts when the response closes (client gone) or the server is closing. */
export function longPollSignal(
  response: { once(event: 'close', listener: () => void): unknown },
  closing: AbortSignal,
): AbortSignal {
  const clientGone = new AbortController();
  response.once('close', () => clientGone.abort());
  return AbortSignal.any([clientGone.signal, closing]);
}

export function watchCommits(
  db: EventDb,
  matches: (write: CommittedWrite) => boolean,
): CommitWatcher {
  let seen = false;
  let wake: (() => void) | undefined;
  const unsubscribe = db.onCommitted((write) => {
    if (!matches(write)) return;
    seen = true;
    wake?.();
  });
  return {
    wait(timeoutMs, signal) {
      if (seen) return Promise.resolve(true);
      if (signal.aborted) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const finish = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', finish);
          wake = undefined;
          resolve(seen);
        };
        const timer = setTimeout(finish, timeoutMs);
        signal.addEventListener('abort', finish);
        wake = finish;
      });
    },
    dispose: unsubscribe,
  };
}

/**
 * Wakes a live subscription when a matching write becomes durable. It keeps one flag, never the
 * events: a subscriber that is slow to read simply finds more to read at its next catch-up read,
 * so the node never buffers on its behalf (back-pressure is the HTTP/2 stream's flow control).
 */
import type { CommittedWrite, EventDb } from '../storage/event-db-types.js';

export class CommitSignal {
  private pending = false;
  private wake: (() => void) | undefined;
  private readonly unsubscribe: () => void;

  constructor(db: EventDb, matches: (write: CommittedWrite) => boolean) {
    this.unsubscribe = db.onCommitted((write) => {
      if (!matches(write)) return;
      this.pending = true;
      this.wake?.();
    });
  }

  /** Resolves at the next matching write (at once if one came since the last wait), or on abort. */
  async wait(signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
    this.pending = false;
  }

  close(): void {
    this.unsubscribe();
    this.wake?.();
  }
}

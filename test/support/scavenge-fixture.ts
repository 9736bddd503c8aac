/**
 * Helpers for scavenge tests: a listener that records every callback, a one-call run, and temp
 * directories with SQLite scavenge states that are closed and removed after each test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import type { Engine } from '../../node/src/storage/event-db.js';
import type { ScavengeListener, ScavengeOutcome, ScavengeParams, ScavengeState } from '../../node/src/storage/scavenge/scavenge-types.js';
import { openSqliteScavengeState, type SqliteScavengeStateOptions } from '../../node/src/storage/scavenge/sqlite-scavenge-state.js';

export class RecordingListener implements ScavengeListener {
  readonly calls: { kind: string; info: Record<string, unknown> }[] = [];
  private push(kind: string, info: object): Promise<void> {
    this.calls.push({ kind, info: info as Record<string, unknown> });
    return Promise.resolve();
  }
  started(info: Parameters<ScavengeListener['started']>[0]): Promise<void> { return this.push('started', info); }
  chunkExecuted(info: Parameters<ScavengeListener['chunkExecuted']>[0]): Promise<void> { return this.push('chunkExecuted', info); }
  chunksMerged(info: Parameters<ScavengeListener['chunksMerged']>[0]): Promise<void> { return this.push('chunksMerged', info); }
  indexExecuted(info: Parameters<ScavengeListener['indexExecuted']>[0]): Promise<void> { return this.push('indexExecuted', info); }
  completed(info: Parameters<ScavengeListener['completed']>[0]): Promise<void> { return this.push('completed', info); }
  count(kind: string): number { return this.calls.filter((c) => c.kind === kind).length; }
}

export const DEFAULT_SCAVENGE: ScavengeParams = { threads: 1, threshold: 0, throttlePercent: 100, syncOnly: false };

export async function scavenge(db: Engine, params: Partial<ScavengeParams> = {}, listener = new RecordingListener()): Promise<{ outcome: ScavengeOutcome; listener: RecordingListener }> {
  const handle = db.startScavenge(crypto.randomUUID(), { ...DEFAULT_SCAVENGE, ...params }, listener);
  const outcome = await handle.done;
  return { outcome, listener };
}

/** Where the scavenge database of an index directory lives. */
export function scavengeDbPath(indexPath: string): string {
  return join(indexPath, 'scavenging', 'scavenging.db');
}

/**
 * Index directories (named `<prefix>…` under the temp directory) and SQLite scavenge states for
 * the calling test file; after each test every state opened here is closed and every directory
 * removed.
 */
export function sqliteStateFixture(prefix: string): {
  makeIndexPath(): string;
  open(options: Partial<SqliteScavengeStateOptions> & { indexPath: string }): ScavengeState;
} {
  const log = pino({ level: 'silent' });
  const directories: string[] = [];
  const opened: ScavengeState[] = [];
  afterEach(() => {
    for (const state of opened.splice(0)) state.close();
    for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  });
  return {
    makeIndexPath() {
      const indexPath = mkdtempSync(join(tmpdir(), prefix));
      directories.push(indexPath);
      return indexPath;
    },
    open(options) {
      const state = openSqliteScavengeState({ log, ...options });
      opened.push(state);
      return state;
    },
  };
}

/**
 * Helpers for scavenge tests: a listener that records every callback, and a one-call run.
 */
import type { Engine } from '../../node/src/storage/event-db.js';
import type { ScavengeListener, ScavengeOutcome, ScavengeParams } from '../../node/src/storage/scavenge/scavenge-types.js';

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

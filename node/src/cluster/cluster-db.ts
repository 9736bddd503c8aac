/**
 * The database as a cluster member's HTTP API and services see it (the EventDb contract):
 * reads are served from the local engine; writes go where the cluster says (`WriteRouter`: the
 * local engine on the leader, waiting for a quorum, or forwarded to the leader).
 *
 * The engine behind it can be replaced: a replica whose log diverged from its leader's sets
 * truncate.chk and reopens its storage (`StorageHost.restart`) without anyone's help, and the
 * listeners of committed writes move to the new engine. While it reopens, calls answer 503.
 */
import type { Logger } from 'pino';
import { EventDbError } from '../errors.js';
import type {
  AllPosition, AppendResult, CommittedWrite, EngineStats, EventDb, NewEvent, ReadAllResult, ReadDirection,
  ReadEventResult, ReadStreamResult, ScavengeHandle, ScavengeListener, ScavengeParams, StreamMetadata, StreamState,
} from '../storage/event-db-types.js';
import type { ClusterStorage, Engine } from '../storage/event-db.js';

export function notReady(message = 'Server Is Not Ready'): EventDbError {
  return new EventDbError('EDB_NOT_READY', message, { httpStatus: 503, details: { reason: 'Server Is Not Ready' } });
}

/** A client write, as it travels to the leader. */
export type WriteOp =
  | { readonly op: 'append'; readonly stream: string; readonly expectedVersion: number; readonly events: readonly NewEvent[] }
  | { readonly op: 'delete'; readonly stream: string; readonly expectedVersion: number; readonly hard: boolean }
  | { readonly op: 'metadata'; readonly stream: string; readonly expectedVersion: number; readonly metadata: Record<string, unknown>; readonly eventId?: string };

export interface WriteRouter {
  write(op: WriteOp): Promise<AppendResult>;
}

/** Carries out a write on a given engine (the leader's local path). */
export function writeLocally(engine: EventDb, op: WriteOp): Promise<AppendResult> {
  switch (op.op) {
    case 'append': return engine.append(op.stream, op.expectedVersion, op.events);
    case 'delete': return engine.deleteStream(op.stream, op.expectedVersion, op.hard);
    case 'metadata': return engine.setStreamMetadata(op.stream, op.expectedVersion, op.metadata, op.eventId);
  }
}

export class StorageHost {
  private current: Engine | undefined;
  private readonly listeners = new Set<(w: CommittedWrite) => void>();
  private readonly engineListeners = new Set<(engine: Engine) => void>();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly open: () => Promise<Engine>, private readonly log: Logger) {}

  async start(): Promise<Engine> {
    return this.attach(await this.open());
  }

  private attach(engine: Engine): Engine {
    this.current = engine;
    this.unsubscribe = engine.onCommitted((w) => {
      for (const l of this.listeners) l(w);
    });
    for (const l of this.engineListeners) l(engine);
    return engine;
  }

  /** The engine, or 503 while it reopens. */
  get engine(): Engine {
    if (this.current === undefined) throw notReady();
    return this.current;
  }

  get storage(): ClusterStorage {
    return this.engine;
  }

  get available(): boolean {
    return this.current !== undefined;
  }

  /** Called with each new engine after a restart. */
  onEngine(listener: (engine: Engine) => void): void {
    this.engineListeners.add(listener);
  }

  onCommitted(listener: (w: CommittedWrite) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Cuts the log back to `position` (truncate.chk) by closing and reopening the engine. */
  async restartTruncated(position: number): Promise<Engine> {
    const engine = this.engine;
    const cut = engine.truncationPointFor(position);
    this.log.warn({ truncatePosition: cut, writerPosition: engine.durablePosition }, 'the log diverged from the leader\'s: truncating and reopening the storage');
    await engine.requestTruncation(cut);
    this.current = undefined;
    this.unsubscribe?.();
    await engine.close();
    return this.attach(await this.open());
  }

  async close(): Promise<void> {
    const engine = this.current;
    this.current = undefined;
    this.unsubscribe?.();
    await engine?.close();
  }
}

export class ClusterEventDb implements EventDb {
  constructor(private readonly host: StorageHost, private readonly router: WriteRouter) {}

  append(stream: string, expectedVersion: number, events: readonly NewEvent[]): Promise<AppendResult> {
    return this.router.write({ op: 'append', stream, expectedVersion, events });
  }

  deleteStream(stream: string, expectedVersion: number, hard: boolean): Promise<AppendResult> {
    return this.router.write({ op: 'delete', stream, expectedVersion, hard });
  }

  setStreamMetadata(stream: string, expectedVersion: number, raw: Record<string, unknown>, eventId?: string): Promise<AppendResult> {
    return this.router.write({ op: 'metadata', stream, expectedVersion, metadata: raw, ...(eventId === undefined ? {} : { eventId }) });
  }

  readStream(stream: string, fromEventNumber: number, maxCount: number, direction: ReadDirection): Promise<ReadStreamResult> {
    return this.host.engine.readStream(stream, fromEventNumber, maxCount, direction);
  }

  readEvent(stream: string, eventNumber: number): Promise<ReadEventResult> {
    return this.host.engine.readEvent(stream, eventNumber);
  }

  readAll(from: AllPosition | undefined, maxCount: number, direction: ReadDirection): Promise<ReadAllResult> {
    return this.host.engine.readAll(from, maxCount, direction);
  }

  streamState(stream: string): Promise<StreamState> {
    return this.host.engine.streamState(stream);
  }

  getStreamMetadata(stream: string): Promise<{ metadata: StreamMetadata; metastreamVersion: number }> {
    return this.host.engine.getStreamMetadata(stream);
  }

  onCommitted(listener: (write: CommittedWrite) => void): () => void {
    return this.host.onCommitted(listener);
  }

  mergeIndexes(): Promise<void> {
    return this.host.engine.mergeIndexes();
  }

  startScavenge(scavengeId: string, params: ScavengeParams, listener: ScavengeListener): ScavengeHandle {
    return this.host.engine.startScavenge(scavengeId, params, listener);
  }

  stats(): EngineStats {
    return this.host.engine.stats();
  }

  close(): Promise<void> {
    return this.host.close();
  }
}

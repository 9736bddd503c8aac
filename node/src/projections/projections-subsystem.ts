/**
 * The projections subsystem behind one small interface: main.ts creates it (unless
 * RunProjections is None), starts it once the node serves, and stops it before the engine
 * closes; the HTTP API maps requests onto its manager. On a cluster only the leader would run it:
 * start/stop are all a leadership change needs.
 */
import type { Logger } from 'pino';
import type { EventDb } from '../storage/event-db-types.js';
import { CommitWatch } from './engine/event-reader.js';
import { ProjectionManager } from './management/projection-manager.js';
import type { ReadCheck } from './management/managed-projection.js';
import type { RunProjections } from './projection-types.js';
import { readEvents, type ReadEventsRequest } from './read-events.js';

export interface ProjectionsSubsystemOptions {
  readonly db: EventDb;
  readonly log: Logger;
  readonly runProjections: RunProjections;
  readonly startStandardProjections: boolean;
  readonly queryExpiryMinutes: number;
  readonly executionTimeoutMs: number;
  readonly compilationTimeoutMs: number;
  readonly memoryLimitMb: number;
  readonly maxStateSizeBytes: number;
  /** The node's ACL check: projections created by other users than $admins/$ops read as them. */
  readonly canRead?: ReadCheck;
}

export interface ProjectionsSubsystem {
  readonly runProjections: RunProjections;
  readonly manager: ProjectionManager;
  /** Loads the projections (creating the system ones on first start) and starts the enabled ones. */
  start(): Promise<void>;
  /** Stops every projection (each writes a checkpoint); the engine may close afterwards. */
  stop(): Promise<void>;
  /** `mayRead`: the requesting user's read check (links to streams it may not read stay links). */
  readEvents(request: ReadEventsRequest, mayRead?: (stream: string) => Promise<boolean>): Promise<string>;
}

export function createProjectionsSubsystem(options: ProjectionsSubsystemOptions): ProjectionsSubsystem {
  let watch: CommitWatch | undefined;
  const lazyWatch = (): CommitWatch => (watch ??= new CommitWatch(options.db));
  const manager = new ProjectionManager(
    {
      db: options.db,
      get watch() {
        return lazyWatch();
      },
      log: options.log,
      limits: {
        executionTimeoutMs: options.executionTimeoutMs,
        compilationTimeoutMs: options.compilationTimeoutMs,
        memoryLimitMb: options.memoryLimitMb,
        maxStateSizeBytes: options.maxStateSizeBytes,
      },
      ...(options.canRead === undefined ? {} : { canRead: options.canRead }),
    },
    {
      runProjections: options.runProjections,
      startStandardProjections: options.startStandardProjections,
      queryExpiryMs: options.queryExpiryMinutes * 60_000,
    },
  );
  return {
    runProjections: options.runProjections,
    manager,
    async start() {
      lazyWatch();
      await manager.start();
      options.log.info({ runProjections: options.runProjections }, 'projections started');
    },
    async stop() {
      await manager.stop();
      watch?.close();
      watch = undefined;
    },
    readEvents(request, mayRead) {
      return readEvents(options.db, lazyWatch(), request, mayRead);
    },
  };
}

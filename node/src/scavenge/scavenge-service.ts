/**
 * The node's scavenge admin service, after EventStoreDB's StorageScavenger: at most one run at
 * a time, started, stopped and observed through the admin API; the engine does the work.
 *
 * - `start` gives every run a new id (a UUID), asks the engine to start (or resume) and returns
 *   at once; the run reports progress through its listener (scavenge-run.ts), which writes the
 *   history streams.
 * - `stop` asks the current run to stop and resolves once it has stopped and its history is
 *   written.
 * - `last` is in memory only: `Unknown` after a restart, as AutoScavenge expects.
 * - `initialise` runs once at node start: it sets `$scavenges` metadata and marks runs a
 *   previous process left unfinished as `Interrupted`.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import type { Logger } from 'pino';

import { EventDbError } from '../errors.js';
import type {
  EventDb,
  ScavengeHandle,
  ScavengeOutcome,
  ScavengeParams,
  ScavengeResult,
} from '../storage/event-db-types.js';
import { completeInterruptedScavenges, readRunOutcome, scanScavengeLog } from './interrupted-scavenges.js';
import { ScavengeHistory, type EventDbForScavengeHistory } from './scavenge-history.js';
import { ScavengeRun, type ScavengeProgress } from './scavenge-run.js';

export type LastScavengeResult = 'Unknown' | 'InProgress' | 'Success' | 'Stopped' | 'Errored';

export type StartScavengeResult =
  | { readonly kind: 'started'; readonly scavengeId: string }
  | { readonly kind: 'already-running' };

export type StopScavengeResult =
  | { readonly kind: 'stopped'; readonly scavengeId: string }
  | { readonly kind: 'not-found' };

/** What /metrics reports of this node's scavenges (ScavengeService.figures). */
export interface ScavengeFigures {
  /** The running scavenge: its id, when this process started it, and the last chunk scavenged so far. */
  readonly running: { readonly scavengeId: string; readonly startedAtMs: number; readonly chunksScavengedUpTo: number } | undefined;
  readonly last: LastScavenge;
  /** Runs this process finished, by result (Success, Stopped, Errored, Interrupted). */
  readonly finishedByResult: ReadonlyMap<string, number>;
  /** When the last run this process finished ended (ms since the epoch), by result. */
  readonly lastFinishedAtMs: ReadonlyMap<string, number>;
}

export interface LastScavenge {
  /** Undefined when no scavenge ran since the node started. */
  readonly scavengeId: string | undefined;
  readonly result: LastScavengeResult;
}

/** The engine operations the service needs. */
export type EventDbForScavenge = EventDbForScavengeHistory & Pick<EventDb, 'startScavenge'>;

export interface ScavengeServiceOptions {
  readonly db: EventDbForScavenge;
  readonly log: Logger;
  /** `--scavenge-history-max-age`, in days. */
  readonly historyMaxAgeDays: number;
  /** `host:port` of this node's HTTP endpoint, written into every history event. */
  readonly nodeEndpoint: () => string;
  /** Default: a random UUID. */
  readonly newScavengeId?: () => string;
}

/** Results of this process's runs answered from memory (see ScavengeService.finished). */
const FINISHED_RUNS_KEPT = 100;

/** Recent runs whose history metadata is refreshed at node start (as in EventStoreDB). */
const RECENT_RUN_COUNT_MAX = 30;

/** The path segment that names whichever run is current in `DELETE /admin/scavenge/{id}`. */
export const CURRENT_SCAVENGE = 'current';

interface ActiveRun {
  readonly run: ScavengeRun;
  readonly handle: ScavengeHandle;
  readonly startedAtMs: number;
  /** Resolves after the run ended, its history is written and `last` is updated. */
  readonly settled: Promise<void>;
}

export class ScavengeService {
  private readonly db: EventDbForScavenge;
  private readonly log: Logger;
  private readonly history: ScavengeHistory;
  private readonly nodeEndpoint: () => string;
  private readonly newScavengeId: () => string;
  private readonly startedHere = new Set<string>();
  /**
   * Results of the runs this process ran, newest last (at most FINISHED_RUNS_KEPT). A cluster
   * member writes its history through the leader: the leader acknowledges once a quorum has the
   * events, and this node's own log may receive them a moment later. Until then its history
   * would say Started without Completed (Unknown), and a scheduler (the operator, auto-scavenge)
   * would take the run for lost and start another.
   */
  private readonly finished = new Map<string, ScavengeResult>();
  /** Runs of an earlier process found unfinished after the start-up scan (markInterruptedLate). */
  private readonly markingLate = new Set<string>();
  private initialiseDone = false;
  private active: ActiveRun | undefined;
  private lastScavengeId: string | undefined;
  private lastResult: LastScavengeResult = 'Unknown';
  private initialised: Promise<void> | undefined;
  private readonly finishedByResult = new Map<string, number>();
  private readonly lastFinishedAtMs = new Map<string, number>();

  constructor(options: ScavengeServiceOptions) {
    this.db = options.db;
    this.log = options.log;
    this.nodeEndpoint = options.nodeEndpoint;
    this.newScavengeId = options.newScavengeId ?? randomUUID;
    this.history = new ScavengeHistory({
      db: options.db,
      log: options.log,
      historyMaxAgeDays: options.historyMaxAgeDays,
    });
  }

  /**
   * Node start: `$scavenges` metadata, the metadata of this node's recent run streams, then
   * `Interrupted` for runs a previous process left unfinished. Never throws.
   */
  initialise(): Promise<void> {
    this.initialised ??= this.initialiseOnce();
    return this.initialised;
  }

  private async initialiseOnce(): Promise<void> {
    try {
      await this.history.ensureIndexStreamMetadata();
      const nodeEndpoint = this.nodeEndpoint();
      const scan = await scanScavengeLog(this.db, this.log, nodeEndpoint);
      for (const scavengeId of scan.started.slice(-RECENT_RUN_COUNT_MAX)) {
        await this.history.ensureRunStreamMetadata(scavengeId);
      }
      const { db, history, log } = this;
      const runningIds = this.startedHere;
      // Marked here: never a second time by markInterruptedLate.
      for (const scavengeId of scan.started) if (!scan.completed.has(scavengeId)) this.markingLate.add(scavengeId);
      await completeInterruptedScavenges({ db, history, log, nodeEndpoint, runningIds }, scan);
    } catch (err: unknown) {
      this.log.error({ err }, 'cannot initialise the scavenge history');
    } finally {
      this.initialiseDone = true;
    }
  }

  /** Starts a run unless one is running. Synchronous, so two requests cannot both start. */
  start(params: ScavengeParams): StartScavengeResult {
    if (this.active !== undefined) return { kind: 'already-running' };
    const scavengeId = this.newScavengeId();
    const run = new ScavengeRun({
      scavengeId,
      history: this.history,
      log: this.log,
      nodeEndpoint: this.nodeEndpoint(),
    });
    let handle: ScavengeHandle;
    try {
      handle = this.db.startScavenge(scavengeId, params, run);
    } catch (err: unknown) {
      if (err instanceof EventDbError && err.code === 'EDB_SCAVENGE_RUNNING') {
        return { kind: 'already-running' };
      }
      throw err;
    }
    this.startedHere.add(scavengeId);
    this.lastScavengeId = scavengeId;
    this.lastResult = 'InProgress';
    const settled = this.settle(run, handle);
    this.active = { run, handle, settled, startedAtMs: Date.now() };
    this.log.info({ scavengeId, ...params }, 'scavenge requested');
    return { kind: 'started', scavengeId };
  }

  /** Stops the current run (`id` is its id or `current`); resolves once it has stopped. */
  async stop(id: string): Promise<StopScavengeResult> {
    const active = this.active;
    if (active === undefined || (id !== CURRENT_SCAVENGE && id !== active.run.scavengeId)) {
      return { kind: 'not-found' };
    }
    const scavengeId = active.run.scavengeId;
    this.log.info({ scavengeId }, 'stopping scavenge');
    try {
      await active.handle.stop();
    } catch (err: unknown) {
      this.log.warn({ scavengeId, err }, 'stopping the scavenge failed; waiting for it to end');
    }
    await active.settled;
    return { kind: 'stopped', scavengeId };
  }

  /** The id of the running scavenge, if any. */
  currentScavengeId(): string | undefined {
    return this.active?.run.scavengeId;
  }

  /** The progress of the running scavenge (of `scavengeId` when given); undefined when it is not running. */
  progress(scavengeId?: string): ScavengeProgress | undefined {
    const run = this.active?.run;
    if (run === undefined || (scavengeId !== undefined && run.scavengeId !== scavengeId)) return undefined;
    return run.progress();
  }

  /**
   * The state of one run, by id: `InProgress` while it runs, the result of a run this process
   * ran, else the result its history records (`Success`, `Stopped`, `Errored`, `Interrupted`;
   * `Unknown` while a run cut short by a crash is not yet marked); undefined when no such run is
   * known.
   */
  async status(scavengeId: string): Promise<string | undefined> {
    if (this.active?.run.scavengeId === scavengeId) return 'InProgress';
    const finished = this.finished.get(scavengeId);
    if (finished !== undefined) return finished;
    const outcome = await readRunOutcome(this.db, scavengeId);
    if (outcome === undefined) return undefined;
    if (outcome.result !== undefined) return outcome.result;
    // Started by this node, not by this process, never completed: an earlier process of this
    // node was cut short. A follower killed right after a start may get that `$scavengeStarted`
    // (written through the leader) only while catching up after its restart, when the start-up
    // scan has already run: it is marked now.
    if (outcome.startedBy === this.nodeEndpoint() && !this.startedHere.has(scavengeId)) {
      this.markInterruptedLate(scavengeId);
      return 'Interrupted';
    }
    return 'Unknown';
  }

  /** Writes the `$scavengeCompleted` (Interrupted) the start-up scan could not see; once. */
  private markInterruptedLate(scavengeId: string): void {
    // Before the start-up scan is done it may still mark the run itself.
    if (!this.initialiseDone || this.markingLate.has(scavengeId)) return;
    this.markingLate.add(scavengeId);
    this.finished.set(scavengeId, 'Interrupted');
    const { db, history, log } = this;
    const nodeEndpoint = this.nodeEndpoint();
    void completeInterruptedScavenges({ db, history, log, nodeEndpoint, runningIds: this.startedHere }, { started: [scavengeId], completed: new Set() })
      .catch((err: unknown) => log.warn({ err, scavengeId }, 'could not mark the interrupted scavenge'));
  }

  last(): LastScavenge {
    return { scavengeId: this.lastScavengeId, result: this.lastResult };
  }

  /** Counts and the current run's progress, read at scrape time (metrics). */
  figures(): ScavengeFigures {
    const active = this.active;
    return {
      running: active === undefined ? undefined : {
        scavengeId: active.run.scavengeId, startedAtMs: active.startedAtMs, chunksScavengedUpTo: active.run.chunksScavengedUpTo,
      },
      last: this.last(),
      finishedByResult: this.finishedByResult,
      lastFinishedAtMs: this.lastFinishedAtMs,
    };
  }

  /** Node shutdown: stops a running scavenge and waits for its history. */
  async close(): Promise<void> {
    if (this.active !== undefined) await this.stop(CURRENT_SCAVENGE);
    await this.initialised;
  }

  private async settle(run: ScavengeRun, handle: ScavengeHandle): Promise<void> {
    const outcome = await handle.done.catch((err: unknown): ScavengeOutcome => {
      this.log.error({ scavengeId: run.scavengeId, err }, 'scavenge failed');
      const reason = err instanceof Error ? err.message : String(err);
      const error = `Error while scavenging DB: ${reason}`;
      return { result: 'Errored', error, spaceSavedBytes: 0, timeTakenMs: 0 };
    });
    await run.finish(outcome);
    this.finished.set(run.scavengeId, outcome.result);
    this.finishedByResult.set(outcome.result, (this.finishedByResult.get(outcome.result) ?? 0) + 1);
    this.lastFinishedAtMs.set(outcome.result, Date.now());
    for (const oldest of this.finished.keys()) {
      if (this.finished.size <= FINISHED_RUNS_KEPT) break;
      this.finished.delete(oldest);
    }
    if (this.lastScavengeId === run.scavengeId) this.lastResult = lastResultOf(outcome.result);
    if (this.active?.run === run) this.active = undefined;
  }
}

function lastResultOf(result: ScavengeResult): LastScavengeResult {
  return result === 'Interrupted' ? 'Errored' : result;
}

export function createScavengeService(options: ScavengeServiceOptions): ScavengeService {
  return new ScavengeService(options);
}

/** `host:port` for history events, from the configured host and the port actually bound. */
export function nodeEndpointOf(address: AddressInfo | string | null, host: string): string {
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return `${host}:${port}`;
}

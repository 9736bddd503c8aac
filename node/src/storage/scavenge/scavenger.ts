/**
 * The scavenge orchestrator. A run is tied to one scavenge point and goes through the stages in
 * order, each checkpointed in the scavenge state so a stopped or crashed run resumes where it
 * ended (spec "Scavenging semantics" 5, 8, 9):
 *
 *   Beginning: resume an unfinished checkpoint; else use the newest scavenge point not yet
 *              completed; else (unless syncOnly) write a new one.
 *   Accumulating -> Calculating -> ExecutingChunks -> MergingChunks -> ExecutingIndex ->
 *   Cleaning -> Done.
 */
import type { Logger } from 'pino';
import { accumulate } from './accumulate.js';
import { calculate } from './calculate.js';
import {
  chunksInScope, chunkWeight, executeChunks, executeIndex, mergeChunks, prepareIndexEarly, reportIndexExecuted, type ExecutionTotals,
} from './execute.js';
import type { PreparedRemoval } from '../index/stream-index-port.js';
import { ScavengePacer, ScavengeStopped, type ScavengeAccess } from './scavenge-access.js';
import type { ScavengeCheckpoint, ScavengeListener, ScavengeOutcome, ScavengeParams, ScavengePoint, ScavengeState } from './scavenge-types.js';
import { FatalError } from '../../errors.js';
import { dropScratch } from '../chunk/scratch-buffers.js';
import { dropAligned } from '../../platform/direct-file.js';

export interface ScavengeRunOptions {
  readonly scavengeId: string;
  readonly params: ScavengeParams;
  readonly listener: ScavengeListener;
  readonly signal: AbortSignal;
  readonly onFatal: (err: Error) => void;
}

export async function runScavenge(access: ScavengeAccess, options: ScavengeRunOptions): Promise<ScavengeOutcome> {
  const startedMs = performance.now();
  const log = access.log.child({ scavengeId: options.scavengeId });
  const totals: ExecutionTotals = { spaceSavedBytes: 0, executedChunks: 0, maxChunkScavenged: -1 };
  let state: ScavengeState | undefined;
  let outcome: ScavengeOutcome;
  try {
    state = access.openState();
    const begun = await begin(access, state, options, log);
    await options.listener.started({ scavengeId: options.scavengeId, scavengePoint: begun?.scavengePoint });
    if (begun) {
      log.info({ stage: begun.stage, scavengePoint: begun.scavengePoint }, 'scavenge started');
      log.info({ stage: begun.stage }, 'scavenge stage');
      reportStage(access, options, begun);
      await runStages(access, state, begun, options, log, totals);
    } else {
      log.info('scavenge has nothing to do: no unreached scavenge point and syncOnly is set');
    }
    outcome = finish('Success', null);
  } catch (err: unknown) {
    if (err instanceof ScavengeStopped) {
      log.info('scavenge stopped');
      outcome = finish('Stopped', null);
    } else {
      log.error({ err }, 'scavenge failed');
      outcome = finish('Errored', `Error while scavenging DB: ${(err as Error).message}`);
      if (err instanceof FatalError) options.onFatal(err);
    }
  } finally {
    // Replaced chunk files are deleted in the background: the space is given back before the
    // run reports its end.
    await access.registry.settleRemovals();
    state?.close();
    dropScratch();
    dropAligned();
  }
  await options.listener.completed({
    scavengeId: options.scavengeId, result: outcome.result, error: outcome.error, timeTakenMs: outcome.timeTakenMs,
    spaceSavedBytes: outcome.spaceSavedBytes, maxChunkScavenged: totals.maxChunkScavenged,
  }).catch((err: unknown) => log.warn({ err }, 'could not record scavenge completion'));
  log.info({ result: outcome.result, spaceSavedBytes: outcome.spaceSavedBytes, timeTakenMs: Math.round(outcome.timeTakenMs) }, 'scavenge completed');
  return outcome;

  function finish(result: ScavengeOutcome['result'], error: string | null): ScavengeOutcome {
    return { result, error, spaceSavedBytes: totals.spaceSavedBytes, timeTakenMs: performance.now() - startedMs };
  }
}

/** Tells the listener (the admin API's progress) which stage the run is in. */
function reportStage(access: ScavengeAccess, options: ScavengeRunOptions, checkpoint: ScavengeCheckpoint): void {
  const inScope = chunksInScope(access, checkpoint.scavengePoint);
  const chunks = inScope.reduce((most, c) => Math.max(most, c.header.chunkEndNumber + 1), 0);
  options.listener.stageStarted?.({ scavengeId: options.scavengeId, stage: checkpoint.stage, chunksInScope: chunks });
}

async function begin(access: ScavengeAccess, state: ScavengeState, options: ScavengeRunOptions, log: Logger): Promise<ScavengeCheckpoint | undefined> {
  const checkpoint = state.getCheckpoint();
  if (checkpoint && checkpoint.stage !== 'Done') {
    log.info({ stage: checkpoint.stage }, 'resuming the previous scavenge');
    return checkpoint;
  }
  const latest = access.latestScavengePoint();
  let point: ScavengePoint;
  if (latest && latest.number > state.lastCompletedScavengePointNumber()) {
    point = latest;
  } else if (options.params.syncOnly) {
    return undefined;
  } else {
    point = await access.writeScavengePoint(options.params.threshold);
  }
  const first: ScavengeCheckpoint = { stage: 'Accumulating', scavengePoint: point, doneLogicalChunkNumber: null };
  state.transaction(() => state.setCheckpoint(first));
  return first;
}

async function runStages(
  access: ScavengeAccess, state: ScavengeState, checkpoint: ScavengeCheckpoint, options: ScavengeRunOptions, log: Logger, totals: ExecutionTotals,
): Promise<void> {
  const pacer = new ScavengePacer(options.signal, options.params.throttlePercent);
  try {
    await runStagesPaced(access, state, checkpoint, options, log, totals, pacer);
  } finally {
    log.info({ activeMs: Math.round(pacer.activeMs), restMs: Math.round(pacer.restMs), throttlePercent: options.params.throttlePercent }, 'scavenge pacing');
  }
}

async function runStagesPaced(
  access: ScavengeAccess, state: ScavengeState, checkpoint: ScavengeCheckpoint, options: ScavengeRunOptions, log: Logger, totals: ExecutionTotals,
  pacer: ScavengePacer,
): Promise<void> {
  const point = checkpoint.scavengePoint;
  const run = { scavengeId: options.scavengeId, listener: options.listener, threads: options.params.threads };
  const set = (c: ScavengeCheckpoint): void => {
    state.transaction(() => state.setCheckpoint(c));
    log.info({ stage: c.stage }, 'scavenge stage');
    reportStage(access, options, c);
  };
  let stage = checkpoint.stage;
  if (stage === 'Accumulating') {
    const { accumulated, summarised } = await accumulate(access, state, point, pacer);
    log.info({ chunks: accumulated, fromSummaries: summarised, hashUsers: state.hashUsersCacheStats() }, 'accumulation done');
    set({ stage: 'Calculating', scavengePoint: point, doneStream: null });
    stage = 'Calculating';
  }
  if (stage === 'Calculating') {
    const doneStream = checkpoint.stage === 'Calculating' ? checkpoint.doneStream : null;
    const streams = await calculate(access, state, point, doneStream, pacer);
    log.info({ streams }, 'calculation done');
    set({ stage: 'ExecutingChunks', scavengePoint: point, doneLogicalChunkNumber: null });
    stage = 'ExecutingChunks';
  }
  // With one thread and no throttle, the index stage writes its new table while the last chunk
  // copies are made durable and swapped in; it is committed only after the checkpoint says
  // execution and merging are done, and aborted (the table deleted) if the run ends earlier.
  let early: { startedMs: number; prepared: Promise<PreparedRemoval | undefined> } | undefined;
  let earlySettled = false;
  try {
    if (stage === 'ExecutingChunks') {
      const done = checkpoint.stage === 'ExecutingChunks' ? checkpoint.doneLogicalChunkNumber : null;
      const onAllFiltered = options.params.threads <= 1 && options.params.throttlePercent >= 100
        ? (pending: Parameters<typeof prepareIndexEarly>[1]) => { early = prepareIndexEarly(access, pending); }
        : undefined;
      await executeChunks(access, state, point, { ...run, doneLogicalChunkNumber: done, onAllFiltered }, pacer, totals);
      log.info({ executedChunks: totals.executedChunks, spaceSavedBytes: totals.spaceSavedBytes }, 'chunk execution done');
      set({ stage: 'MergingChunks', scavengePoint: point });
      stage = 'MergingChunks';
    }
    if (stage === 'MergingChunks') {
      if (!access.disableMerging) await mergeChunks(access, point, run, pacer, totals);
      set({ stage: 'ExecutingIndex', scavengePoint: point });
      stage = 'ExecutingIndex';
    }
    if (stage === 'ExecutingIndex') {
      pacer.checkStopped();
      const prepared = early ? await early.prepared : undefined;
      earlySettled = true;
      if (prepared && early && (await prepared.commit())) {
        await reportIndexExecuted(access, run, prepared.removedEntryCount, early.startedMs);
      } else {
        await executeIndex(access, run, pacer);
      }
      set({ stage: 'Cleaning', scavengePoint: point });
      stage = 'Cleaning';
    }
  } finally {
    if (early && !earlySettled) {
      const prepared = await early.prepared.catch(() => undefined);
      await prepared?.abort().catch((err: unknown) => log.warn({ err }, 'could not delete the index table prepared early'));
    }
  }
  if (stage === 'Cleaning') {
    const leftover = chunksInScope(access, point).some((c) => chunkWeight(state, c) > 0);
    if (leftover) log.info('cleaning skipped: some weighted chunks were below the threshold');
    else state.transaction(() => state.clean());
    state.transaction(() => state.setCheckpoint({ stage: 'Done', scavengePoint: point }));
  }
}

/**
 * Node start: runs of this node that have a `$scavengeStarted` in `$scavenges` but no
 * `$scavengeCompleted` were cut short by a crash or a kill. Each gets a synthesized
 * `$scavengeCompleted` with result `Interrupted` and error "The node was restarted.", whose
 * time taken, space saved and highest chunk are summed from the run's detail events (as
 * EventStoreDB's TFChunkScavengerLogManager does). Only entries whose `nodeEndpoint` is this
 * node's are considered: in a cluster every node writes its own runs to the shared stream.
 *
 * The same scan names this node's most recent runs, whose streams get their history metadata
 * (max age, `$ops` read) again, so a changed `--scavenge-history-max-age` reaches them too.
 */
import type { Logger } from 'pino';

import type { RecordedEvent } from '../storage/event-db-types.js';
import {
  LINK_EVENT_TYPE,
  SCAVENGES_STREAM,
  ScavengeEventType,
  scavengeStreamOf,
  type CompletedPayload,
  type EventDbForScavengeHistory,
  type ScavengeHistory,
} from './scavenge-history.js';
import { parseTimeSpanMs } from './time-span.js';

const READ_PAGE_SIZE = 100;
export const INTERRUPTED_ERROR = 'The node was restarted.';

export interface CompleteInterruptedOptions {
  readonly db: EventDbForScavengeHistory;
  readonly history: ScavengeHistory;
  readonly log: Logger;
  readonly nodeEndpoint: string;
  /** Runs started by this process: still running, never interrupted. */
  readonly runningIds: ReadonlySet<string>;
}

/** What `$scavenges` says about this node's runs. */
export interface ScavengeLogScan {
  /** Ids with a `$scavengeStarted`, oldest first, each once. */
  readonly started: readonly string[];
  readonly completed: ReadonlySet<string>;
}

/** Reads `$scavenges` (resolving its links) and keeps this node's start and end entries. */
export async function scanScavengeLog(
  db: EventDbForScavengeHistory,
  log: Logger,
  nodeEndpoint: string,
): Promise<ScavengeLogScan> {
  const started = new Set<string>();
  const completed = new Set<string>();
  for await (const entry of readStreamForward(db, SCAVENGES_STREAM)) {
    const event = await resolveLink(db, entry);
    const payload = event === undefined ? undefined : parseJsonObject(event.data);
    if (event === undefined || payload === undefined) continue;
    if (payload['nodeEndpoint'] !== nodeEndpoint) continue;
    const scavengeId = payload['scavengeId'];
    if (typeof scavengeId !== 'string') {
      const eventNumber = entry.eventNumber;
      log.warn({ eventNumber }, 'an entry in the scavenge log has no scavengeId');
      continue;
    }
    if (event.eventType === ScavengeEventType.Completed) completed.add(scavengeId);
    if (event.eventType === ScavengeEventType.Started) started.add(scavengeId);
  }
  return { started: [...started], completed };
}

/** Writes the missing `$scavengeCompleted` events; returns the ids it completed. */
export async function completeInterruptedScavenges(
  options: CompleteInterruptedOptions,
  scan: ScavengeLogScan,
): Promise<string[]> {
  const { db, log, nodeEndpoint } = options;
  const interrupted = scan.started.filter(
    (id) => !scan.completed.has(id) && !options.runningIds.has(id),
  );
  if (interrupted.length === 0) {
    log.debug({ nodeEndpoint }, 'no incomplete scavenges found');
    return [];
  }
  const scavengeIds = interrupted;
  log.info({ nodeEndpoint, scavengeIds }, 'marking incomplete scavenges as interrupted');
  for (const scavengeId of interrupted) {
    const totals = await sumRunDetails(db, scavengeId);
    const payload: CompletedPayload = {
      scavengeId,
      nodeEndpoint,
      result: 'Interrupted',
      error: INTERRUPTED_ERROR,
      ...totals,
    };
    await options.history.completed(payload);
  }
  return interrupted;
}

/**
 * What a run's own stream says of it: undefined when the stream has no `$scavengeStarted` (no
 * such run, or its history has aged out), else the node that started it (the `nodeEndpoint` of
 * its `$scavengeStarted`) and the result of its `$scavengeCompleted`, or undefined result while
 * none is written.
 */
export async function readRunOutcome(
  db: EventDbForScavengeHistory,
  scavengeId: string,
): Promise<{ readonly result: string | undefined; readonly startedBy: string | undefined } | undefined> {
  let started = false;
  let startedBy: string | undefined;
  let result: string | undefined;
  for await (const event of readStreamForward(db, scavengeStreamOf(scavengeId))) {
    if (event.eventType === ScavengeEventType.Started) {
      started = true;
      const endpoint = parseJsonObject(event.data)?.['nodeEndpoint'];
      if (typeof endpoint === 'string') startedBy = endpoint;
    }
    if (event.eventType !== ScavengeEventType.Completed) continue;
    const completed = parseJsonObject(event.data)?.['result'];
    if (typeof completed === 'string') result = completed;
  }
  return started ? { result, startedBy } : undefined;
}

type RunTotals = Pick<CompletedPayload, 'timeTakenMs' | 'spaceSavedBytes' | 'maxChunkScavenged'>;

/** Sums the detail events of one run: space saved, time taken, highest chunk scavenged. */
async function sumRunDetails(
  db: EventDbForScavengeHistory,
  scavengeId: string,
): Promise<RunTotals> {
  const totals = { timeTakenMs: 0, spaceSavedBytes: 0, maxChunkScavenged: 0 };
  const detailTypes: readonly string[] = [
    ScavengeEventType.ChunksCompleted,
    ScavengeEventType.MergeCompleted,
    ScavengeEventType.IndexCompleted,
  ];
  for await (const event of readStreamForward(db, scavengeStreamOf(scavengeId))) {
    if (!detailTypes.includes(event.eventType)) continue;
    const payload = parseJsonObject(event.data);
    if (payload === undefined) continue;
    const spaceSaved = payload['spaceSaved'];
    if (typeof spaceSaved === 'number') totals.spaceSavedBytes += spaceSaved;
    const timeTaken = payload['timeTaken'];
    const timeTakenMs = typeof timeTaken === 'string' ? parseTimeSpanMs(timeTaken) : undefined;
    if (timeTakenMs !== undefined) totals.timeTakenMs += timeTakenMs;
    const chunkEnd = payload['chunkEndNumber'];
    if (event.eventType === ScavengeEventType.ChunksCompleted && typeof chunkEnd === 'number') {
      totals.maxChunkScavenged = Math.max(totals.maxChunkScavenged, chunkEnd);
    }
  }
  return totals;
}

async function* readStreamForward(
  db: EventDbForScavengeHistory,
  stream: string,
): AsyncGenerator<RecordedEvent> {
  let from = 0;
  for (;;) {
    const page = await db.readStream(stream, from, READ_PAGE_SIZE, 'forward');
    if (page.kind !== 'success') return;
    yield* page.events;
    if (page.isEndOfStream || page.nextEventNumber <= from) return;
    from = page.nextEventNumber;
  }
}

/** The event a `$>` link points to (data `{n}@{stream}`), or the event itself. */
async function resolveLink(
  db: EventDbForScavengeHistory,
  event: RecordedEvent,
): Promise<RecordedEvent | undefined> {
  if (event.eventType !== LINK_EVENT_TYPE) return event;
  const match = /^(\d+)@(.+)$/s.exec(event.data.toString('utf8'));
  if (match === null) return undefined;
  const [, eventNumber = '', stream = ''] = match;
  const resolved = await db.readEvent(stream, Number(eventNumber));
  return resolved.kind === 'success' ? resolved.event : undefined;
}

function parseJsonObject(data: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(data).toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    return value as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

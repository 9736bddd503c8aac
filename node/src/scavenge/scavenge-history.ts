/**
 * The scavenge history, as EventStoreDB's TFChunkScavengerLog writes it. Each run has its own
 * stream `$scavenges-{scavengeId}`, whose metadata (written when the run starts) limits its age
 * to `--scavenge-history-max-age` days and lets `$ops` read it. The run's start and end are also
 * linked (`$>`, data `{n}@$scavenges-{id}`) into the index stream `$scavenges`, which is what a
 * reader walks to list the runs; the chunk, merge and index detail events stay in the run's own
 * stream, as in EventStoreDB.
 *
 * Payloads are JSON objects with camelCase keys in EventStoreDB's key order; durations are .NET
 * TimeSpan strings. A failed write is retried up to 5 times and then only logged: history is
 * informative, so it never fails or blocks the scavenge itself.
 */
import { randomUUID } from 'node:crypto';

import type { Logger } from 'pino';

import type { AppendResult, EventDb, ScavengeResult } from '../storage/event-db-types.js';
import { formatTimeSpan } from './time-span.js';

/** The index stream of all scavenge runs. */
export const SCAVENGES_STREAM = '$scavenges';
export const LINK_EVENT_TYPE = '$>';
export const ScavengeEventType = {
  Started: '$scavengeStarted',
  ChunksCompleted: '$scavengeChunksCompleted',
  MergeCompleted: '$scavengeMergeCompleted',
  IndexCompleted: '$scavengeIndexCompleted',
  Completed: '$scavengeCompleted',
} as const;
export type ScavengeEventTypeValue = (typeof ScavengeEventType)[keyof typeof ScavengeEventType];

/** Event types also linked into `$scavenges` (EventStoreDB's "detail events"). */
const LINKED_EVENT_TYPES: ReadonlySet<string> = new Set([
  ScavengeEventType.Started,
  ScavengeEventType.Completed,
]);

const WRITE_RETRY_COUNT_MAX = 5;
const SECONDS_PER_DAY = 86_400;
const EXPECTED_VERSION_ANY = -2;

export function scavengeStreamOf(scavengeId: string): string {
  return `${SCAVENGES_STREAM}-${scavengeId}`;
}

/**
 * Metadata of `$scavenges` and of every `$scavenges-{id}`: `$maxAge` in seconds and an ACL that
 * lets `$ops` read and nobody but `$admins` (and the system) write.
 */
export function scavengeHistoryMetadata(historyMaxAgeDays: number): Record<string, unknown> {
  return {
    $maxAge: historyMaxAgeDays * SECONDS_PER_DAY,
    $acl: { $r: '$ops', $w: [], $d: [], $mr: [], $mw: [] },
  };
}

/** The engine operations the history needs. */
export type EventDbForScavengeHistory = Pick<
  EventDb,
  'append' | 'readStream' | 'readEvent' | 'getStreamMetadata' | 'setStreamMetadata'
>;

export interface ScavengeHistoryOptions {
  readonly db: EventDbForScavengeHistory;
  readonly log: Logger;
  /** `--scavenge-history-max-age`, in days. */
  readonly historyMaxAgeDays: number;
}

export interface CompletedPayload {
  readonly scavengeId: string;
  readonly nodeEndpoint: string;
  readonly result: ScavengeResult;
  readonly error: string | null;
  readonly timeTakenMs: number;
  readonly spaceSavedBytes: number;
  readonly maxChunkScavenged: number;
}

/** Writes history events; one instance per node. */
export class ScavengeHistory {
  private readonly db: EventDbForScavengeHistory;
  private readonly log: Logger;
  readonly historyMaxAgeDays: number;

  constructor(options: ScavengeHistoryOptions) {
    this.db = options.db;
    this.log = options.log;
    this.historyMaxAgeDays = options.historyMaxAgeDays;
  }

  /** Sets the run stream's metadata, then writes `$scavengeStarted` (and links it). */
  async started(scavengeId: string, nodeEndpoint: string): Promise<void> {
    const stream = scavengeStreamOf(scavengeId);
    await this.writeWithRetries(stream, 'metadata', () =>
      this.db.setStreamMetadata(
        stream,
        EXPECTED_VERSION_ANY,
        scavengeHistoryMetadata(this.historyMaxAgeDays),
      ),
    );
    await this.write(scavengeId, ScavengeEventType.Started, { scavengeId, nodeEndpoint });
  }

  async completed(payload: CompletedPayload): Promise<void> {
    await this.write(payload.scavengeId, ScavengeEventType.Completed, {
      scavengeId: payload.scavengeId,
      nodeEndpoint: payload.nodeEndpoint,
      result: payload.result,
      error: payload.error,
      timeTaken: formatTimeSpan(payload.timeTakenMs),
      spaceSaved: payload.spaceSavedBytes,
      maxChunkScavenged: payload.maxChunkScavenged,
    });
  }

  /** Appends one event to the run's stream and, for start and end, links it into `$scavenges`. */
  async write(
    scavengeId: string,
    eventType: ScavengeEventTypeValue,
    payload: Record<string, unknown>,
  ): Promise<void> {
    const stream = scavengeStreamOf(scavengeId);
    const data = Buffer.from(JSON.stringify(payload), 'utf8');
    const written = await this.writeWithRetries(stream, eventType, () =>
      this.db.append(stream, EXPECTED_VERSION_ANY, [
        { eventId: randomUUID(), eventType, data, metadata: new Uint8Array(0), isJson: true },
      ]),
    );
    if (written === undefined || !LINKED_EVENT_TYPES.has(eventType)) return;
    const link = Buffer.from(`${written.firstEventNumber}@${stream}`, 'utf8');
    await this.writeWithRetries(SCAVENGES_STREAM, LINK_EVENT_TYPE, () =>
      this.db.append(SCAVENGES_STREAM, EXPECTED_VERSION_ANY, [
        {
          eventId: randomUUID(),
          eventType: LINK_EVENT_TYPE,
          data: link,
          metadata: new Uint8Array(0),
          isJson: false,
        },
      ]),
    );
  }

  /**
   * Sets `$scavenges` metadata unless it already has this max age and lets `$ops` read.
   * Called once at node start.
   */
  async ensureIndexStreamMetadata(): Promise<void> {
    await this.ensureHistoryMetadata(SCAVENGES_STREAM);
  }

  /** The same for one run's stream (node start, for recent runs). */
  async ensureRunStreamMetadata(scavengeId: string): Promise<void> {
    await this.ensureHistoryMetadata(scavengeStreamOf(scavengeId));
  }

  private async ensureHistoryMetadata(stream: string): Promise<void> {
    const wantedMaxAgeSeconds = this.historyMaxAgeDays * SECONDS_PER_DAY;
    const { metadata } = await this.db.getStreamMetadata(stream);
    if (metadata.raw['$maxAge'] === wantedMaxAgeSeconds && opsCanRead(metadata.raw['$acl'])) {
      this.log.debug({ stream }, 'scavenge history metadata already set');
      return;
    }
    this.log.info(
      { stream, maxAgeSeconds: wantedMaxAgeSeconds },
      'setting scavenge history max age and $ops read permission',
    );
    await this.writeWithRetries(stream, 'metadata', () =>
      this.db.setStreamMetadata(
        stream,
        EXPECTED_VERSION_ANY,
        scavengeHistoryMetadata(this.historyMaxAgeDays),
      ),
    );
  }

  /** Runs `append` until it succeeds, at most 1 + 5 times; undefined when every try failed. */
  private async writeWithRetries(
    stream: string,
    what: string,
    append: () => Promise<AppendResult>,
  ): Promise<(AppendResult & { kind: 'success' }) | undefined> {
    for (let attempt = 0; attempt <= WRITE_RETRY_COUNT_MAX; attempt++) {
      try {
        const result = await append();
        if (result.kind === 'success') return result;
        const reason = result.kind;
        this.log.warn({ stream, what, attempt, reason }, 'scavenge history write failed');
      } catch (err: unknown) {
        this.log.warn({ stream, what, attempt, err }, 'scavenge history write failed');
      }
    }
    this.log.error(
      { stream, what, retryCountMax: WRITE_RETRY_COUNT_MAX },
      'scavenge history write failed; retry limit reached',
    );
    return undefined;
  }
}

/** True when a raw `$acl` grants `$ops` read (`$r` is one role or a list of roles). */
function opsCanRead(acl: unknown): boolean {
  if (typeof acl !== 'object' || acl === null) return false;
  const readRoles: unknown = (acl as Record<string, unknown>)['$r'];
  return readRoles === '$ops' || (Array.isArray(readRoles) && readRoles.includes('$ops'));
}

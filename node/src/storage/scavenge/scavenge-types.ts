/**
 * Scavenging contracts: the scavenge point, the resumable checkpoint, the per-stream state the
 * phases keep in the scavenge database (`<index>/scavenging/scavenging.db`), the state port, and
 * the run handle and listener the admin API uses.
 *
 * Phases (spec "Scavenging semantics" 9): Accumulation -> Calculation -> Execution (chunks,
 * merge, index) -> Cleaning. Each phase checkpoints into the state database so a stopped or
 * crashed scavenge resumes where it ended.
 */

/** A scavenge point record (event `$scavengePoint` in stream `$scavengePoints`). */
export interface ScavengePoint {
  /** The point's number: its event number in `$scavengePoints`, counting from 0. */
  readonly number: number;
  /** Log position of the scavenge point record: everything before it is in scope. */
  readonly position: number;
  /** The time used for `$maxAge` (ms since the epoch): the record's timestamp. */
  readonly effectiveNowMs: number;
  /** The weight a chunk must reach to be executed (-1 all, 0 anything removable, >0 heavy). */
  readonly threshold: number;
}

export type ScavengeStage = 'Accumulating' | 'Calculating' | 'ExecutingChunks' | 'MergingChunks' | 'ExecutingIndex' | 'Cleaning' | 'Done';

/** Where a scavenge is (persisted after every unit of work). */
export type ScavengeCheckpoint =
  | { readonly stage: 'Accumulating'; readonly scavengePoint: ScavengePoint; readonly doneLogicalChunkNumber: number | null }
  | { readonly stage: 'Calculating'; readonly scavengePoint: ScavengePoint; readonly doneStream: string | null }
  | { readonly stage: 'ExecutingChunks'; readonly scavengePoint: ScavengePoint; readonly doneLogicalChunkNumber: number | null }
  | { readonly stage: 'MergingChunks'; readonly scavengePoint: ScavengePoint }
  | { readonly stage: 'ExecutingIndex'; readonly scavengePoint: ScavengePoint }
  | { readonly stage: 'Cleaning'; readonly scavengePoint: ScavengePoint }
  | { readonly stage: 'Done'; readonly scavengePoint: ScavengePoint };

export type OriginalStreamStatus = 'Active' | 'Spent' | 'Archived';

/** What the scavenge knows of an original (non-meta) stream with metadata or a tombstone. */
export interface OriginalStreamData {
  readonly stream: string;
  readonly isTombstoned: boolean;
  readonly maxAgeSeconds: number | null;
  readonly maxCount: number | null;
  readonly truncateBefore: number | null;
  /** Events below this number are discarded. */
  readonly discardPoint: number;
  /** Events below this number (and at/after discardPoint) are discarded if older than maxAge. */
  readonly maybeDiscardPoint: number;
  /** The stream's last event number as of the scavenge point (never discarded). */
  readonly lastEventNumber: number;
  readonly status: OriginalStreamStatus;
}

/** What the scavenge knows of a metastream `$$x`. */
export interface MetastreamData {
  readonly metastream: string;
  readonly isTombstoned: boolean;
  /** Metadata events below this number are discarded (metastreams keep only the latest). */
  readonly discardPoint: number;
  /** Logical chunk number of the latest metadata record (weight goes there when replaced). */
  readonly lastRecordChunk: number | null;
}

/** A stream name and its 64-bit hash. */
export interface HashUser {
  readonly hash: bigint;
  readonly stream: string;
}

/**
 * The scavenge database. Implementations: SQLite through WASM (node-sqlite3-wasm) on disk, and
 * an in-memory one for --mem-db and tests. All methods are synchronous (SQLite in WASM is).
 * `transaction` groups the writes of one unit of work (one chunk) atomically with its checkpoint.
 */
export interface ScavengeState {
  getCheckpoint(): ScavengeCheckpoint | undefined;
  setCheckpoint(checkpoint: ScavengeCheckpoint): void;
  /** The number of the last scavenge point a scavenge completed (Done), or -1. */
  lastCompletedScavengePointNumber(): number;
  /** The last logical chunk number accumulated by any scavenge, or -1. */
  lastAccumulatedChunk(): number;
  setLastAccumulatedChunk(chunkNumber: number): void;

  getOriginal(stream: string): OriginalStreamData | undefined;
  setOriginal(data: OriginalStreamData): void;
  /** getOriginal for many streams at once (few statements): the data of those that have any. */
  getOriginals(streams: readonly string[]): Map<string, OriginalStreamData>;
  /** setOriginal for many streams at once (few statements); a stream appears at most once. */
  setOriginals(data: readonly OriginalStreamData[]): void;
  /** Original streams whose status is Active, in stream-name order, after `afterStream`. */
  activeOriginals(afterStream: string | null, limit: number): OriginalStreamData[];
  /** Every original stream whose discard or maybe-discard point is above 0, or that is tombstoned. */
  allOriginalsWithDiscards(): Iterable<OriginalStreamData>;

  getMeta(metastream: string): MetastreamData | undefined;
  setMeta(data: MetastreamData): void;
  /** getMeta for many metastreams at once: the data of those that have any. */
  getMetas(metastreams: readonly string[]): Map<string, MetastreamData>;
  /** setMeta for many metastreams at once; a metastream appears at most once. */
  setMetas(data: readonly MetastreamData[]): void;
  allMetas(): Iterable<MetastreamData>;

  addChunkWeight(logicalChunkNumber: number, weight: number): void;
  getChunkWeight(logicalChunkNumber: number): number;
  resetChunkWeight(logicalChunkNumber: number): void;
  setChunkTimeRange(logicalChunkNumber: number, minMs: number, maxMs: number): void;
  getChunkTimeRange(logicalChunkNumber: number): { minMs: number; maxMs: number } | undefined;

  /**
   * The collision check of accumulation: remembers the first stream name seen per 64-bit hash
   * (bounded LRU cache of `--scavenge-hash-users-cache-capacity` in front of the table).
   * Returns true when `stream` collides with a different name already recorded for `hash`.
   */
  checkHashUser(hash: bigint, stream: string): boolean;
  /** checkHashUser for many (few statements); returns how many collided. */
  checkHashUsers(users: readonly HashUser[]): number;
  hashUsersCacheStats(): { hits: number; misses: number; collisions: number };

  /** Runs `fn` in one transaction: all its writes land together or not at all. */
  transaction<T>(fn: () => T): T;
  /** Drops data no longer needed after a complete scavenge (metastreams, Spent originals). */
  clean(): void;
  close(): void;
}

export interface ScavengeParams {
  /** 1..4: chunks executed in parallel. */
  readonly threads: number;
  readonly threshold: number;
  /** 1..100; must be 100 when threads > 1. */
  readonly throttlePercent: number;
  readonly syncOnly: boolean;
}

export type ScavengeResult = 'Success' | 'Stopped' | 'Errored' | 'Interrupted';

/** Progress callbacks: the admin module turns them into `$scavenges-{id}` history events. */
export interface ScavengeListener {
  started(info: { scavengeId: string; scavengePoint: ScavengePoint | undefined }): Promise<void>;
  /**
   * The run entered `stage` (progress for the admin API, beside the log line); `chunksInScope`
   * counts the logical chunks below the scavenge point. Returns at once.
   */
  stageStarted?(info: { scavengeId: string; stage: ScavengeStage; chunksInScope: number }): void;
  chunkExecuted(info: {
    scavengeId: string; chunkStartNumber: number; chunkEndNumber: number; timeTakenMs: number;
    spaceSavedBytes: number; wasScavenged: boolean; weight: number; errorMessage: string;
  }): Promise<void>;
  chunksMerged(info: {
    scavengeId: string; chunkStartNumber: number; chunkEndNumber: number; timeTakenMs: number;
    spaceSavedBytes: number; wasMerged: boolean; errorMessage: string;
  }): Promise<void>;
  indexExecuted(info: { scavengeId: string; timeTakenMs: number; entriesDeleted: number; entriesKept: number }): Promise<void>;
  completed(info: {
    scavengeId: string; result: ScavengeResult; error: string | null; timeTakenMs: number;
    spaceSavedBytes: number; maxChunkScavenged: number;
  }): Promise<void>;
}

export interface ScavengeOutcome {
  readonly result: ScavengeResult;
  readonly error: string | null;
  readonly spaceSavedBytes: number;
  readonly timeTakenMs: number;
}

export interface ScavengeHandle {
  readonly scavengeId: string;
  /** Resolves when the run has ended (whatever the result). */
  readonly done: Promise<ScavengeOutcome>;
  /** Asks the run to stop at its next cancel point; resolves once it has actually stopped. */
  stop(): Promise<ScavengeOutcome>;
}

export const SCAVENGE_POINTS_STREAM = '$scavengePoints';
export const SCAVENGE_POINT_EVENT_TYPE = '$scavengePoint';

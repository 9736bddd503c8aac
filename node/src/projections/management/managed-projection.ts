/**
 * The lifecycle of one projection (EventStoreDB's ManagedProjection): its persisted definition,
 * the managed state (Stopped, Preparing, Running, Stopping, Completed, Faulted, Aborted, ...), the
 * handler and processing core while it runs, and the last statistics once it has stopped.
 * Operations on one projection run one after another.
 */
import type { Logger } from 'pino';
import type { EventDb } from '../../storage/event-db-types.js';
import { parseTag, tagToJson, type ProjectionVersion } from '../checkpoint-tag.js';
import { CoreProjection, parseStateArray } from '../engine/core-projection.js';
import type { CommitWatch } from '../engine/event-reader.js';
import { JsHandler, NativeProjectionHandler, type ProjectionHandler } from '../engine/handler.js';
import { ProjectionStreams } from '../names.js';
import {
  composeStatus,
  type CoreStatistics,
  type ManagedState,
  type PersistedProjection,
  type ProjectionMode,
} from '../projection-types.js';
import { isPartitioned, validateDefinition, type SourceDefinition } from '../source-definition.js';
import { createNativeHandler } from '../system/system-handlers.js';

export interface RuntimeLimits {
  readonly executionTimeoutMs: number;
  readonly compilationTimeoutMs: number;
  readonly memoryLimitMb: number;
  readonly maxStateSizeBytes: number;
}

/** Whether a user may read a stream (the node's ACLs); projections of $admins/$ops skip it. */
export type ReadCheck = (user: { login: string; groups: readonly string[] }, stream: string) => Promise<boolean>;

export interface ProjectionServices {
  readonly db: EventDb;
  readonly watch: CommitWatch;
  readonly log: Logger;
  readonly limits: RuntimeLimits;
  readonly canRead?: ReadCheck;
}

const OPERATOR_GROUPS = ['$admins', '$ops'];

/** The core's handler name in fault messages (`Handler:`), as the original's Jint handler. */
const JS_HANDLER_TYPE_NAME = 'EventStore.Projections.Core.Services.Interpreted.JintProjectionStateHandler';

export interface StateAnswer {
  readonly body: string;
  /** `ES-Position`: the tag JSON, when the projection has one. */
  readonly position: string | undefined;
}

export class ManagedProjection {
  state: ManagedState = 'Stopped';
  lastAccessMs = Date.now();
  private faultReason = '';
  private core: CoreProjection | undefined;
  private handler: ProjectionHandler | undefined;
  private definitionValue: SourceDefinition | undefined;
  private lastStatistics: CoreStatistics | undefined;
  private lastPosition: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly services: ProjectionServices,
    readonly name: string,
    /** Event number of `$ProjectionCreated` in `$projections-$all` (-2 for transient projections). */
    readonly id: number,
    public persisted: PersistedProjection,
    /** Whether RunProjections lets this projection run. */
    readonly allowedToRun: boolean,
  ) {}

  get mode(): ProjectionMode {
    return this.persisted.mode;
  }

  get enabled(): boolean {
    return this.persisted.enabled;
  }

  get isNative(): boolean {
    return this.persisted.handlerType.startsWith('native:');
  }

  get definition(): SourceDefinition | undefined {
    return this.definitionValue;
  }

  get version(): ProjectionVersion {
    return { id: this.id, epoch: this.persisted.epoch, version: this.persisted.version };
  }

  get streams(): ProjectionStreams {
    const options = this.definitionValue?.options;
    return new ProjectionStreams(this.name, options?.resultStreamName, options?.partitionResultStreamNamePattern);
  }

  get statusText(): string {
    return composeStatus(this.state, this.lastStatistics?.status ?? this.core?.statistics().status, this.enabled);
  }

  get stateReason(): string {
    return this.state === 'Faulted' ? this.faultReason : '';
  }

  get isRunning(): boolean {
    return this.core !== undefined;
  }

  /** Core statistics: live while running, else the last ones (undefined before any run). */
  coreStatistics(): CoreStatistics | undefined {
    return this.core?.statistics() ?? this.lastStatistics;
  }

  /** Runs `op` after the operations queued before it. */
  serialize<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Starts when enabled and allowed to run; otherwise just reads the definition's sources. */
  async startIfEnabled(): Promise<void> {
    if (this.enabled && this.allowedToRun) await this.start();
  }

  async start(): Promise<void> {
    if (this.core !== undefined) return;
    await this.disposeHandler();
    this.state = 'Preparing';
    this.faultReason = '';
    this.lastStatistics = undefined;
    let handler: ProjectionHandler;
    try {
      handler = await this.createHandler();
    } catch (err: unknown) {
      this.setFaulted(err instanceof Error ? err.message : String(err));
      return;
    }
    this.handler = handler;
    this.definitionValue = handler.definition;
    let reader;
    try {
      reader = validateDefinition(handler.definition);
      await this.checkReadAccess(reader.kind === 'all' ? ['$all'] : reader.kind === 'stream' ? [reader.stream] : reader.streams);
    } catch (err: unknown) {
      await this.disposeHandler();
      this.setFaulted(err instanceof Error ? err.message : String(err));
      return;
    }
    const oneTime = this.mode !== 'Continuous';
    const mayReadLinkTarget = this.linkTargetCheck();
    const core = new CoreProjection({
      name: this.name,
      ...(mayReadLinkTarget === undefined ? {} : { mayReadLinkTarget }),
      db: this.services.db,
      watch: this.services.watch,
      log: this.services.log,
      handler,
      reader,
      version: this.version,
      emitEnabled: this.persisted.emitEnabled,
      checkpointsEnabled: !oneTime && !this.persisted.checkpointsDisabled,
      trackEmittedStreams: this.persisted.trackEmittedStreams,
      stopOnEof: oneTime,
      config: {
        checkpointHandledThreshold: this.persisted.checkpointHandledThreshold,
        checkpointUnhandledBytesThreshold: this.persisted.checkpointUnhandledBytesThreshold,
        checkpointAfterMs: this.persisted.checkpointAfterMs,
        pendingEventsThreshold: this.persisted.pendingEventsThreshold,
        maxWriteBatchLength: this.persisted.maxWriteBatchLength,
        maxAllowedWritesInFlight: this.persisted.maxAllowedWritesInFlight,
      },
      handlerTypeName: this.isNative ? this.persisted.handlerType.slice('native:'.length) : JS_HANDLER_TYPE_NAME,
      maxStateSizeBytes: this.services.limits.maxStateSizeBytes,
      onEnded: (outcome) => {
        this.onEnded(core, outcome).catch((err: unknown) =>
          this.services.log.error({ err, projection: this.name }, 'projection could not be wound down'),
        );
      },
    });
    this.core = core;
    this.state = 'Running';
    core.start();
  }

  /**
   * A projection reads as the user who created it: one created by someone outside $admins/$ops
   * (a transient query) may only read streams that user may read.
   */
  private async checkReadAccess(streams: readonly string[]): Promise<void> {
    const mayRead = this.linkTargetCheck();
    if (mayRead === undefined) return;
    // `$all` admits every authenticated reader and is filtered per event where it is read over the
    // API; a projection reads the log unfiltered, so only $admins/$ops may run one over `$all`.
    if (streams.includes('$all')) throw new Error(`Not authorized: ${this.persisted.runAs?.name ?? ''} may not read $all in a projection (only $admins and $ops may)`);
    for (const stream of streams) {
      if (!(await mayRead(stream))) throw new Error(`Not authorized: ${this.persisted.runAs?.name ?? ''} may not read ${stream}`);
    }
  }

  /** The read check of a projection run by a user outside $admins/$ops; undefined: no limit. */
  private linkTargetCheck(): ((stream: string) => Promise<boolean>) | undefined {
    const runAs = this.persisted.runAs;
    const canRead = this.services.canRead;
    if (canRead === undefined || runAs === null) return undefined;
    if (runAs.name === 'admin' || runAs.name === 'ops' || runAs.roles.some((r) => OPERATOR_GROUPS.includes(r))) return undefined;
    const user = { login: runAs.name, groups: runAs.roles };
    return (stream) => canRead(user, stream);
  }

  private async createHandler(): Promise<ProjectionHandler> {
    if (this.isNative) return new NativeProjectionHandler(createNativeHandler(this.persisted.handlerType, this.persisted.query));
    const limits = this.services.limits;
    return JsHandler.create({
      source: this.persisted.query,
      executionTimeoutMs: this.persisted.projectionExecutionTimeout ?? limits.executionTimeoutMs,
      compilationTimeoutMs: limits.compilationTimeoutMs,
      memoryLimitMb: limits.memoryLimitMb,
      log: this.services.log.child({ projection: this.name }),
    });
  }

  private async onEnded(core: CoreProjection, outcome: { kind: 'completed' | 'stopped' } | { kind: 'faulted'; reason: string }): Promise<void> {
    if (this.core !== core) return;
    this.lastStatistics = core.statistics();
    this.lastPosition = core.positionJson();
    this.core = undefined;
    if (outcome.kind === 'faulted') {
      this.setFaulted(outcome.reason);
      await this.disposeHandler();
      return;
    }
    if (outcome.kind === 'completed') {
      // A finished query keeps its handler: its state and result stay readable.
      this.state = 'Completed';
      return;
    }
    if (this.state !== 'Aborting') this.state = 'Stopped';
    else this.state = 'Aborted';
    await this.disposeHandler();
  }

  private setFaulted(reason: string): void {
    this.faultReason = reason;
    this.state = 'Faulted';
    this.services.log.warn({ projection: this.name, reason }, 'projection faulted');
  }

  /** Stops after the batch in hand and checkpoints. */
  async stop(): Promise<void> {
    const core = this.core;
    if (core === undefined) {
      if (this.state === 'Completed') await this.disposeHandler();
      if (this.state !== 'Faulted' && this.state !== 'Aborted') this.state = 'Stopped';
      return;
    }
    this.state = 'Stopping';
    await core.stop();
    if (this.state === 'Stopping') this.state = 'Stopped';
  }

  /** Stops at once, without a checkpoint. */
  async abort(): Promise<void> {
    const core = this.core;
    if (core === undefined) {
      await this.disposeHandler();
      this.state = 'Aborted';
      return;
    }
    this.state = 'Aborting';
    await core.abortRun();
    this.state = 'Aborted';
  }

  async dispose(): Promise<void> {
    const core = this.core;
    if (core !== undefined) await core.abortRun();
    await this.disposeHandler();
  }

  private async disposeHandler(): Promise<void> {
    const handler = this.handler;
    this.handler = undefined;
    if (handler !== undefined) await handler.dispose();
  }

  /** The state (or result) of a partition: live from the handler, else as last checkpointed. */
  async stateOf(partition: string, kind: 'state' | 'result'): Promise<StateAnswer> {
    this.lastAccessMs = Date.now();
    const core = this.core;
    if (core !== undefined) {
      const body = kind === 'state' ? await core.state(partition) : await core.result(partition);
      return { body, position: core.positionJson() };
    }
    const handler = this.handler;
    if (handler !== undefined) {
      const body = kind === 'state' ? await handler.state(partition) : await handler.result(partition);
      return { body, position: this.lastPosition };
    }
    return this.storedState(partition, kind);
  }

  /** What the checkpoint streams hold for a partition ('' when nothing). */
  private async storedState(partition: string, kind: 'state' | 'result'): Promise<StateAnswer> {
    const { db } = this.services;
    const streams = this.streams;
    const checkpoint = await db.readEvent(streams.checkpoint, -1);
    if (checkpoint.kind !== 'success') return { body: '', position: undefined };
    const parsed = parseTag(checkpoint.event.metadata);
    if (parsed === undefined || (parsed.version !== undefined && parsed.version.version < this.persisted.epoch))
      return { body: '', position: undefined };
    const position = tagToJson(parsed.tag);
    // After a restart a stopped projection has not run yet: its definition (does it transform
    // its state?) is read from the source, else `result` would answer the state.
    const definition = await this.readDefinition();
    const definesTransform = definition?.options.definesStateTransform === true;
    const pick = (data: Array<string | null>): string => {
      const value = kind === 'result' && definesTransform ? data[1] : data[0];
      return value ?? '';
    };
    const partitioned = definition === undefined ? partition !== '' : isPartitioned(definition);
    if (!partitioned || partition === '') {
      if (partitioned) return { body: '', position };
      return { body: pick(parseStateArray(checkpoint.event.data.toString('utf8'))), position };
    }
    const page = await db.readStream(streams.partitionCheckpoint(partition), -1, 10, 'backward');
    if (page.kind !== 'success') return { body: '', position };
    for (const event of page.events) {
      const tag = parseTag(event.metadata);
      if (tag === undefined || tag.tag.mode !== parsed.tag.mode) continue;
      return { body: pick(parseStateArray(event.data.toString('utf8'))), position };
    }
    return { body: '', position };
  }

  /** The definition's sources without running it (for `query?config=yes` of a stopped projection). */
  async readDefinition(): Promise<SourceDefinition | undefined> {
    if (this.definitionValue !== undefined) return this.definitionValue;
    try {
      const handler = await this.createHandler();
      this.definitionValue = handler.definition;
      await handler.dispose();
    } catch {
      return undefined;
    }
    return this.definitionValue;
  }

  /** A new source replaces the old: the next run reads its sources anew. */
  forgetDefinition(): void {
    this.definitionValue = undefined;
  }
}

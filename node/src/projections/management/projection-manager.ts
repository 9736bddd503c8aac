/**
 * The projection manager (EventStoreDB's ProjectionManager): the registry of projections in
 * `$projections-$all`, their definitions in `$projections-{name}`, the system projections created
 * at first start, and every management command the HTTP API maps (create, update, enable,
 * disable, abort, reset, delete, config, state, result, statistics).
 *
 * Persistent projections (one-time, continuous) survive restarts; transient ones live in memory
 * and are deleted after `queryExpiryMs` without access. Which projections run depends on
 * RunProjections: System runs the system projections only, All runs user projections too.
 */
import { randomUUID } from 'node:crypto';
import type { EventDb, NewEvent } from '../../storage/event-db-types.js';
import { definitionForQueryConfig } from '../source-definition.js';
import { EventTypes, isSystemProjection, PROJECTIONS_PREFIX, ProjectionStreams, REGISTRATION_STREAM } from '../names.js';
import {
  PersistedProjectionSchema,
  ProjectionDefaults,
  type PersistedProjection,
  type ProjectionConfig,
  type ProjectionMode,
  type ProjectionStatistics,
  type RunProjections,
} from '../projection-types.js';
import { readAllData } from '../engine/emitted-streams.js';
import { SYSTEM_PROJECTION_DEFINITIONS } from '../system/system-handlers.js';
import { ManagedProjection, type ProjectionServices, type StateAnswer } from './managed-projection.js';

export type ProjectionErrorKind = 'not-found' | 'conflict' | 'failed' | 'not-authorized' | 'bad-request';

/** A command that cannot be carried out; the API maps the kind to 404/409/500/401/400. */
export class ProjectionError extends Error {
  constructor(readonly kind: ProjectionErrorKind, message: string) {
    super(message);
    this.name = 'ProjectionError';
  }
}

export interface RunAs {
  readonly name: string;
  readonly roles: readonly string[];
  /** Member of $admins or $ops: may enable, disable, abort and reset persistent projections. */
  readonly isOperator: boolean;
  /**
   * Member of $admins: may also create, redefine (query, config) and delete them. `$ops` may not:
   * a projection reads every stream it names, system streams and `$all` included, and `$ops`
   * may not read system streams (README, "Credentials"). Absent: treated as false.
   */
  readonly isAdmin?: boolean;
}

export interface ManagerOptions {
  readonly runProjections: RunProjections;
  readonly startStandardProjections: boolean;
  readonly queryExpiryMs: number;
}

export interface CreateOptions {
  readonly mode: ProjectionMode;
  readonly name: string | undefined;
  readonly query: string;
  readonly handlerType: string;
  readonly enabled: boolean;
  readonly emitEnabled: boolean;
  readonly checkpointsEnabled: boolean;
  readonly trackEmittedStreams: boolean;
}

export type ListFilter = ProjectionMode | 'Any' | 'AllNonTransient';

const TRANSIENT_ID = -2;
const EXPIRY_CHECK_MS = 60_000;
const EMPTY = Buffer.alloc(0);

function event(eventType: string, data: string, isJson: boolean): NewEvent {
  return { eventId: randomUUID(), eventType, data: Buffer.from(data, 'utf8'), metadata: EMPTY, isJson };
}

function defaultPersisted(overrides: Partial<PersistedProjection> & Pick<PersistedProjection, 'handlerType' | 'query' | 'mode'>): PersistedProjection {
  return {
    enabled: false,
    emitEnabled: false,
    checkpointsDisabled: false,
    trackEmittedStreams: false,
    epoch: -1,
    version: 0,
    runAs: null,
    checkpointHandledThreshold: ProjectionDefaults.checkpointHandledThreshold,
    checkpointAfterMs: ProjectionDefaults.checkpointAfterMs,
    checkpointUnhandledBytesThreshold: ProjectionDefaults.checkpointUnhandledBytesThreshold,
    pendingEventsThreshold: ProjectionDefaults.pendingEventsThreshold,
    maxWriteBatchLength: ProjectionDefaults.maxWriteBatchLength,
    maxAllowedWritesInFlight: ProjectionDefaults.maxAllowedWritesInFlight,
    projectionExecutionTimeout: null,
    deleted: false,
    ...overrides,
  };
}

export class ProjectionManager {
  private readonly projections = new Map<string, ManagedProjection>();
  private registryVersion = -1;
  private registryQueue: Promise<unknown> = Promise.resolve();
  private expiryTimer: NodeJS.Timeout | undefined;
  private started = false;

  constructor(
    private readonly services: ProjectionServices,
    private readonly options: ManagerOptions,
  ) {}

  get db(): EventDb {
    return this.services.db;
  }

  /** Loads the registry (creating it and the system projections on first start) and starts what is enabled. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.loadRegistry();
    for (const projection of this.projections.values()) {
      if (this.options.startStandardProjections && isSystemProjection(projection.name) && !projection.enabled) {
        await projection.serialize(async () => {
          projection.persisted = { ...projection.persisted, enabled: true };
          await this.persist(projection);
        });
      }
      await projection.serialize(() => projection.startIfEnabled());
    }
    this.expiryTimer = setInterval(() => {
      this.expireTransients().catch((err: unknown) => this.services.log.error({ err }, 'expiring transient projections failed'));
    }, EXPIRY_CHECK_MS);
    this.expiryTimer.unref();
  }

  /** Stops every running projection (each checkpoints). */
  async stop(): Promise<void> {
    if (this.expiryTimer !== undefined) clearInterval(this.expiryTimer);
    this.expiryTimer = undefined;
    await Promise.all([...this.projections.values()].map((p) => p.serialize(() => p.stop().then(() => p.dispose()))));
    this.started = false;
  }

  private allowedToRun(name: string): boolean {
    if (this.options.runProjections === 'None') return false;
    return isSystemProjection(name) || this.options.runProjections === 'All';
  }

  private async loadRegistry(): Promise<void> {
    const { db } = this.services;
    const created = new Map<string, number>();
    let initialized = false;
    let from = 0;
    for (;;) {
      const page = await db.readStream(REGISTRATION_STREAM, from, 1000, 'forward');
      if (page.kind !== 'success') break;
      for (const e of page.events) {
        this.registryVersion = e.eventNumber;
        const name = e.data.toString('utf8');
        if (e.eventType === EventTypes.ProjectionsInitialized) initialized = true;
        else if (e.eventType === EventTypes.ProjectionCreated) created.set(name, e.eventNumber);
        else if (e.eventType === EventTypes.ProjectionDeleted) created.delete(name);
      }
      if (page.isEndOfStream || page.events.length === 0) break;
      from = page.nextEventNumber;
    }
    for (const [name, id] of created) {
      const last = await db.readEvent(`${PROJECTIONS_PREFIX}${name}`, -1);
      if (last.kind !== 'success') continue;
      const parsed = PersistedProjectionSchema.safeParse(JSON.parse(last.event.data.toString('utf8')));
      if (!parsed.success || parsed.data.deleted) continue;
      this.projections.set(name, new ManagedProjection(this.services, name, id, parsed.data, this.allowedToRun(name)));
    }
    if (!initialized) {
      await this.appendRegistry([event(EventTypes.ProjectionsInitialized, '', false)]);
      for (const system of SYSTEM_PROJECTION_DEFINITIONS) {
        if (this.projections.has(system.name)) continue;
        await this.register(
          system.name,
          defaultPersisted({
            handlerType: system.handlerType,
            query: system.query,
            mode: 'Continuous',
            emitEnabled: true,
            runAs: { name: '$system', roles: ['$admins'] },
          }),
        );
      }
    }
  }

  /** Appends to `$projections-$all` with its exact expected version; returns the first event number. */
  private async appendRegistry(events: NewEvent[]): Promise<number> {
    const result = await this.services.db.append(REGISTRATION_STREAM, this.registryVersion, events);
    if (result.kind !== 'success') throw new ProjectionError('failed', `Could not write ${REGISTRATION_STREAM}: ${result.kind}`);
    this.registryVersion = result.lastEventNumber;
    return result.firstEventNumber;
  }

  /** Writes the definition, then `$ProjectionCreated` (whose number is the projection's id). */
  private async register(name: string, persisted: PersistedProjection): Promise<ManagedProjection> {
    const first = { ...persisted, version: persisted.version + 1, epoch: persisted.epoch < 0 ? persisted.version + 1 : persisted.epoch };
    const defined = await this.services.db.append(`${PROJECTIONS_PREFIX}${name}`, -2, [
      event(EventTypes.ProjectionUpdated, JSON.stringify(first), true),
    ]);
    if (defined.kind !== 'success') throw new ProjectionError('failed', `Could not write the definition of ${name}: ${defined.kind}`);
    const id = await this.appendRegistry([event(EventTypes.ProjectionCreated, name, false)]);
    const projection = new ManagedProjection(this.services, name, id, first, this.allowedToRun(name));
    this.projections.set(name, projection);
    return projection;
  }

  /** Persists the definition with the next version (`$ProjectionUpdated`). */
  private async persist(projection: ManagedProjection): Promise<void> {
    projection.persisted = { ...projection.persisted, version: projection.persisted.version + 1 };
    if (projection.mode === 'Transient') return;
    const result = await this.services.db.append(`${PROJECTIONS_PREFIX}${projection.name}`, -2, [
      event(EventTypes.ProjectionUpdated, JSON.stringify(projection.persisted), true),
    ]);
    if (result.kind !== 'success') throw new ProjectionError('failed', `Could not write the definition of ${projection.name}: ${result.kind}`);
  }

  private withRegistry<T>(op: () => Promise<T>): Promise<T> {
    const next = this.registryQueue.then(op, op);
    this.registryQueue = next.catch(() => undefined);
    return next;
  }

  private get(name: string): ManagedProjection {
    const projection = this.projections.get(name);
    if (projection === undefined) throw new ProjectionError('not-found', 'Not Found');
    projection.lastAccessMs = Date.now();
    return projection;
  }

  /**
   * Non-transient projections: `operate` (enable, disable, abort, reset) needs $admins or $ops;
   * `define` (create, change the query or config, delete) needs $admins.
   */
  private authorizeWrite(mode: ProjectionMode, runAs: RunAs | undefined, action: 'operate' | 'define'): void {
    if (mode === 'Transient') return;
    const allowed = action === 'define' ? runAs?.isAdmin === true : runAs?.isOperator === true;
    if (!allowed) throw new ProjectionError('not-authorized', 'Not authorized');
  }

  has(name: string): boolean {
    return this.projections.has(name);
  }

  async create(options: CreateOptions, runAs: RunAs | undefined): Promise<string> {
    this.authorizeWrite(options.mode, runAs, 'define');
    const name = options.name === undefined || options.name === '' ? (options.mode === 'Continuous' ? '' : randomUUID()) : options.name;
    if (name.trim() === '') throw new ProjectionError('failed', 'Projection name is required');
    const handlerType = options.handlerType === '' ? 'JS' : options.handlerType;
    if (handlerType.toUpperCase() !== 'JS' && !handlerType.startsWith('native:'))
      throw new ProjectionError('failed', `Unknown handler type: ${handlerType}`);
    const persisted = defaultPersisted({
      handlerType: handlerType.startsWith('native:') ? handlerType : 'JS',
      query: options.query,
      mode: options.mode,
      enabled: options.enabled,
      emitEnabled: options.emitEnabled,
      checkpointsDisabled: !options.checkpointsEnabled,
      trackEmittedStreams: options.emitEnabled && options.trackEmittedStreams,
      runAs: runAs === undefined ? null : { name: runAs.name, roles: [...runAs.roles] },
    });
    const projection = await this.withRegistry(async () => {
      if (this.projections.has(name)) throw new ProjectionError('conflict', `Duplicate projection names : ${name}`);
      if (options.mode === 'Transient') {
        const transient = new ManagedProjection(this.services, name, TRANSIENT_ID, { ...persisted, version: 1, epoch: 1 }, this.allowedToRun(name));
        this.projections.set(name, transient);
        return transient;
      }
      return this.register(name, persisted);
    });
    await projection.serialize(() => projection.startIfEnabled());
    return name;
  }

  async updateQuery(name: string, query: string, handlerType: string | undefined, emitEnabled: boolean | undefined, runAs: RunAs | undefined): Promise<void> {
    const projection = this.get(name);
    this.authorizeWrite(projection.mode, runAs, 'define');
    await projection.serialize(async () => {
      const wasRunning = projection.isRunning;
      await projection.stop();
      projection.persisted = {
        ...projection.persisted,
        query,
        handlerType: handlerType === undefined || handlerType === '' ? projection.persisted.handlerType : handlerType.startsWith('native:') ? handlerType : 'JS',
        emitEnabled: emitEnabled ?? projection.persisted.emitEnabled,
      };
      projection.forgetDefinition();
      await this.persist(projection);
      if (wasRunning || projection.enabled) await projection.startIfEnabled();
    });
  }

  async enable(name: string, runAs: RunAs | undefined): Promise<void> {
    const projection = this.get(name);
    this.authorizeWrite(projection.mode, runAs, 'operate');
    await projection.serialize(async () => {
      if (projection.enabled && projection.isRunning) return;
      await projection.stop();
      projection.persisted = { ...projection.persisted, enabled: true };
      await this.persist(projection);
      await projection.startIfEnabled();
    });
  }

  async disable(name: string, runAs: RunAs | undefined): Promise<void> {
    const projection = this.get(name);
    this.authorizeWrite(projection.mode, runAs, 'operate');
    await projection.serialize(async () => {
      projection.persisted = { ...projection.persisted, enabled: false };
      await this.persist(projection);
      await projection.stop();
    });
  }

  async abort(name: string, runAs: RunAs | undefined): Promise<void> {
    const projection = this.get(name);
    this.authorizeWrite(projection.mode, runAs, 'operate');
    await projection.serialize(async () => {
      projection.persisted = { ...projection.persisted, enabled: false };
      await this.persist(projection);
      await projection.abort();
    });
  }

  /** A new epoch: the checkpoint and what was emitted before are left behind; restarts when enabled. */
  async reset(name: string, runAs: RunAs | undefined): Promise<void> {
    const projection = this.get(name);
    this.authorizeWrite(projection.mode, runAs, 'operate');
    await projection.serialize(async () => {
      await projection.stop();
      const version = projection.persisted.version + 1;
      projection.persisted = { ...projection.persisted, epoch: version };
      await this.persist(projection);
      await projection.startIfEnabled();
    });
  }

  async delete(
    name: string,
    options: { deleteCheckpointStream: boolean; deleteStateStream: boolean; deleteEmittedStreams: boolean },
    runAs: RunAs | undefined,
  ): Promise<void> {
    const projection = this.get(name);
    if (isSystemProjection(name))
      throw new ProjectionError('failed', "We currently don't allow for the deletion of System Projections.");
    this.authorizeWrite(projection.mode, runAs, 'define');
    await projection.serialize(async () => {
      if (projection.state !== 'Stopped' && projection.state !== 'Faulted' && projection.state !== 'Aborted' && projection.mode !== 'Transient')
        throw new ProjectionError('failed', "Cannot delete a projection that hasn't been stopped or faulted.");
      await projection.dispose();
      projection.state = 'Deleting';
      const streams = projection.streams;
      if (options.deleteEmittedStreams && projection.persisted.emitEnabled) await this.deleteEmittedStreams(streams);
      if (options.deleteCheckpointStream) await this.deleteStream(streams.checkpoint);
      if (options.deleteStateStream) await this.deleteStream(streams.result);
      if (projection.mode !== 'Transient') {
        projection.persisted = { ...projection.persisted, enabled: false, deleted: true };
        await this.persist(projection);
        await this.withRegistry(() => this.appendRegistry([event(EventTypes.ProjectionDeleted, name, false)]));
      }
      this.projections.delete(name);
    });
  }

  private async deleteStream(stream: string): Promise<void> {
    const state = await this.services.db.streamState(stream);
    if (state.kind === 'exists' && !state.softDeleted) await this.services.db.deleteStream(stream, -2, false);
  }

  private async deleteEmittedStreams(streams: ProjectionStreams): Promise<void> {
    for (const stream of new Set(await readAllData(this.services.db, streams.emittedStreams))) await this.deleteStream(stream);
    await this.deleteStream(streams.emittedStreams);
  }

  getConfig(name: string): ProjectionConfig {
    const p = this.get(name).persisted;
    return {
      emitEnabled: p.emitEnabled,
      trackEmittedStreams: p.trackEmittedStreams,
      checkpointAfterMs: p.checkpointAfterMs,
      checkpointHandledThreshold: p.checkpointHandledThreshold,
      checkpointUnhandledBytesThreshold: p.checkpointUnhandledBytesThreshold,
      pendingEventsThreshold: p.pendingEventsThreshold,
      maxWriteBatchLength: p.maxWriteBatchLength,
      maxAllowedWritesInFlight: p.maxAllowedWritesInFlight,
      projectionExecutionTimeout: p.projectionExecutionTimeout ?? null,
    };
  }

  async updateConfig(name: string, config: ProjectionConfig, runAs: RunAs | undefined): Promise<void> {
    const projection = this.get(name);
    this.authorizeWrite(projection.mode, runAs, 'define');
    await projection.serialize(async () => {
      if (projection.state !== 'Stopped' && projection.state !== 'Faulted' && projection.state !== 'Aborted' && projection.state !== 'Completed' && projection.mode !== 'Transient')
        throw new ProjectionError('failed', "Cannot update the config of a projection that hasn't been stopped or faulted.");
      projection.persisted = {
        ...projection.persisted,
        emitEnabled: config.emitEnabled,
        trackEmittedStreams: config.trackEmittedStreams,
        checkpointAfterMs: config.checkpointAfterMs,
        checkpointHandledThreshold: config.checkpointHandledThreshold,
        checkpointUnhandledBytesThreshold: config.checkpointUnhandledBytesThreshold,
        pendingEventsThreshold: config.pendingEventsThreshold,
        maxWriteBatchLength: config.maxWriteBatchLength,
        maxAllowedWritesInFlight: config.maxAllowedWritesInFlight,
        projectionExecutionTimeout: config.projectionExecutionTimeout ?? null,
      };
      await this.persist(projection);
    });
  }

  async state(name: string, partition: string): Promise<StateAnswer> {
    return this.get(name).stateOf(partition, 'state');
  }

  async result(name: string, partition: string): Promise<StateAnswer> {
    return this.get(name).stateOf(partition, 'result');
  }

  /** `GET /projection/{name}/query`: the source, and with `config` the ProjectionQuery document. */
  async query(name: string): Promise<{ query: string; config: Record<string, unknown> }> {
    const projection = this.get(name);
    const p = projection.persisted;
    const definition = await projection.readDefinition();
    const streams = projection.streams;
    return {
      query: p.query,
      config: {
        name,
        query: p.query,
        emitEnabled: p.emitEnabled,
        trackEmittedStreams: p.trackEmittedStreams,
        checkpointsEnabled: !p.checkpointsDisabled,
        type: p.handlerType,
        definition: definition === undefined ? null : definitionForQueryConfig(definition),
        outputConfig: { resultStreamName: definition === undefined ? '' : streams.result },
      },
    };
  }

  /** Statistics of the projections of a mode (Any: all, AllNonTransient: all but transient). */
  list(filter: ListFilter, urlOf: (path: string) => string): ProjectionStatistics[] {
    const out: ProjectionStatistics[] = [];
    for (const projection of this.projections.values()) {
      if (filter === 'AllNonTransient' && projection.mode === 'Transient') continue;
      if (filter !== 'Any' && filter !== 'AllNonTransient' && projection.mode !== filter) continue;
      out.push(this.statisticsOf(projection, urlOf));
    }
    return out;
  }

  statistics(name: string, urlOf: (path: string) => string): ProjectionStatistics {
    return this.statisticsOf(this.get(name), urlOf);
  }

  private statisticsOf(projection: ManagedProjection, urlOf: (path: string) => string): ProjectionStatistics {
    const core = projection.coreStatistics();
    const base = `/projection/${projection.name}`;
    const definition = projection.definition;
    const stats: ProjectionStatistics = {
      coreProcessingTime: core?.coreProcessingTimeMs ?? 0,
      version: core === undefined ? -1 : projection.persisted.version,
      epoch: core === undefined ? -1 : projection.persisted.epoch,
      effectiveName: projection.name,
      writesInProgress: core?.writesInProgress ?? 0,
      readsInProgress: core?.readsInProgress ?? 0,
      partitionsCached: core?.partitionsCached ?? 0,
      status: projection.statusText,
      stateReason: projection.stateReason,
      name: projection.name,
      mode: projection.mode,
      position: core?.position ?? '',
      progress: core === undefined ? 0 : Math.round(core.progress * 100) / 100,
      lastCheckpoint: core?.lastCheckpoint ?? '',
      eventsProcessedAfterRestart: core?.eventsProcessedAfterRestart ?? 0,
      statusUrl: urlOf(base),
      stateUrl: urlOf(`${base}/state`),
      resultUrl: urlOf(`${base}/result`),
      queryUrl: urlOf(`${base}/query?config=yes`),
      enableCommandUrl: urlOf(`${base}/command/enable`),
      disableCommandUrl: urlOf(`${base}/command/disable`),
      checkpointStatus: core?.checkpointStatus ?? '',
      bufferedEvents: core?.bufferedEvents ?? 0,
      writePendingEventsBeforeCheckpoint: core?.writePendingEventsBeforeCheckpoint ?? 0,
      writePendingEventsAfterCheckpoint: core?.writePendingEventsAfterCheckpoint ?? 0,
    };
    if (definition !== undefined && (definition.options.producesResults || definition.options.resultStreamName !== null))
      stats.resultStreamUrl = urlOf(`/streams/${encodeURIComponent(projection.streams.result)}`);
    return orderStatistics(stats);
  }

  private async expireTransients(): Promise<void> {
    const now = Date.now();
    for (const projection of [...this.projections.values()]) {
      if (projection.mode !== 'Transient' || now - projection.lastAccessMs <= this.options.queryExpiryMs) continue;
      this.services.log.warn({ projection: projection.name }, 'transient projection expired and is deleted');
      await projection.serialize(async () => {
        await projection.dispose();
        this.projections.delete(projection.name);
      });
    }
  }
}

/** The original's member order (resultStreamUrl between queryUrl and enableCommandUrl). */
function orderStatistics(s: ProjectionStatistics): ProjectionStatistics {
  const { enableCommandUrl, disableCommandUrl, checkpointStatus, bufferedEvents, writePendingEventsBeforeCheckpoint, writePendingEventsAfterCheckpoint, resultStreamUrl, ...head } = s;
  return {
    ...head,
    ...(resultStreamUrl === undefined ? {} : { resultStreamUrl }),
    enableCommandUrl,
    disableCommandUrl,
    checkpointStatus,
    bufferedEvents,
    writePendingEventsBeforeCheckpoint,
    writePendingEventsAfterCheckpoint,
  };
}

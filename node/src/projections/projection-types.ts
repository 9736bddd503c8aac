/**
 * The projection subsystem's vocabulary: modes, the per-projection configuration and its
 * defaults (EventStoreDB's ProjectionConsts), the definition persisted in `$projections-{name}`,
 * the managed states and how statistics compose a status string.
 */
import { z } from 'zod';

export const PROJECTION_MODES = ['Transient', 'OneTime', 'Continuous'] as const;
export type ProjectionMode = (typeof PROJECTION_MODES)[number];

export const RUN_PROJECTIONS = ['None', 'System', 'All'] as const;
export type RunProjections = (typeof RUN_PROJECTIONS)[number];

/** The original's defaults (ProjectionConsts, ClusterVNodeOptions.ProjectionOptions). */
export const ProjectionDefaults = {
  checkpointHandledThreshold: 4000,
  checkpointUnhandledBytesThreshold: 10 * 1000 * 1000,
  pendingEventsThreshold: 5000,
  maxWriteBatchLength: 500,
  maxAllowedWritesInFlight: 0,
  checkpointAfterMs: 0,
  projectionExecutionTimeoutMs: 250,
  projectionCompilationTimeoutMs: 500,
  projectionsQueryExpiryMinutes: 5,
} as const;

/** `GET/PUT /projection/{name}/config`. */
export const ProjectionConfigSchema = z.object({
  emitEnabled: z.boolean(),
  trackEmittedStreams: z.boolean(),
  checkpointAfterMs: z.number().int().min(0),
  checkpointHandledThreshold: z.number().int(),
  checkpointUnhandledBytesThreshold: z.number().int(),
  pendingEventsThreshold: z.number().int(),
  maxWriteBatchLength: z.number().int(),
  maxAllowedWritesInFlight: z.number().int(),
  projectionExecutionTimeout: z.number().int().nullable().optional(),
});
export type ProjectionConfig = z.infer<typeof ProjectionConfigSchema>;

/** The data of a `$ProjectionUpdated` event in `$projections-{name}`. */
export const PersistedProjectionSchema = z.object({
  handlerType: z.string(),
  query: z.string(),
  mode: z.enum(PROJECTION_MODES),
  enabled: z.boolean(),
  emitEnabled: z.boolean(),
  checkpointsDisabled: z.boolean(),
  trackEmittedStreams: z.boolean(),
  epoch: z.number().int(),
  version: z.number().int(),
  runAs: z.object({ name: z.string(), roles: z.array(z.string()) }).nullable(),
  checkpointHandledThreshold: z.number().int(),
  checkpointAfterMs: z.number().int(),
  checkpointUnhandledBytesThreshold: z.number().int(),
  pendingEventsThreshold: z.number().int(),
  maxWriteBatchLength: z.number().int(),
  maxAllowedWritesInFlight: z.number().int(),
  projectionExecutionTimeout: z.number().int().nullable(),
  deleted: z.boolean().default(false),
});
export type PersistedProjection = z.infer<typeof PersistedProjectionSchema>;

/** ManagedProjectionState, in the original's order. */
export type ManagedState =
  | 'Creating'
  | 'Loading'
  | 'Loaded'
  | 'Preparing'
  | 'Prepared'
  | 'Starting'
  | 'LoadingStopped'
  | 'Running'
  | 'Stopping'
  | 'Aborting'
  | 'Stopped'
  | 'Completed'
  | 'Aborted'
  | 'Faulted'
  | 'Deleting';

/** What the processing core reports: its state name (and "/Paused" while it waits on writes). */
export type CoreStatus = 'Running' | 'Running/Paused' | 'Stopping' | 'Stopped' | 'Faulted' | 'PhaseCompleted';

/**
 * ManagedProjection.GetStatistics: the managed state, then "/{core status}" unless the core
 * status starts with it (a completed query reports Completed), then " (Enabled)" when the
 * projection is stopped or faulted but enabled.
 */
export function composeStatus(managed: ManagedState, core: CoreStatus | undefined, enabled: boolean): string {
  let status: string;
  if (core === undefined) status = managed;
  else if (core === 'Stopped' && managed === 'Completed') status = managed;
  else status = core.startsWith(managed) ? core : `${managed}/${core}`;
  const suffix = (managed === 'Stopped' || managed === 'Faulted') && enabled ? ' (Enabled)' : '';
  return status + suffix;
}

/** ProjectionStatisticsHttpFormatted, in the original's member order. */
export interface ProjectionStatistics {
  coreProcessingTime: number;
  version: number;
  epoch: number;
  effectiveName: string;
  writesInProgress: number;
  readsInProgress: number;
  partitionsCached: number;
  status: string;
  stateReason: string;
  name: string;
  mode: ProjectionMode;
  position: string;
  progress: number;
  lastCheckpoint: string;
  eventsProcessedAfterRestart: number;
  statusUrl: string;
  stateUrl: string;
  resultUrl: string;
  queryUrl: string;
  resultStreamUrl?: string;
  enableCommandUrl: string;
  disableCommandUrl: string;
  checkpointStatus: string;
  bufferedEvents: number;
  writePendingEventsBeforeCheckpoint: number;
  writePendingEventsAfterCheckpoint: number;
}

/** Counters the processing core keeps for statistics. */
export interface CoreStatistics {
  status: CoreStatus;
  position: string;
  progress: number;
  lastCheckpoint: string;
  eventsProcessedAfterRestart: number;
  bufferedEvents: number;
  writePendingEventsBeforeCheckpoint: number;
  writePendingEventsAfterCheckpoint: number;
  writesInProgress: number;
  readsInProgress: number;
  partitionsCached: number;
  coreProcessingTimeMs: number;
  checkpointStatus: string;
}

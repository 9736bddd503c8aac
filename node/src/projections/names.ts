/**
 * The streams and event types of the projections subsystem, as EventStoreDB names them
 * (ProjectionNamesBuilder, ProjectionEventTypes, SystemEventTypes).
 */

export const PROJECTIONS_PREFIX = '$projections-';
/** `$ProjectionsInitialized`, `$ProjectionCreated` (data = name), `$ProjectionDeleted`. */
export const REGISTRATION_STREAM = '$projections-$all';

export const EventTypes = {
  ProjectionCheckpoint: '$ProjectionCheckpoint',
  PartitionCheckpoint: '$Checkpoint',
  StreamTracked: '$StreamTracked',
  ProjectionCreated: '$ProjectionCreated',
  ProjectionDeleted: '$ProjectionDeleted',
  ProjectionsInitialized: '$ProjectionsInitialized',
  ProjectionUpdated: '$ProjectionUpdated',
  LinkTo: '$>',
  StreamReference: '$@',
  Partition: '$partition',
  Result: 'Result',
  ResultRemoved: 'ResultRemoved',
  StreamDeleted: '$streamDeleted',
  StreamMetadata: '$metadata',
} as const;

export const SystemProjectionNames = {
  Streams: '$streams',
  StreamByCategory: '$stream_by_category',
  ByCategory: '$by_category',
  ByEventType: '$by_event_type',
  ByCorrelationId: '$by_correlation_id',
} as const;

export const SYSTEM_PROJECTIONS: readonly string[] = Object.values(SystemProjectionNames);

export function isSystemProjection(name: string): boolean {
  return SYSTEM_PROJECTIONS.includes(name);
}

/** The streams one projection owns. */
export class ProjectionStreams {
  constructor(
    readonly name: string,
    private readonly resultStreamOption?: string | null,
    private readonly partitionResultPatternOption?: string | null,
  ) {}

  /** `$projections-{name}`: the definition ($ProjectionUpdated events). */
  get definition(): string {
    return `${PROJECTIONS_PREFIX}${this.name}`;
  }

  get checkpoint(): string {
    return `${PROJECTIONS_PREFIX}${this.name}-checkpoint`;
  }

  get result(): string {
    return this.resultStreamOption ?? `${PROJECTIONS_PREFIX}${this.name}-result`;
  }

  get emittedStreams(): string {
    return `${PROJECTIONS_PREFIX}${this.name}-emittedstreams`;
  }

  get emittedStreamsCheckpoint(): string {
    return `${PROJECTIONS_PREFIX}${this.name}-emittedstreams-checkpoint`;
  }

  get order(): string {
    return `${PROJECTIONS_PREFIX}${this.name}-order`;
  }

  get partitions(): string {
    return `${PROJECTIONS_PREFIX}${this.name}-partitions`;
  }

  partitionCheckpoint(partition: string): string {
    return `${PROJECTIONS_PREFIX}${this.name}-${partition}-checkpoint`;
  }

  /** `{0}` in the pattern is replaced by the partition (string.Format). */
  partitionResult(partition: string): string {
    if (partition === '') return this.result;
    const pattern = this.partitionResultPatternOption ?? `${PROJECTIONS_PREFIX}${this.name}-{0}-result`;
    return pattern.split('{0}').join(partition);
  }
}

export function isMetastream(stream: string): boolean {
  return stream.startsWith('$$');
}

export function isSystemStream(stream: string): boolean {
  return stream.startsWith('$');
}

/**
 * What a projection reads and how it partitions and outputs (EventStoreDB's IQuerySources),
 * produced by the sandbox from the source's definition calls or by a system projection, and the
 * rules the original checks before a projection may start (ReaderStrategy.Create).
 */
import { z } from 'zod';

export const SourceDefinitionSchema = z.object({
  allStreams: z.boolean(),
  categories: z.array(z.string()),
  streams: z.array(z.string()),
  allEvents: z.boolean(),
  events: z.array(z.string()),
  byStreams: z.boolean(),
  byCustomPartitions: z.boolean(),
  options: z.object({
    definesStateTransform: z.boolean(),
    producesResults: z.boolean(),
    definesFold: z.boolean(),
    handlesDeletedNotifications: z.boolean(),
    resultStreamName: z.string().nullable(),
    partitionResultStreamNamePattern: z.string().nullable(),
    $includeLinks: z.boolean(),
    reorderEvents: z.boolean(),
    processingLag: z.number().int().nullable(),
    biState: z.boolean(),
  }),
});

export type SourceDefinition = z.infer<typeof SourceDefinitionSchema>;

/** How events are read: $all, one stream (also a category's `$ce-` stream), or several streams. */
export type ReaderKind =
  | { readonly kind: 'all' }
  | { readonly kind: 'stream'; readonly stream: string; readonly category: string | undefined }
  | { readonly kind: 'streams'; readonly streams: readonly string[] };

/** Throws with the original's message when the definition cannot run. */
export function validateDefinition(d: SourceDefinition): ReaderKind {
  const hasStreams = d.streams.length > 0;
  const hasCategories = d.categories.length > 0;
  if (!d.allStreams && !hasCategories && !hasStreams)
    throw new Error('None of streams and categories are included');
  if (!d.allEvents && d.events.length === 0) throw new Error('None of events are included');
  if (hasStreams && hasCategories)
    throw new Error('Streams and categories cannot be included in a filter at the same time');
  if (d.allStreams && (hasCategories || hasStreams))
    throw new Error('Both FromAll and specific categories/streams cannot be set');
  if (d.byStreams && hasStreams)
    throw new Error('foreachStream projections are not supported on stream based sources');
  if (d.options.reorderEvents) {
    if (d.allStreams) throw new Error('Event reordering cannot be used with fromAll()');
    if (!(hasStreams && d.streams.length > 1))
      throw new Error('Event reordering is only available in fromStreams([]) projections');
    if ((d.options.processingLag ?? 0) < 50)
      throw new Error('Event reordering requires processing lag at least of 50ms');
  }
  if (d.options.handlesDeletedNotifications && !d.byStreams)
    throw new Error('Deleted stream notifications are only supported with foreachStream()');
  if (hasCategories && d.categories.length > 1) throw new Error('Multiple categories are not supported');
  if (d.allStreams) return { kind: 'all' };
  const category = d.categories[0];
  if (category !== undefined) return { kind: 'stream', stream: `$ce-${category}`, category };
  const unique = [...new Set(d.streams)];
  if (unique.length === 1) return { kind: 'stream', stream: unique[0] ?? '', category: undefined };
  return { kind: 'streams', streams: unique };
}

export function isPartitioned(d: SourceDefinition): boolean {
  return d.byStreams || d.byCustomPartitions;
}

/** The `definition` member of `GET /projection/{name}/query?config=yes` (ProjectionSourceDefinition). */
export function definitionForQueryConfig(d: SourceDefinition): Record<string, unknown> {
  return {
    allEvents: d.allEvents,
    allStreams: d.allStreams,
    byStream: d.byStreams,
    byCustomPartitions: d.byCustomPartitions,
    categories: d.categories,
    events: d.events,
    streams: d.streams,
    options: {
      resultStreamName: d.options.resultStreamName,
      partitionResultStreamNamePattern: d.options.partitionResultStreamNamePattern,
      reorderEvents: d.options.reorderEvents,
      processingLag: d.options.processingLag ?? 0,
      isBiState: d.options.biState,
      definesStateTransform: d.options.definesStateTransform,
      definesCatalogTransform: false,
      producesResults: d.options.producesResults,
      definesFold: d.options.definesFold,
      handlesDeletedNotifications: d.options.handlesDeletedNotifications,
      includeLinks: d.options.$includeLinks,
      disableParallelism: false,
    },
  };
}

/**
 * A definition with every option off and the given sources: all events of nothing until `sources`
 * says what to read (as the sandbox starts before the source's selector runs).
 */
export function sourceDefinition(
  sources: Partial<Omit<SourceDefinition, 'options'>>,
  options: Partial<SourceDefinition['options']> = {},
): SourceDefinition {
  return {
    allStreams: false,
    categories: [],
    streams: [],
    allEvents: true,
    events: [],
    byStreams: false,
    byCustomPartitions: false,
    ...sources,
    options: {
      definesStateTransform: false,
      producesResults: false,
      definesFold: false,
      handlesDeletedNotifications: false,
      resultStreamName: null,
      partitionResultStreamNamePattern: null,
      $includeLinks: false,
      reorderEvents: false,
      processingLag: null,
      biState: false,
      ...options,
    },
  };
}

/** A definition for native handlers: from $all, all events. */
export function nativeDefinition(options: { includeLinks: boolean }): SourceDefinition {
  return sourceDefinition({ allStreams: true }, { $includeLinks: options.includeLinks });
}

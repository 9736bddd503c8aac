/**
 * `POST /projections/read-events`: reads a page of events the way a projection with the given
 * sources would see them, from a checkpoint tag (EventStoreDB's FeedReader, used to debug
 * projections). Body: `{query: {allStreams, categories, streams, allEvents, events, ...},
 * position: <checkpoint tag>, maxEvents}`.
 */
import { z } from 'zod';
import type { EventDb } from '../storage/event-db-types.js';
import { advanceTag, parseTag, tagToJson, zeroStreamsTag, ZERO_POSITION_TAG, type CheckpointTag } from './checkpoint-tag.js';
import { classify } from './engine/event-filter.js';
import { createReader, type CommitWatch, type LinkTargetCheck } from './engine/event-reader.js';
import { sourceDefinition, validateDefinition } from './source-definition.js';

export const ReadEventsRequestSchema = z.object({
  query: z.object({
    allStreams: z.boolean().optional(),
    categories: z.array(z.string()).nullable().optional(),
    streams: z.array(z.string()).nullable().optional(),
    allEvents: z.boolean().optional(),
    events: z.array(z.string()).nullable().optional(),
    byStreams: z.boolean().optional(),
    options: z.record(z.string(), z.unknown()).nullable().optional(),
  }),
  position: z.record(z.string(), z.unknown()).nullable().optional(),
  maxEvents: z.number().int().positive().nullable().optional(),
});
export type ReadEventsRequest = z.infer<typeof ReadEventsRequestSchema>;

const MAX_EVENTS_DEFAULT = 10;
const MAX_EVENTS_LIMIT = 4096;

function parseJsonOrText(buffer: Buffer, isJson: boolean): unknown {
  const text = buffer.toString('utf8');
  if (!isJson) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The feed page as JSON text (camelCase members, indented, reader positions as raw tags). */
/** `mayRead`: the requesting user's read check; links to streams it may not read stay links. */
export async function readEvents(
  db: EventDb,
  watch: CommitWatch,
  request: ReadEventsRequest,
  mayRead?: LinkTargetCheck,
): Promise<string> {
  const q = request.query;
  const options = q.options ?? {};
  const definition = sourceDefinition(
    {
      allStreams: q.allStreams === true,
      categories: q.categories ?? [],
      streams: q.streams ?? [],
      allEvents: q.allEvents !== false || (q.events ?? []).length === 0,
      events: q.events ?? [],
      byStreams: q.byStreams === true,
    },
    { $includeLinks: options['$includeLinks'] === true || options['includeLinks'] === true },
  );
  const reader = validateDefinition(definition);
  const zero: CheckpointTag =
    reader.kind === 'all' ? ZERO_POSITION_TAG : zeroStreamsTag(reader.kind === 'stream' ? [reader.stream] : reader.streams);
  let tag = zero;
  if (request.position !== undefined && request.position !== null && Object.keys(request.position).length > 0) {
    const parsed = parseTag(JSON.stringify(request.position));
    if (parsed === undefined || parsed.tag.mode !== zero.mode) throw new Error('Invalid position');
    tag = parsed.tag.mode === 'streams' ? { mode: 'streams', streams: { ...(zero as { streams: Record<string, number> }).streams, ...parsed.tag.streams } } : parsed.tag;
  }
  const maxEvents = Math.min(request.maxEvents ?? MAX_EVENTS_DEFAULT, MAX_EVENTS_LIMIT);
  const source = createReader(db, reader, tag, watch, mayRead);
  const events: string[] = [];
  while (events.length < maxEvents) {
    const page = await source.read(maxEvents);
    for (const e of page.events) {
      tag = advanceTag(tag, e.position);
      if (classify(definition, reader, e).kind !== 'event') continue;
      const item = {
        eventStreamId: e.event.stream,
        eventNumber: e.event.eventNumber,
        eventType: e.event.eventType,
        data: parseJsonOrText(e.event.data, e.event.isJson),
        metadata: e.event.metadata.byteLength === 0 ? '' : parseJsonOrText(e.event.metadata, e.event.isJson),
        linkMetadata: e.link === undefined || e.link.metadata.byteLength === 0 ? '' : parseJsonOrText(e.link.metadata, e.event.isJson),
        isJson: e.event.isJson,
      };
      const json = JSON.stringify(item, null, 2).replace(/\n}$/, `,\n  "readerPosition": ${tagToJson(tag)}\n}`);
      events.push(json);
      if (events.length >= maxEvents) break;
    }
    if (page.eof || page.events.length === 0) break;
  }
  const indent = (text: string): string => text.split('\n').join('\n    ');
  return (
    `{\n  "correlationId": ${JSON.stringify(crypto.randomUUID())},\n  "readerPosition": ${tagToJson(tag)},\n  "events": [` +
    (events.length === 0 ? ']' : `\n    ${events.map(indent).join(',\n    ')}\n  ]`) +
    '\n}'
  );
}

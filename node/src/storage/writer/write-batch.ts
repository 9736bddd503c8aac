/**
 * Encoding a group-commit batch: the records of many writes laid out back to back from the
 * writer's position, each write's prepares followed by its commit record. Pure: positions are
 * computed, bytes are produced; nothing touches the disk here.
 */
import { PrepareFlags, commitFramedSizeBytes, encodeCommit, encodePrepare, encodeSystem, framedSizeBytes, preparePayloadSizeBytes, systemFramedSizeBytes } from '../format/record.js';
import type { NewEvent } from '../event-db-types.js';
import { utf8LengthBytes } from '../format/binary.js';

export interface PlannedEvent {
  readonly event: NewEvent;
  readonly eventNumber: number;
  readonly flags: number;
}

/** One write: events of one stream (or a tombstone), made visible together by a commit record. */
export interface PlannedWrite {
  readonly kind: 'events';
  readonly stream: string;
  readonly events: readonly PlannedEvent[];
}

export interface PlannedSystemRecord {
  readonly kind: 'system';
  readonly systemRecordType: number;
  readonly data: Buffer;
}

export type PlannedRecordGroup = PlannedWrite | PlannedSystemRecord;

export interface EncodedEvent {
  readonly stream: string;
  readonly eventNumber: number;
  readonly logPosition: number;
  readonly event: NewEvent;
  readonly flags: number;
}

export interface EncodedGroup {
  readonly events: readonly EncodedEvent[];
  /** Bytes the group's records took. */
  readonly sizeBytes: number;
  /** Position of the commit record (system records: of the record itself). */
  readonly commitPosition: number;
}

export function plannedSizeBytes(group: PlannedRecordGroup): number {
  if (group.kind === 'system') return systemFramedSizeBytes(group.data.length);
  let total = commitFramedSizeBytes();
  const streamBytes = utf8LengthBytes(group.stream);
  for (const e of group.events) {
    total += framedSizeBytes(preparePayloadSizeBytes(streamBytes, utf8LengthBytes(e.event.eventType), e.event.data.length, e.event.metadata.length));
  }
  return total;
}

/**
 * Encodes `group` into `out` at `offset`, whose log position is `position`. The frames are left
 * unsealed (checksum fields zero): the log writer seals the whole batch with `sealFrames` on its
 * way to the disk, off the thread that encodes.
 */
export function encodeGroup(out: Buffer, offset: number, position: number, group: PlannedRecordGroup, nowMs: number): EncodedGroup {
  if (group.kind === 'system') {
    const sizeBytes = encodeSystem(out, offset, { logPosition: position, timestampMs: nowMs, systemRecordType: group.systemRecordType, data: group.data }, false);
    return { events: [], commitPosition: position, sizeBytes };
  }
  let p = offset;
  let pos = position;
  const encoded: EncodedEvent[] = [];
  const last = group.events.length - 1;
  group.events.forEach((e, i) => {
    let flags = e.flags;
    if (i === 0) flags |= PrepareFlags.TransactionBegin;
    if (i === last) flags |= PrepareFlags.TransactionEnd;
    const size = encodePrepare(out, p, {
      logPosition: pos, flags, transactionPosition: position, transactionOffset: i, eventNumber: e.eventNumber,
      eventId: e.event.eventId, timestampMs: nowMs, stream: group.stream, eventType: e.event.eventType,
      data: e.event.data, metadata: e.event.metadata,
    }, false);
    encoded.push({ stream: group.stream, eventNumber: e.eventNumber, logPosition: pos, event: e.event, flags });
    p += size;
    pos += size;
  });
  const commitBytes = encodeCommit(out, p, {
    logPosition: pos, transactionPosition: position, firstEventNumber: group.events[0]?.eventNumber ?? -1,
    eventCount: group.events.length, timestampMs: nowMs,
  }, false);
  return { events: encoded, commitPosition: pos, sizeBytes: p + commitBytes - offset };
}

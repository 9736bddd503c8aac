/**
 * Pure mapping between the gRPC messages and the node's storage model: UUIDs (string or
 * big-endian int64 halves), expected revisions (the oneof of the requests to the engine's
 * sentinels), recorded events (metadata map `type` / `content-type` / `created` in .NET ticks
 * since the Unix epoch) and positions (uint64 on the wire, safe integers in the engine).
 */
import { create } from '@bufbuild/protobuf';
import { ExpectedVersion, type NewEvent, type RecordedEvent } from '../storage/event-db-types.js';
import { UUIDSchema, type UUID, type StreamIdentifier } from './gen/eventdb/grpc/shared_pb.js';
import { ReadResp_ReadEvent_RecordedEventSchema, type ReadResp_ReadEvent_RecordedEvent } from './gen/eventdb/grpc/streams_pb.js';
import { GrpcInputError } from './errors.js';
import { dotnetRegex } from './dotnet-regex.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const INT64_MOD = 1n << 64n;
/** .NET ticks (100 ns) per millisecond. */
const TICKS_PER_MS = 10_000n;
const CONTENT_TYPE_JSON = 'application/json';
const CONTENT_TYPE_OCTET_STREAM = 'application/octet-stream';

/** Lower-case canonical UUID from either wire form; throws GrpcInputError on a malformed one. */
export function uuidFromWire(uuid: UUID | undefined): string {
  if (uuid === undefined || uuid.value.case === undefined) throw new GrpcInputError('an event id (UUID) is required');
  if (uuid.value.case === 'string') {
    const text = uuid.value.value.toLowerCase();
    if (!UUID_PATTERN.test(text)) throw new GrpcInputError(`'${uuid.value.value}' is not a valid UUID`);
    return text;
  }
  const { mostSignificantBits, leastSignificantBits } = uuid.value.value;
  const hex = toUint64(mostSignificantBits).toString(16).padStart(16, '0') + toUint64(leastSignificantBits).toString(16).padStart(16, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function uuidToWire(id: string, structured: boolean): UUID {
  if (!structured) return create(UUIDSchema, { value: { case: 'string', value: id } });
  const hex = id.replace(/-/g, '');
  return create(UUIDSchema, {
    value: {
      case: 'structured',
      value: { mostSignificantBits: toInt64(BigInt(`0x${hex.slice(0, 16)}`)), leastSignificantBits: toInt64(BigInt(`0x${hex.slice(16)}`)) },
    },
  });
}

function toUint64(value: bigint): bigint {
  return value < 0n ? value + INT64_MOD : value;
}

function toInt64(value: bigint): bigint {
  return value >= 1n << 63n ? value - INT64_MOD : value;
}

/** The stream name of a StreamIdentifier (UTF-8 bytes); an empty name is bad input. */
export function streamNameFromWire(identifier: StreamIdentifier | undefined): string {
  const bytes = identifier?.streamName;
  if (bytes === undefined || bytes.length === 0) throw new GrpcInputError('a stream name is required');
  return Buffer.from(bytes).toString('utf8');
}

export function streamIdentifierToWire(stream: string): { streamName: Uint8Array } {
  return { streamName: Buffer.from(stream, 'utf8') };
}

/** A uint64 from the wire as a safe integer; larger values are bad input. */
export function safeNumber(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new GrpcInputError(`${what} ${value} is out of range`);
  return Number(value);
}

export type ExpectedRevisionOption =
  | { case: 'revision' | 'streamPosition'; value: bigint }
  | { case: 'noStream' | 'any' | 'streamExists'; value: unknown }
  | { case: undefined; value?: undefined };

/** The engine's expected version for the requests' oneof (Any when absent, as the original). */
export function expectedVersionFromWire(option: ExpectedRevisionOption): number {
  switch (option.case) {
    case 'revision':
    case 'streamPosition':
      return safeNumber(option.value, 'expected revision');
    case 'noStream':
      return ExpectedVersion.NoStream;
    case 'streamExists':
      return ExpectedVersion.StreamExists;
    case 'any':
    case undefined:
      return ExpectedVersion.Any;
  }
}

/** The `expected-version` trailer value: the number, or the sentinel as the original writes it. */
export function expectedVersionText(expectedVersion: number): string {
  return String(expectedVersion);
}

export interface ProposedMessageLike {
  readonly id?: UUID | undefined;
  readonly metadata: { [key: string]: string };
  readonly customMetadata: Uint8Array;
  readonly data: Uint8Array;
}

export function newEventFromWire(message: ProposedMessageLike): NewEvent {
  const eventType = message.metadata.type;
  if (eventType === undefined || eventType.length === 0) throw new GrpcInputError("an event's metadata must carry its 'type'");
  const contentType = message.metadata['content-type'];
  if (contentType === undefined) throw new GrpcInputError("an event's metadata must carry its 'content-type'");
  return {
    eventId: uuidFromWire(message.id),
    eventType,
    data: message.data,
    metadata: message.customMetadata,
    isJson: contentType === CONTENT_TYPE_JSON,
  };
}

export function recordedEventToWire(event: RecordedEvent, structuredUuid: boolean): ReadResp_ReadEvent_RecordedEvent {
  return create(ReadResp_ReadEvent_RecordedEventSchema, recordedEventInit(event, structuredUuid));
}

/** The fields of a recorded event as every service's RecordedEvent message carries them (same numbers). */
export function recordedEventInit(event: RecordedEvent, structuredUuid: boolean) {
  return {
    id: uuidToWire(event.eventId, structuredUuid),
    streamIdentifier: streamIdentifierToWire(event.stream),
    streamRevision: BigInt(event.eventNumber),
    preparePosition: BigInt(event.logPosition),
    commitPosition: BigInt(event.commitPosition),
    metadata: {
      type: event.eventType,
      'content-type': event.isJson ? CONTENT_TYPE_JSON : CONTENT_TYPE_OCTET_STREAM,
      created: (BigInt(event.createdMs) * TICKS_PER_MS).toString(),
    },
    customMetadata: event.metadata,
    data: event.data,
  };
}

/** Matches a name against a filter expression: any of the prefixes, else the regex. */
export function compileExpression(expression: { regex: string; prefix: readonly string[] }): (name: string) => boolean {
  if (expression.prefix.length > 0) {
    const prefixes = [...expression.prefix];
    return (name) => prefixes.some((prefix) => name.startsWith(prefix));
  }
  if (expression.regex.length === 0) return () => true;
  let regex: RegExp;
  try {
    // the original's filters are .NET expressions: read as .NET reads them
    regex = dotnetRegex(expression.regex);
  } catch (err) {
    throw new GrpcInputError(`'${expression.regex}' is not a valid regular expression: ${(err as Error).message}`);
  }
  return (name) => regex.test(name);
}

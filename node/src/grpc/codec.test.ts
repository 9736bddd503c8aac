import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { ExpectedVersion } from '../storage/event-db-types.js';
import { compileExpression, expectedVersionFromWire, newEventFromWire, recordedEventToWire, uuidFromWire, uuidToWire } from './codec.js';
import { GrpcInputError } from './errors.js';
import { UUIDSchema } from './gen/eventdb/grpc/shared_pb.js';

describe('UUIDs on the wire', () => {
  it('reads the string form and the structured form (big-endian int64 halves) alike', () => {
    const id = 'fbf4a1a1-b4a3-4dfe-a01f-ec52c34e16e4';
    expect(uuidFromWire(uuidToWire(id, false))).toBe(id);
    const structured = uuidToWire(id, true);
    expect(structured.value.case).toBe('structured');
    // The high bit set: the halves are negative int64s on the wire.
    const halves = structured.value.value as { mostSignificantBits: bigint; leastSignificantBits: bigint };
    expect(halves.mostSignificantBits).toBe(BigInt.asIntN(64, 0xfbf4a1a1b4a34dfen));
    expect(halves.leastSignificantBits).toBe(BigInt.asIntN(64, 0xa01fec52c34e16e4n));
    expect(uuidFromWire(structured)).toBe(id);
    expect(uuidFromWire(create(UUIDSchema, { value: { case: 'string', value: id.toUpperCase() } }))).toBe(id);
  });

  it('refuses a malformed or missing UUID as bad input', () => {
    expect(() => uuidFromWire(create(UUIDSchema, { value: { case: 'string', value: 'not-a-uuid' } }))).toThrow(GrpcInputError);
    expect(() => uuidFromWire(undefined)).toThrow(/UUID\) is required/);
  });
});

describe('expected revisions', () => {
  it('maps the oneof to the engine sentinels, Any when absent', () => {
    expect(expectedVersionFromWire({ case: 'revision', value: 5n })).toBe(5);
    expect(expectedVersionFromWire({ case: 'streamPosition', value: 0n })).toBe(0);
    expect(expectedVersionFromWire({ case: 'noStream', value: {} })).toBe(ExpectedVersion.NoStream);
    expect(expectedVersionFromWire({ case: 'streamExists', value: {} })).toBe(ExpectedVersion.StreamExists);
    expect(expectedVersionFromWire({ case: 'any', value: {} })).toBe(ExpectedVersion.Any);
    expect(expectedVersionFromWire({ case: undefined })).toBe(ExpectedVersion.Any);
  });

  it('refuses a revision past 2^53 rather than rounding it', () => {
    expect(() => expectedVersionFromWire({ case: 'revision', value: 1n << 60n })).toThrow(/out of range/);
  });
});

describe('events', () => {
  it('needs type and content-type in the metadata map; JSON by content-type', () => {
    const id = create(UUIDSchema, { value: { case: 'string', value: '0e0a5f3e-7f43-4c4b-9c1e-0d6a1b2c3d4e' } });
    const event = newEventFromWire({ id, metadata: { type: 'T', 'content-type': 'application/json' }, customMetadata: new Uint8Array([1]), data: new Uint8Array([2]) });
    expect(event).toMatchObject({ eventType: 'T', isJson: true, metadata: new Uint8Array([1]), data: new Uint8Array([2]) });
    expect(newEventFromWire({ id, metadata: { type: 'T', 'content-type': 'application/octet-stream' }, customMetadata: new Uint8Array(), data: new Uint8Array() }).isJson).toBe(false);
    expect(() => newEventFromWire({ id, metadata: { 'content-type': 'application/json' }, customMetadata: new Uint8Array(), data: new Uint8Array() })).toThrow(/'type'/);
  });

  it('writes created as .NET ticks since the Unix epoch and both positions', () => {
    const wire = recordedEventToWire({
      stream: 's', eventNumber: 3, eventId: '0e0a5f3e-7f43-4c4b-9c1e-0d6a1b2c3d4e', eventType: 'T', data: Buffer.from('{}'), metadata: Buffer.alloc(0),
      isJson: true, createdMs: 1_700_000_000_123, logPosition: 100, commitPosition: 150,
    }, false);
    expect(wire.metadata).toEqual({ type: 'T', 'content-type': 'application/json', created: '17000000001230000' });
    expect(wire).toMatchObject({ streamRevision: 3n, preparePosition: 100n, commitPosition: 150n });
    expect(Buffer.from(wire.streamIdentifier!.streamName).toString()).toBe('s');
  });
});

describe('filter expressions', () => {
  it('matches any prefix, else the regex, else everything', () => {
    const prefixes = compileExpression({ regex: '', prefix: ['a-', 'b-'] });
    expect(['a-1', 'b-2', 'c-3'].map(prefixes)).toEqual([true, true, false]);
    const regex = compileExpression({ regex: '^[^$]', prefix: [] });
    expect(['user', '$system'].map(regex)).toEqual([true, false]);
    expect(compileExpression({ regex: '', prefix: [] })('x')).toBe(true);
    expect(() => compileExpression({ regex: '(', prefix: [] })).toThrow(GrpcInputError);
  });
});

import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';

import { GrpcInputError } from './errors.js';
import { CreateReq_ConsumerStrategy, CreateReq_SettingsSchema, UpdateReq_ConsumerStrategy, UpdateReq_SettingsSchema } from './gen/eventdb/grpc/persistent_pb.js';
import { settingsFromWire } from './persistent-service.js';

const base = {
  maxRetryCount: 10, minCheckpointCount: 10, maxCheckpointCount: 1000, maxSubscriberCount: 0, liveBufferSize: 500,
  readBatchSize: 20, historyBufferSize: 500, namedConsumerStrategy: CreateReq_ConsumerStrategy.RoundRobin,
};

describe('settingsFromWire', () => {
  it('maps the client settings onto the subsystem settings, with the HTTP names', () => {
    const settings = settingsFromWire(create(CreateReq_SettingsSchema, {
      ...base, resolveLinks: true, revision: 5n,
      messageTimeout: { case: 'messageTimeoutMs', value: 30_000 }, checkpointAfter: { case: 'checkpointAfterTicks', value: 20_000_000n },
    }), undefined);
    expect(settings).toMatchObject({
      resolveLinkTos: true, startFrom: 5, messageTimeoutMs: 30_000, checkPointAfterMs: 2_000, bufferSize: 500, readBatchSize: 20,
      maxSubscriberCount: 0, namedConsumerStrategy: 'RoundRobin',
    });
  });

  it('reads the start from the stream options first, uint64 max as the end', () => {
    const update = { ...base, namedConsumerStrategy: UpdateReq_ConsumerStrategy.RoundRobin };
    const wire = create(UpdateReq_SettingsSchema, { ...update, revision: 3n });
    expect(settingsFromWire(wire, { case: 'end', value: {} }).startFrom).toBe(-1);
    expect(settingsFromWire(wire, { case: 'start', value: {} }).startFrom).toBe(0);
    expect(settingsFromWire(wire, { case: 'revision', value: 9n }).startFrom).toBe(9);
    expect(settingsFromWire(create(UpdateReq_SettingsSchema, { ...update, revision: (1n << 64n) - 1n }), undefined).startFrom).toBe(-1);
  });

  it('takes the named strategy string (PinnedByCorrelation) over the enum', () => {
    const wire = create(CreateReq_SettingsSchema, { ...base, consumerStrategy: 'PinnedByCorrelation' });
    expect(settingsFromWire(wire, undefined).namedConsumerStrategy).toBe('PinnedByCorrelation');
  });

  it('refuses what the HTTP API refuses, naming the field', () => {
    expect(() => settingsFromWire(create(CreateReq_SettingsSchema, { ...base, historyBufferSize: 10 }), undefined)).toThrow(/BufferSize \(10\) must be larger than ReadBatchSize \(20\)/);
    expect(() => settingsFromWire(create(CreateReq_SettingsSchema, { ...base, maxRetryCount: -1 }), undefined)).toThrow(/maxRetryCount/);
    expect(() => settingsFromWire(create(CreateReq_SettingsSchema, { ...base, consumerStrategy: 'Nope' }), undefined)).toThrow(GrpcInputError);
    expect(() => settingsFromWire(undefined, undefined)).toThrow(/settings are required/);
    expect(() => settingsFromWire(create(CreateReq_SettingsSchema, { ...base, revision: 1n << 60n }), undefined)).toThrow(/out of range/);
  });
});

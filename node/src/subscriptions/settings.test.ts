import { describe, expect, it } from 'vitest';

import {
  DEFAULT_SETTINGS,
  parsePersistedConfig,
  parseSettingsBody,
  toConfigEntry,
} from './settings.js';

describe('parseSettingsBody', () => {
  // The default values themselves, as a client sees them in the group's info, are checked by
  // test/integration/persistent-subscriptions-api.test.ts ('uses the defaults for an empty body').
  it('gives the defaults for an empty body and for {}', () => {
    expect(parseSettingsBody(undefined)).toEqual({ kind: 'ok', settings: DEFAULT_SETTINGS });
    expect(parseSettingsBody({})).toEqual({ kind: 'ok', settings: DEFAULT_SETTINGS });
  });

  it('matches property names case-insensitively and accepts numeric and boolean strings', () => {
    const parsed = parseSettingsBody({
      ResolveLinkTos: 'true',
      STARTFROM: '5',
      messagetimeoutmilliseconds: 0,
      NamedConsumerStrategy: 'Pinned',
    });
    expect(parsed).toEqual({
      kind: 'ok',
      settings: {
        ...DEFAULT_SETTINGS,
        resolveLinkTos: true,
        startFrom: 5,
        messageTimeoutMs: 0,
        namedConsumerStrategy: 'Pinned',
      },
    });
  });

  it("answers the controller's validation messages", () => {
    expect(parseSettingsBody({ bufferSize: 0 })).toEqual({
      kind: 'invalid',
      message: 'Buffer Size (0) must be positive',
    });
    expect(parseSettingsBody({ liveBufferSize: -1 })).toEqual({
      kind: 'invalid',
      message: 'Live Buffer Size (-1) must be positive',
    });
    expect(parseSettingsBody({ readBatchSize: 0 })).toEqual({
      kind: 'invalid',
      message: 'Read Batch Size (0) must be positive',
    });
    expect(parseSettingsBody({ bufferSize: 10, readBatchSize: 11 })).toEqual({
      kind: 'invalid',
      message: 'BufferSize (10) must be larger than ReadBatchSize (11)',
    });
  });

  it('names a field of the wrong type', () => {
    const parsed = parseSettingsBody({ maxRetryCount: 'many' });
    expect(parsed.kind).toBe('invalid');
    expect(parsed.kind === 'invalid' && parsed.message).toContain("'maxRetryCount'");
    expect(parseSettingsBody({ resolveLinkTos: 3 }).kind).toBe('invalid');
    expect(parseSettingsBody({ messageTimeoutMilliseconds: -5 }).kind).toBe('invalid');
    expect(parseSettingsBody([1]).kind).toBe('invalid');
  });

  it("refuses an unknown strategy and startFrom below -1 as the service does (result Fail)", () => {
    expect(parseSettingsBody({ namedConsumerStrategy: 'Random' })).toEqual({
      kind: 'fail',
      message: 'Consumer strategy Random does not exist.',
    });
    expect(parseSettingsBody({ startFrom: -2 })).toEqual({
      kind: 'fail',
      message: 'Invalid Start From position: event number must be greater than or equal to -1.',
    });
    expect(parseSettingsBody({ startFrom: -1 })).toMatchObject({ settings: { startFrom: -1 } });
  });

  it('lets startPosition win over startFrom', () => {
    expect(parseSettingsBody({ startFrom: 3, startPosition: '7' })).toMatchObject({
      settings: { startFrom: 7 },
    });
    expect(parseSettingsBody({ startPosition: 'C:1/P:1' }).kind).toBe('fail');
  });

  it('falls back on preferRoundRobin for legacy clients without a strategy', () => {
    expect(parseSettingsBody({ preferRoundRobin: false })).toMatchObject({
      settings: { namedConsumerStrategy: 'DispatchToSingle' },
    });
    expect(parseSettingsBody({ preferRoundRobin: true })).toMatchObject({
      settings: { namedConsumerStrategy: 'RoundRobin' },
    });
    expect(parseSettingsBody({ namedConsumerStrategy: '' })).toMatchObject({
      settings: { namedConsumerStrategy: 'DispatchToSingle' },
    });
  });
});

describe('persisted configuration', () => {
  it('round-trips entries and skips unusable ones with a reason', () => {
    const settings = { ...DEFAULT_SETTINGS, startFrom: 4, namedConsumerStrategy: 'Pinned' as const };
    const good = toConfigEntry('orders', 'billing', settings);
    const parsed = parsePersistedConfig({
      version: '2',
      updated: '2024-01-01T00:00:00Z',
      updatedBy: 'admin',
      entries: [
        good,
        { ...good, group: 'bad-strategy', namedConsumerStrategy: 'Nope' },
        good,
        { stream: 'x' },
      ],
    });
    expect(parsed.kind).toBe('ok');
    if (parsed.kind !== 'ok') return;
    expect(parsed.groups).toEqual([{ stream: 'orders', group: 'billing', settings }]);
    expect(parsed.skipped).toHaveLength(3);
    expect(parsed.skipped.join('\n')).toMatch(/bad-strategy: invalid consumer strategy 'Nope'/);
    expect(parsed.skipped.join('\n')).toMatch(/duplicate/);
  });

  it('reads version 1 entries without a strategy from preferRoundRobin', () => {
    const entry = { ...toConfigEntry('s', 'g', DEFAULT_SETTINGS), namedConsumerStrategy: null, preferRoundRobin: false };
    const parsed = parsePersistedConfig({ version: '1', entries: [entry] });
    expect(parsed.kind === 'ok' && parsed.groups[0]?.settings.namedConsumerStrategy).toBe(
      'DispatchToSingle',
    );
  });

  it('refuses a document without a version', () => {
    expect(parsePersistedConfig({ entries: [] }).kind).toBe('invalid');
  });
});

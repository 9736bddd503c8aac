import { describe, expect, it } from 'vitest';

import {
  parseScavengeParams,
  ScavengeParamMessage,
  ScavengeStartQuerySchema,
} from './scavenge-params.js';

describe('parseScavengeParams', () => {
  it('uses the defaults when nothing is given', () => {
    expect(parseScavengeParams({})).toEqual({
      kind: 'ok',
      params: { threads: 1, threshold: 0, throttlePercent: 100, syncOnly: false },
      threadsRequested: undefined,
      startFromChunkGiven: false,
    });
  });

  it('parses integers and booleans as .NET TryParse does', () => {
    const parsed = parseScavengeParams({
      threads: ' 2 ',
      threshold: '-1',
      throttlePercent: '+100',
      syncOnly: 'TRUE',
      startFromChunk: '007',
    });
    expect(parsed).toMatchObject({
      kind: 'ok',
      params: { threads: 2, threshold: -1, throttlePercent: 100, syncOnly: true },
      startFromChunkGiven: true,
    });
  });

  it('caps threads at 4 and says what was asked for', () => {
    expect(parseScavengeParams({ threads: '9' })).toMatchObject({
      kind: 'ok',
      params: { threads: 4 },
      threadsRequested: 9,
    });
  });

  it.each([
    [{ startFromChunk: '-1' }, ScavengeParamMessage.startFromChunk],
    [{ startFromChunk: 'x', threads: '0' }, ScavengeParamMessage.startFromChunk],
    [{ threads: '0' }, ScavengeParamMessage.threads],
    [{ threads: '1.5' }, ScavengeParamMessage.threads],
    [{ threads: ['1', '2'] }, ScavengeParamMessage.threads],
    [{ threshold: 'abc' }, ScavengeParamMessage.threshold],
    [{ threshold: '2147483648' }, ScavengeParamMessage.threshold],
    [{ threshold: '' }, ScavengeParamMessage.threshold],
    [{ throttlePercent: '0' }, ScavengeParamMessage.throttlePercent],
    [{ throttlePercent: '101' }, ScavengeParamMessage.throttlePercent],
    [{ throttlePercent: '50', threads: '2' }, ScavengeParamMessage.throttlePercentThreads],
    [{ syncOnly: 'yes' }, ScavengeParamMessage.syncOnly],
    [{ syncOnly: '1' }, ScavengeParamMessage.syncOnly],
  ])('refuses %j with the first failing parameter\'s message', (query, message) => {
    const parsedQuery = ScavengeStartQuerySchema.parse(query);
    expect(parseScavengeParams(parsedQuery)).toEqual({ kind: 'invalid', message });
  });
});

import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.js';
import { advanceTag, compareTags, parseTag, tagToJson, tagToString, zeroStreamsTag, ZERO_POSITION_TAG } from './checkpoint-tag.js';
import { composeStatus } from './projection-types.js';

describe('checkpoint tags', () => {
  it('write and read the original JSON forms', () => {
    const version = { id: 3, epoch: 1, version: 5 };
    expect(tagToJson({ mode: 'position', commit: 200, prepare: 180 }, version, { $o: '"a-1"' })).toBe('{"$v":"3:1:5:4","$c":200,"$p":180,"$o":"a-1"}');
    expect(tagToJson({ mode: 'streams', streams: { a: 2, b: -1 } })).toBe('{"$s":{"a":2,"b":-1}}');
    expect(parseTag('{"$v":"3:1:5:4","$c":200,"$p":180,"$causedBy":"x"}')).toEqual({
      tag: { mode: 'position', commit: 200, prepare: 180 },
      version: { id: 3, epoch: 1, version: 5 },
      extra: { $causedBy: 'x' },
    });
    expect(parseTag('{"commitPosition":1,"preparePosition":1}')?.tag).toEqual({ mode: 'position', commit: 1, prepare: 1 });
    expect(parseTag('{"$s":{"s":4}}')?.tag).toEqual({ mode: 'streams', streams: { s: 4 } });
    for (const bad of ['', 'nope', '[]', '{"$s":[1]}', '{"$c":1}', '{"$s":{"a":"x"}}']) expect(parseTag(bad), bad).toBeUndefined();
  });

  it('order tags and show them as the original does', () => {
    expect(compareTags({ mode: 'position', commit: 1, prepare: 5 }, { mode: 'position', commit: 1, prepare: 6 })).toBe(-1);
    expect(compareTags({ mode: 'streams', streams: { a: 3, b: 1 } }, { mode: 'streams', streams: { a: 3, b: 2 } })).toBe(-1);
    expect(compareTags(zeroStreamsTag(['a']), zeroStreamsTag(['a']))).toBe(0);
    expect(() => compareTags(ZERO_POSITION_TAG, zeroStreamsTag(['a']))).toThrow();
    expect(tagToString(ZERO_POSITION_TAG)).toBe('C:0/P:-1');
    expect(tagToString({ mode: 'streams', streams: { s: 4 } })).toBe('s: 4');
    expect(tagToString({ mode: 'streams', streams: { a: 1, b: 2 } })).toBe('a: 1; b: 2; ');
    expect(advanceTag(zeroStreamsTag(['a', 'b']), { commitPosition: 9, logPosition: 9, stream: 'b', eventNumber: 7 })).toEqual({ mode: 'streams', streams: { a: -1, b: 7 } });
  });
});

describe('status strings', () => {
  it('compose the managed state, the core status and (Enabled) as ManagedProjection.GetStatistics', () => {
    expect(composeStatus('Running', 'Running', true)).toBe('Running');
    expect(composeStatus('Running', 'Running/Paused', true)).toBe('Running/Paused');
    expect(composeStatus('Stopped', 'Stopped', false)).toBe('Stopped');
    expect(composeStatus('Stopped', undefined, true)).toBe('Stopped (Enabled)');
    expect(composeStatus('Completed', 'Stopped', true)).toBe('Completed');
    expect(composeStatus('Aborted', 'Stopped', false)).toBe('Aborted/Stopped');
    expect(composeStatus('Faulted', 'Faulted', true)).toBe('Faulted (Enabled)');
    expect(composeStatus('Preparing', undefined, true)).toBe('Preparing');
  });
});

describe('projection options', () => {
  const load = (argv: string[], env: Record<string, string> = {}) => loadConfig({ argv, env, readFile: () => '' });

  it('default as the original: projections off, standard projections not started, 250 ms per event', () => {
    const { config } = load([]);
    expect(config).toMatchObject({
      runProjections: 'None',
      startStandardProjections: false,
      projectionsQueryExpiry: 5,
      projectionCompilationTimeout: 500,
      projectionExecutionTimeout: 250,
      maxProjectionStateSize: 2147483647,
      projectionMemoryLimit: 128,
    });
  });

  it('read RunProjections case-insensitively from flags and the environment, and name a bad value', () => {
    expect(load(['--run-projections', 'all']).config.runProjections).toBe('All');
    expect(load([], { SERVICE_RUN_PROJECTIONS: 'SYSTEM' }).config.runProjections).toBe('System');
    expect(load(['--start-standard-projections']).config.startStandardProjections).toBe(true);
    expect(() => load(['--run-projections', 'some'])).toThrow(/--run-projections/);
    expect(() => load(['--projection-execution-timeout', '0'])).toThrow(/--projection-execution-timeout/);
    expect(() => load(['--projection-memory-limit', '4'])).toThrow(/--projection-memory-limit/);
  });
});

/**
 * Conformance suite of the `ScavengeState` port: every test runs against both implementations
 * (SQLite through WASM on a temporary directory, and memory), which must behave the same.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openMemoryScavengeState } from './memory-scavenge-state.js';
import type {
  MetastreamData,
  OriginalStreamData,
  ScavengeCheckpoint,
  ScavengePoint,
  ScavengeState,
} from './scavenge-types.js';
import { openSqliteScavengeState } from './sqlite-scavenge-state.js';

const log = pino({ level: 'silent' });

interface Factory {
  readonly name: string;
  open(options: { hashUsersCacheCapacity?: number }): ScavengeState;
}

const directories: string[] = [];
const opened: ScavengeState[] = [];

const factories: Factory[] = [
  {
    name: 'SqliteScavengeState',
    open: (options) => {
      const indexPath = mkdtempSync(join(tmpdir(), 'scavenge-state-'));
      directories.push(indexPath);
      return openSqliteScavengeState({ indexPath, log, ...options });
    },
  },
  { name: 'MemoryScavengeState', open: (options) => openMemoryScavengeState(options) },
];

afterEach(() => {
  for (const state of opened.splice(0)) state.close();
  for (const directory of directories.splice(0)) {
    rmSync(directory, { recursive: true, force: true });
  }
});

const point: ScavengePoint = {
  number: 3,
  position: 123_456,
  effectiveNowMs: 1_700_000_000_000,
  threshold: 0,
};

function original(stream: string, overrides: Partial<OriginalStreamData> = {}): OriginalStreamData {
  return {
    stream,
    isTombstoned: false,
    maxAgeSeconds: null,
    maxCount: 10,
    truncateBefore: null,
    discardPoint: 0,
    maybeDiscardPoint: 0,
    lastEventNumber: 20,
    status: 'Active',
    ...overrides,
  };
}

function meta(metastream: string, overrides: Partial<MetastreamData> = {}): MetastreamData {
  return { metastream, isTombstoned: false, discardPoint: 1, lastRecordChunk: 4, ...overrides };
}

describe.each(factories)('$name', (factory) => {
  function open(options: { hashUsersCacheCapacity?: number } = {}): ScavengeState {
    const state = factory.open(options);
    opened.push(state);
    return state;
  }

  describe('checkpoint', () => {
    const variants: ScavengeCheckpoint[] = [
      { stage: 'Accumulating', scavengePoint: point, doneLogicalChunkNumber: null },
      { stage: 'Accumulating', scavengePoint: point, doneLogicalChunkNumber: 7 },
      { stage: 'Calculating', scavengePoint: point, doneStream: null },
      { stage: 'Calculating', scavengePoint: point, doneStream: 'orders-\u00e9\u{1f600}' },
      { stage: 'ExecutingChunks', scavengePoint: point, doneLogicalChunkNumber: null },
      { stage: 'ExecutingChunks', scavengePoint: point, doneLogicalChunkNumber: 0 },
      { stage: 'MergingChunks', scavengePoint: point },
      { stage: 'ExecutingIndex', scavengePoint: point },
      { stage: 'Cleaning', scavengePoint: point },
      { stage: 'Done', scavengePoint: { ...point, threshold: -1 } },
    ];

    it('is undefined and the counters are -1 when the state is new', () => {
      const state = open();
      expect(state.getCheckpoint()).toBeUndefined();
      expect(state.lastCompletedScavengePointNumber()).toBe(-1);
      expect(state.lastAccumulatedChunk()).toBe(-1);
    });

    it.each(variants.map((checkpoint) => [checkpoint.stage, checkpoint] as const))(
      'round-trips a %s checkpoint',
      (_stage, checkpoint) => {
        const state = open();
        state.setCheckpoint(checkpoint);
        expect(state.getCheckpoint()).toEqual(checkpoint);
      },
    );

    it('records the last completed scavenge point when the checkpoint becomes Done', () => {
      const state = open();
      state.setCheckpoint({ stage: 'Cleaning', scavengePoint: point });
      expect(state.lastCompletedScavengePointNumber()).toBe(-1);
      state.setCheckpoint({ stage: 'Done', scavengePoint: point });
      expect(state.lastCompletedScavengePointNumber()).toBe(3);
      const next = { ...point, number: 4 };
      state.setCheckpoint({
        stage: 'Accumulating', scavengePoint: next, doneLogicalChunkNumber: null,
      });
      expect(state.lastCompletedScavengePointNumber()).toBe(3);
    });

    it('stores the last accumulated chunk', () => {
      const state = open();
      state.setLastAccumulatedChunk(12);
      expect(state.lastAccumulatedChunk()).toBe(12);
    });

    it('rejects a malformed checkpoint', () => {
      const state = open();
      const bad = { stage: 'Accumulating', scavengePoint: point } as unknown as ScavengeCheckpoint;
      expect(() => state.setCheckpoint(bad)).toThrow(/checkpoint/);
      expect(state.getCheckpoint()).toBeUndefined();
    });
  });

  describe('original streams', () => {
    it('sets, gets and updates an original stream', () => {
      const state = open();
      expect(state.getOriginal('a')).toBeUndefined();
      const first = original('a', { maxAgeSeconds: 60, truncateBefore: 3, isTombstoned: false });
      state.setOriginal(first);
      expect(state.getOriginal('a')).toEqual(first);
      const updated = original('a', {
        discardPoint: 5,
        maybeDiscardPoint: 8,
        status: 'Spent',
        maxCount: null,
      });
      state.setOriginal(updated);
      expect(state.getOriginal('a')).toEqual(updated);
    });

    it('rejects invalid data', () => {
      const state = open();
      expect(() => state.setOriginal(original(''))).toThrow();
      expect(() => state.setOriginal(original('a', { discardPoint: -1 }))).toThrow();
    });

    it('pages active originals in code-point order after a stream', () => {
      const state = open();
      // U+FF5E sorts before U+1F600 by code point but after it by UTF-16 code unit.
      const names = ['b', 'a', 'c', 'a-1', '\u{1f600}', '\uff5e', 'B', 'd'];
      for (const name of names) state.setOriginal(original(name));
      state.setOriginal(original('c', { status: 'Spent' }));
      state.setOriginal(original('d', { status: 'Archived', isTombstoned: true }));
      const expected = ['B', 'a', 'a-1', 'b', '\uff5e', '\u{1f600}'];
      expect(state.activeOriginals(null, 100).map((d) => d.stream)).toEqual(expected);
      expect(state.activeOriginals(null, 2).map((d) => d.stream)).toEqual(['B', 'a']);
      expect(state.activeOriginals('a', 2).map((d) => d.stream)).toEqual(['a-1', 'b']);
      expect(state.activeOriginals('aa', 2).map((d) => d.stream)).toEqual(['b', '\uff5e']);
      expect(state.activeOriginals('\u{1f600}', 2)).toEqual([]);
      state.setOriginal(original('c'));
      expect(state.activeOriginals('b', 1).map((d) => d.stream)).toEqual(['c']);
    });

    it('pages through every active original exactly once', () => {
      const state = open();
      state.transaction(() => {
        for (let i = 0; i < 2500; i++) {
          state.setOriginal(original(`s-${i}`, { status: i % 5 === 0 ? 'Spent' : 'Active' }));
        }
      });
      const seen: string[] = [];
      let after: string | null = null;
      for (;;) {
        const page = state.activeOriginals(after, 333);
        if (page.length === 0) break;
        seen.push(...page.map((d) => d.stream));
        after = page[page.length - 1]?.stream ?? null;
      }
      expect(seen).toHaveLength(2000);
      expect(new Set(seen).size).toBe(2000);
      expect([...seen].sort()).toEqual(seen);
    });

    it('lists the originals with discards or a tombstone, in stream-name order', () => {
      const state = open();
      state.setOriginal(original('z', { discardPoint: 2 }));
      state.setOriginal(original('y'));
      state.setOriginal(original('x', { maybeDiscardPoint: 1 }));
      state.setOriginal(original('w', { isTombstoned: true, status: 'Archived' }));
      expect([...state.allOriginalsWithDiscards()].map((d) => d.stream)).toEqual(['w', 'x', 'z']);
    });

    it('iterates more originals with discards than one page, tolerating writes meanwhile', () => {
      const state = open();
      state.transaction(() => {
        for (let i = 0; i < 3000; i++) {
          state.setOriginal(original(`s-${String(i).padStart(5, '0')}`, { discardPoint: 1 }));
        }
      });
      let count = 0;
      state.transaction(() => {
        for (const data of state.allOriginalsWithDiscards()) {
          state.setOriginal({ ...data, status: 'Spent' });
          count++;
        }
      });
      expect(count).toBe(3000);
      expect(state.activeOriginals(null, 10)).toEqual([]);
    });
  });

  describe('metastreams', () => {
    it('sets, gets, updates and lists metastreams in name order', () => {
      const state = open();
      expect(state.getMeta('$$a')).toBeUndefined();
      state.setMeta(meta('$$b'));
      state.setMeta(meta('$$a', { lastRecordChunk: null }));
      expect(state.getMeta('$$a')).toEqual(meta('$$a', { lastRecordChunk: null }));
      state.setMeta(meta('$$b', { isTombstoned: true, discardPoint: 9 }));
      expect(state.getMeta('$$b')).toEqual(meta('$$b', { isTombstoned: true, discardPoint: 9 }));
      expect([...state.allMetas()].map((m) => m.metastream)).toEqual(['$$a', '$$b']);
      expect(() => state.setMeta(meta('a'))).toThrow();
    });
  });

  describe('chunks', () => {
    it('adds, reads and resets chunk weights', () => {
      const state = open();
      expect(state.getChunkWeight(0)).toBe(0);
      state.addChunkWeight(0, 2);
      state.addChunkWeight(0, 1);
      state.addChunkWeight(1, 0.5);
      expect(state.getChunkWeight(0)).toBe(3);
      expect(state.getChunkWeight(1)).toBe(0.5);
      state.resetChunkWeight(0);
      expect(state.getChunkWeight(0)).toBe(0);
      state.addChunkWeight(0, 2);
      expect(state.getChunkWeight(0)).toBe(2);
      expect(() => state.addChunkWeight(-1, 2)).toThrow();
    });

    it('sets and replaces chunk time ranges', () => {
      const state = open();
      expect(state.getChunkTimeRange(3)).toBeUndefined();
      state.setChunkTimeRange(3, 1000, 2000);
      expect(state.getChunkTimeRange(3)).toEqual({ minMs: 1000, maxMs: 2000 });
      state.setChunkTimeRange(3, 1_700_000_000_000, 1_700_000_000_500);
      const range = { minMs: 1_700_000_000_000, maxMs: 1_700_000_000_500 };
      expect(state.getChunkTimeRange(3)).toEqual(range);
      expect(() => state.setChunkTimeRange(3, 5, 4)).toThrow();
    });
  });

  describe('checkHashUser', () => {
    it('detects a different name with the same hash and counts hits, misses and collisions', () => {
      const state = open();
      expect(state.checkHashUser(1n, 'a')).toBe(false);
      expect(state.checkHashUser(1n, 'a')).toBe(false);
      expect(state.checkHashUser(1n, 'b')).toBe(true);
      expect(state.checkHashUser(2n, 'b')).toBe(false);
      expect(state.hashUsersCacheStats()).toEqual({ hits: 2, misses: 2, collisions: 1 });
    });

    it('accepts full 64-bit hashes, signed or unsigned', () => {
      const state = open();
      const max = (1n << 64n) - 1n;
      expect(state.checkHashUser(max, 'max')).toBe(false);
      expect(state.checkHashUser(-1n, 'other')).toBe(true);
      expect(state.checkHashUser(1n << 63n, 'high')).toBe(false);
      expect(() => state.checkHashUser(1n << 64n, 'too-big')).toThrow();
    });

    it('finds evicted hashes in the table', () => {
      const state = open({ hashUsersCacheCapacity: 2 });
      state.checkHashUser(1n, 'a');
      state.checkHashUser(2n, 'b');
      state.checkHashUser(3n, 'c');
      expect(state.checkHashUser(1n, 'z')).toBe(true);
      expect(state.checkHashUser(1n, 'a')).toBe(false);
      expect(state.hashUsersCacheStats()).toEqual({ hits: 1, misses: 4, collisions: 1 });
    });

    it('evicts the least recently used hash', () => {
      const state = open({ hashUsersCacheCapacity: 2 });
      state.checkHashUser(1n, 'a');
      state.checkHashUser(2n, 'b');
      state.checkHashUser(1n, 'a'); // 1 is now more recent than 2
      state.checkHashUser(3n, 'c'); // evicts 2
      const before = state.hashUsersCacheStats();
      state.checkHashUser(1n, 'a');
      state.checkHashUser(2n, 'b');
      const after = state.hashUsersCacheStats();
      expect(after.hits - before.hits).toBe(1);
      expect(after.misses - before.misses).toBe(1);
    });
  });

  describe('bulk reads and writes (accumulation)', () => {
    it('gets and sets many originals and metastreams at once, over several statements', () => {
      const state = open();
      const names = Array.from({ length: 300 }, (_, i) => `s-${i}`);
      state.transaction(() => {
        state.setOriginals(names.filter((_, i) => i % 3 !== 0).map((n, i) => original(n, { lastEventNumber: i })));
        state.setMetas(names.filter((_, i) => i % 2 === 0).map((n) => meta(`$$${n}`, { discardPoint: 7 })));
      });
      const originals = state.getOriginals([...names, 'absent']);
      expect(originals.size).toBe(200);
      for (const n of names) expect(originals.get(n)).toEqual(state.getOriginal(n));
      const metas = state.getMetas(names.map((n) => `$$${n}`));
      expect(metas.size).toBe(150);
      for (const n of names) expect(metas.get(`$$${n}`)).toEqual(state.getMeta(`$$${n}`));
      // Upserts: the second write of a stream replaces the first.
      state.setOriginals([original('s-1', { maxCount: null, isTombstoned: true, status: 'Archived' })]);
      expect(state.getOriginals(['s-1']).get('s-1')).toEqual(original('s-1', { maxCount: null, isTombstoned: true, status: 'Archived' }));
      expect(() => state.setOriginals([original('bad', { discardPoint: -5 })])).toThrow();
    });

    it('checks many hash users at once like one by one, through a small cache', () => {
      const state = open({ hashUsersCacheCapacity: 50 });
      const users = Array.from({ length: 300 }, (_, i) => ({ hash: BigInt(i) * 0x9e3779b97f4a7c15n % (1n << 64n), stream: `u-${i}` }));
      expect(state.transaction(() => state.checkHashUsers(users))).toBe(0);
      expect(state.transaction(() => state.checkHashUsers(users))).toBe(0); // found in the table
      const clash = users.slice(0, 200).map((u) => ({ hash: u.hash, stream: `${u.stream}-other` }));
      expect(state.checkHashUsers(clash)).toBe(200);
      // The same hash twice in one call: the first name is recorded, the second collides.
      expect(state.checkHashUsers([{ hash: 5n, stream: 'x' }, { hash: 5n, stream: 'y' }, { hash: -1n, stream: 'top' }])).toBe(1);
      expect(state.checkHashUser(5n, 'x')).toBe(false);
      expect(state.checkHashUser((1n << 64n) - 1n, 'top')).toBe(false);
      for (const u of users) expect(state.checkHashUser(u.hash, u.stream)).toBe(false);
    });
  });

  describe('transaction', () => {
    it('writes nothing when the callback throws', () => {
      const state = open();
      state.setOriginal(original('kept', { discardPoint: 1 }));
      state.addChunkWeight(0, 1);
      expect(() =>
        state.transaction(() => {
          state.setOriginal(original('kept', { discardPoint: 7 }));
          state.setOriginal(original('new'));
          state.setMeta(meta('$$new'));
          state.addChunkWeight(0, 5);
          state.resetChunkWeight(0);
          state.setChunkTimeRange(0, 1, 2);
          state.checkHashUser(10n, 'new');
          state.setLastAccumulatedChunk(9);
          state.setCheckpoint({ stage: 'Done', scavengePoint: point });
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(state.getOriginal('kept')?.discardPoint).toBe(1);
      expect(state.getOriginal('new')).toBeUndefined();
      expect(state.activeOriginals(null, 10).map((d) => d.stream)).toEqual(['kept']);
      expect(state.getMeta('$$new')).toBeUndefined();
      expect(state.getChunkWeight(0)).toBe(1);
      expect(state.getChunkTimeRange(0)).toBeUndefined();
      expect(state.checkHashUser(10n, 'other')).toBe(false);
      expect(state.lastAccumulatedChunk()).toBe(-1);
      expect(state.getCheckpoint()).toBeUndefined();
      expect(state.lastCompletedScavengePointNumber()).toBe(-1);
    });

    it('commits the writes and returns the value of the callback', () => {
      const state = open();
      const result = state.transaction(() => {
        state.setOriginal(original('a'));
        state.setLastAccumulatedChunk(0);
        return 42;
      });
      expect(result).toBe(42);
      expect(state.getOriginal('a')).toBeDefined();
      expect(state.lastAccumulatedChunk()).toBe(0);
    });

    it('joins nested transactions to the outer one, undoing only a failed inner one', () => {
      const state = open();
      expect(() =>
        state.transaction(() => {
          state.setOriginal(original('outer'));
          state.transaction(() => state.setOriginal(original('inner-ok')));
          expect(() =>
            state.transaction(() => {
              state.setOriginal(original('inner-failed'));
              throw new Error('inner');
            }),
          ).toThrow('inner');
          expect(state.getOriginal('inner-failed')).toBeUndefined();
          expect(state.getOriginal('inner-ok')).toBeDefined();
          throw new Error('outer');
        }),
      ).toThrow('outer');
      expect(state.getOriginal('outer')).toBeUndefined();
      expect(state.getOriginal('inner-ok')).toBeUndefined();
      state.transaction(() => {
        state.transaction(() => state.setOriginal(original('nested-commit')));
      });
      expect(state.getOriginal('nested-commit')).toBeDefined();
    });

    it('rejects an asynchronous callback and writes nothing', () => {
      const state = open();
      expect(() =>
        state.transaction(() => {
          state.setOriginal(original('a'));
          return Promise.resolve(1);
        }),
      ).toThrow(/synchronous/);
      expect(state.getOriginal('a')).toBeUndefined();
    });
  });

  describe('clean', () => {
    it('deletes metastreams and Spent originals, keeping Active and Archived ones', () => {
      const state = open();
      state.setOriginal(original('active'));
      state.setOriginal(original('spent', { status: 'Spent', discardPoint: 3 }));
      state.setOriginal(original('archived', { status: 'Archived', isTombstoned: true }));
      state.setMeta(meta('$$active'));
      state.setMeta(meta('$$spent'));
      state.addChunkWeight(1, 2);
      state.checkHashUser(5n, 'active');
      state.clean();
      expect(state.getOriginal('active')).toBeDefined();
      expect(state.getOriginal('archived')).toBeDefined();
      expect(state.getOriginal('spent')).toBeUndefined();
      expect([...state.allMetas()]).toEqual([]);
      expect(state.getChunkWeight(1)).toBe(2);
      expect(state.checkHashUser(5n, 'other')).toBe(true);
    });
  });
});

/**
 * Throughput of the SQLite scavenge state at the sizes calculation works with: 100 000 original
 * streams inserted and then updated in one transaction each, point lookups, active-stream paging
 * and hash-user checks. Prints the rates; the bounds only catch an order-of-magnitude regression.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { OriginalStreamData } from './scavenge-types.js';
import { openSqliteScavengeState } from './sqlite-scavenge-state.js';

const STREAM_COUNT = 100_000;
const LOOKUP_COUNT = 100_000;

function original(streamIndex: number, discardPoint: number): OriginalStreamData {
  return {
    stream: `orders-${streamIndex.toString(36)}-${streamIndex}`,
    isTombstoned: false,
    maxAgeSeconds: null,
    maxCount: 100,
    truncateBefore: null,
    discardPoint,
    maybeDiscardPoint: 0,
    lastEventNumber: 1000,
    status: 'Active',
  };
}

function ratePerSecond(count: number, startMs: number): number {
  return Math.round(count / ((performance.now() - startMs) / 1000));
}

describe('SqliteScavengeState throughput', () => {
  it('inserts, updates, looks up and pages 100,000 original streams', () => {
    const indexPath = mkdtempSync(join(tmpdir(), 'scavenge-state-perf-'));
    const state = openSqliteScavengeState({ indexPath, log: pino({ level: 'silent' }) });
    try {
      let startMs = performance.now();
      state.transaction(() => {
        for (let i = 0; i < STREAM_COUNT; i++) state.setOriginal(original(i, 0));
      });
      const insertRowsPerSecond = ratePerSecond(STREAM_COUNT, startMs);

      startMs = performance.now();
      state.transaction(() => {
        for (let i = 0; i < STREAM_COUNT; i++) state.setOriginal(original(i, 50));
      });
      const updateRowsPerSecond = ratePerSecond(STREAM_COUNT, startMs);

      startMs = performance.now();
      let found = 0;
      for (let i = 0; i < LOOKUP_COUNT; i++) {
        const stream = original((i * 7919) % STREAM_COUNT, 0).stream;
        if (state.getOriginal(stream)?.discardPoint === 50) found++;
      }
      const lookupsPerSecond = ratePerSecond(LOOKUP_COUNT, startMs);
      expect(found).toBe(LOOKUP_COUNT);

      startMs = performance.now();
      let paged = 0;
      let after: string | null = null;
      for (;;) {
        const page = state.activeOriginals(after, 32_768);
        if (page.length === 0) break;
        paged += page.length;
        after = page[page.length - 1]?.stream ?? null;
      }
      const pagedRowsPerSecond = ratePerSecond(paged, startMs);
      expect(paged).toBe(STREAM_COUNT);

      startMs = performance.now();
      state.transaction(() => {
        for (let i = 0; i < STREAM_COUNT; i++) {
          state.checkHashUser((BigInt(i) * 0x9e3779b97f4a7c15n) % (1n << 64n), `s-${i}`);
        }
      });
      const hashChecksPerSecond = ratePerSecond(STREAM_COUNT, startMs);

      startMs = performance.now();
      const committedTransactionCount = 100;
      for (let i = 0; i < committedTransactionCount; i++) {
        state.transaction(() => {
          state.addChunkWeight(i, 2);
          state.setLastAccumulatedChunk(i);
        });
      }
      const commitsPerSecond = ratePerSecond(committedTransactionCount, startMs);

      const figures = {
        insertRowsPerSecond,
        updateRowsPerSecond,
        lookupsPerSecond,
        pagedRowsPerSecond,
        hashChecksPerSecond,
        commitsPerSecond,
      };
      console.log(JSON.stringify(figures));
      expect(insertRowsPerSecond).toBeGreaterThan(5_000);
      expect(lookupsPerSecond).toBeGreaterThan(5_000);
    } finally {
      state.close();
      rmSync(indexPath, { recursive: true, force: true });
    }
  }, 120_000);
});

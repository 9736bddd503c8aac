/**
 * What only the SQLite scavenge state does: persistence across reopen, the page size, the files
 * left in `scavenging/`, locks, and errors naming the file. Crash safety is in
 * `sqlite-scavenge-state-crash.test.ts`.
 */
import { spawn } from 'node:child_process';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import sqlite from 'node-sqlite3-wasm';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EventDbError, FatalError } from '../../errors.js';
import type { OriginalStreamData } from './scavenge-types.js';
import { scavengeDbPath, sqliteStateFixture } from '../../../../test/support/scavenge-fixture.js';

const { Database: SqliteDatabase } = sqlite;
const { makeIndexPath, open } = sqliteStateFixture('sqlite-scavenge-state-');

/** The page size from the database header (big-endian u16 at offset 16; 1 means 65536). */
function headerPageSizeBytes(indexPath: string): number {
  const header = readFileSync(scavengeDbPath(indexPath)).subarray(0, 100);
  const value = header.readUInt16BE(16);
  return value === 1 ? 65536 : value;
}

function original(stream: string, overrides: Partial<OriginalStreamData> = {}): OriginalStreamData {
  return {
    stream,
    isTombstoned: false,
    maxAgeSeconds: 3600,
    maxCount: null,
    truncateBefore: null,
    discardPoint: 0,
    maybeDiscardPoint: 0,
    lastEventNumber: 10,
    status: 'Active',
    ...overrides,
  };
}

describe('SqliteScavengeState', () => {
  it('gives back the same data after reopening from disk', () => {
    const indexPath = makeIndexPath();
    const first = open({ indexPath });
    first.transaction(() => {
      first.setOriginal(original('a', { discardPoint: 4 }));
      first.setMeta({ metastream: '$$a', isTombstoned: true, discardPoint: 2, lastRecordChunk: 1 });
      first.addChunkWeight(1, 6);
      first.setChunkTimeRange(1, 10, 20);
      first.checkHashUser(99n, 'a');
      first.setLastAccumulatedChunk(1);
      first.setCheckpoint({
        stage: 'Calculating',
        scavengePoint: { number: 0, position: 4096, effectiveNowMs: 1000, threshold: 0 },
        doneStream: 'a',
      });
    });
    first.close();
    const second = open({ indexPath });
    expect(second.getOriginal('a')).toEqual(original('a', { discardPoint: 4 }));
    const meta = { metastream: '$$a', isTombstoned: true, discardPoint: 2, lastRecordChunk: 1 };
    expect(second.getMeta('$$a')).toEqual(meta);
    expect(second.getChunkWeight(1)).toBe(6);
    expect(second.getChunkTimeRange(1)).toEqual({ minMs: 10, maxMs: 20 });
    expect(second.checkHashUser(99n, 'b')).toBe(true);
    expect(second.lastAccumulatedChunk()).toBe(1);
    expect(second.getCheckpoint()?.stage).toBe('Calculating');
  });

  it('leaves only scavenging.db in scavenging/ once closed', () => {
    const indexPath = makeIndexPath();
    const state = open({ indexPath });
    state.transaction(() => state.setOriginal(original('a')));
    state.setOriginal(original('b'));
    state.close();
    expect(readdirSync(join(indexPath, 'scavenging'))).toEqual(['scavenging.db']);
  });

  it('applies the page size when it creates the database, and keeps it afterwards', () => {
    const indexPath = makeIndexPath();
    open({ indexPath, pageSizeBytes: 4096 }).close();
    expect(headerPageSizeBytes(indexPath)).toBe(4096);
    const warnings: unknown[] = [];
    const warnLog = pino(
      { level: 'warn' },
      { write: (line: string) => warnings.push(JSON.parse(line)) },
    );
    const reopened = open({ indexPath, pageSizeBytes: 16384, log: warnLog });
    reopened.setOriginal(original('a'));
    reopened.close();
    expect(headerPageSizeBytes(indexPath)).toBe(4096);
    expect(warnings).toEqual([
      expect.objectContaining({ pageSizeBytes: 4096, configuredPageSizeBytes: 16384 }),
    ]);
  });

  it('uses a 16 KiB page size by default', () => {
    const indexPath = makeIndexPath();
    open({ indexPath }).close();
    expect(headerPageSizeBytes(indexPath)).toBe(16384);
  });

  it('rejects a page size that is not a power of two', () => {
    expect(() => open({ indexPath: makeIndexPath(), pageSizeBytes: 3000 })).toThrow(/page size/);
  });

  it('reports a corrupt database as an error naming the file', () => {
    const indexPath = makeIndexPath();
    mkdirSync(join(indexPath, 'scavenging'));
    writeFileSync(scavengeDbPath(indexPath), Buffer.alloc(8192, 0x5a));
    expect(() => open({ indexPath })).toThrow(scavengeDbPath(indexPath));
  });

  it('reports corrupt pages found later as an error naming the file', () => {
    const indexPath = makeIndexPath();
    const state = open({ indexPath, pageSizeBytes: 4096 });
    state.transaction(() => {
      for (let i = 0; i < 2000; i++) {
        state.setOriginal(original(`stream-${i}`, { discardPoint: 1 }));
      }
    });
    state.close();
    const bytes = readFileSync(scavengeDbPath(indexPath));
    bytes.fill(0xa5, 4096 * 2);
    writeFileSync(scavengeDbPath(indexPath), bytes);
    const reopened = open({ indexPath });
    expect(() => [...reopened.allOriginalsWithDiscards()]).toThrow(scavengeDbPath(indexPath));
  });

  it('reports stored values that fail the checks as corruption of the file, not as fatal', () => {
    const indexPath = makeIndexPath();
    const state = open({ indexPath });
    state.setOriginal(original('a'));
    const scavengePoint = { number: 0, position: 0, effectiveNowMs: 0, threshold: 0 };
    state.setCheckpoint({ stage: 'Cleaning', scavengePoint });
    state.close();
    const db = new SqliteDatabase(scavengeDbPath(indexPath));
    db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL');
    db.exec('UPDATE OriginalStreamDatas SET status = 9');
    db.run('UPDATE Checkpoints SET value = ?', '{"stage":1}');
    db.close();
    const reopened = open({ indexPath });
    const corrupt = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (err: unknown) {
        return err;
      }
      return undefined;
    };
    const errors = [
      corrupt(() => reopened.getOriginal('a')),
      corrupt(() => reopened.getCheckpoint()),
    ];
    for (const err of errors) {
      expect(err).toBeInstanceOf(EventDbError);
      expect(err).not.toBeInstanceOf(FatalError);
      expect((err as EventDbError).code).toBe('EDB_INDEX_CORRUPT');
      expect((err as EventDbError).message).toContain(scavengeDbPath(indexPath));
    }
  });

  it('starts from scratch when scavenging.db was deleted', () => {
    const indexPath = makeIndexPath();
    const first = open({ indexPath });
    first.setLastAccumulatedChunk(5);
    first.close();
    rmSync(scavengeDbPath(indexPath));
    const second = open({ indexPath });
    expect(second.lastAccumulatedChunk()).toBe(-1);
    expect(second.getCheckpoint()).toBeUndefined();
  });

  it('removes a lock directory left behind by a dead process', async () => {
    const indexPath = makeIndexPath();
    open({ indexPath }).close();
    const exited = spawn('node', ['-e', '']);
    await new Promise((resolveExit) => exited.once('exit', resolveExit));
    mkdirSync(`${scavengeDbPath(indexPath)}.lock`);
    writeFileSync(`${scavengeDbPath(indexPath)}.lock/owner`, `${exited.pid}\n`);
    const state = open({ indexPath });
    state.setLastAccumulatedChunk(1);
    expect(state.lastAccumulatedChunk()).toBe(1);
    state.close();
    expect(readdirSync(join(indexPath, 'scavenging'))).toEqual(['scavenging.db']);
  });

  it('refuses a database locked by a live process', () => {
    const indexPath = makeIndexPath();
    open({ indexPath }).close();
    mkdirSync(`${scavengeDbPath(indexPath)}.lock`);
    writeFileSync(`${scavengeDbPath(indexPath)}.lock/owner`, `${process.ppid}\n`);
    expect(() => open({ indexPath })).toThrow(`in use by process ${process.ppid}`);
  });

  it('refuses to open the same database twice in one process', () => {
    const indexPath = makeIndexPath();
    const first = open({ indexPath });
    expect(() => open({ indexPath })).toThrow(/already open/);
    first.setLastAccumulatedChunk(2);
    first.close();
    expect(open({ indexPath }).lastAccumulatedChunk()).toBe(2);
  });
});

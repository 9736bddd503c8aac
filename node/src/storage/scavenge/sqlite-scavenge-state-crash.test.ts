/**
 * Crash safety of the SQLite scavenge state: a child process SIGKILLed while it commits
 * transactions in a loop, or in the middle of one, leaves the last committed state.
 *
 * The child processes run the real module: the test transpiles it and its relative imports into
 * a temporary directory (Node 20 cannot run TypeScript, and unit tests do not build).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sqlite from 'node-sqlite3-wasm';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scavengeDbPath, sqliteStateFixture } from '../../../../test/support/scavenge-fixture.js';
import type { OriginalStreamData } from './scavenge-types.js';

const { Database: SqliteDatabase } = sqlite;
const { makeIndexPath, open } = sqliteStateFixture('sqlite-scavenge-state-crash-');
const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../../..');

function original(stream: string, discardPoint: number): OriginalStreamData {
  return {
    stream,
    isTombstoned: false,
    maxAgeSeconds: 3600,
    maxCount: null,
    truncateBefore: null,
    discardPoint,
    maybeDiscardPoint: 0,
    lastEventNumber: 10,
    status: 'Active',
  };
}

describe('SqliteScavengeState after SIGKILL', () => {
  let childDirectory = '';

  beforeAll(() => {
    childDirectory = mkdtempSync(join(tmpdir(), 'scavenge-state-child-'));
    writeChildProgram(childDirectory);
  });

  afterAll(() => rmSync(childDirectory, { recursive: true, force: true }));

  it('holds a consistent prefix of the committed transactions', async () => {
    const indexPath = makeIndexPath();
    let committedReported = -1;
    // Hundreds of commits in all, so that WAL checkpoints (every 1000 pages) are among the
    // moments a kill can land on.
    for (let round = 0; round < 4; round++) {
      const child = spawnChild(childDirectory, ['loop', indexPath, '20']);
      const target = committedReported + 30 + Math.floor(Math.random() * 220);
      committedReported = await waitForCounter(child, target);
      // Kill at an arbitrary moment within the next transactions.
      await sleep(Math.floor(Math.random() * 30));
      const reportedBeforeKill = Math.max(committedReported, child.lastCounter);
      await killChild(child);
      const counter = checkConsistentPrefix(indexPath, 20);
      expect(counter).toBeGreaterThanOrEqual(reportedBeforeKill);
      committedReported = counter;
    }
  });

  it('starts from scratch when scavenging.db alone was deleted after a crash', async () => {
    const indexPath = makeIndexPath();
    const child = spawnChild(childDirectory, ['loop', indexPath, '20']);
    await waitForCounter(child, 10);
    await killChild(child);
    expect(existsSync(`${scavengeDbPath(indexPath)}-wal`)).toBe(true);
    rmSync(scavengeDbPath(indexPath));
    const state = open({ indexPath });
    expect(state.lastAccumulatedChunk()).toBe(-1);
    expect(state.getCheckpoint()).toBeUndefined();
    expect([...state.allOriginalsWithDiscards()]).toEqual([]);
    state.setLastAccumulatedChunk(0);
    state.close();
    expect(readdirSync(join(indexPath, 'scavenging'))).toEqual(['scavenging.db']);
  });

  it('rolls back a transaction interrupted in the middle', async () => {
    const indexPath = makeIndexPath();
    const seed = open({ indexPath });
    seed.transaction(() => {
      for (let i = 0; i < SEED_ROW_COUNT; i++) {
        seed.setOriginal(original(seedName(i), 1));
      }
      seed.setLastAccumulatedChunk(0);
    });
    seed.close();
    const committedBytes = readFileSync(scavengeDbPath(indexPath));
    const child = spawnChild(childDirectory, ['midtransaction', indexPath]);
    await waitForLine(child, 'in-transaction');
    await killChild(child);
    // The transaction spilled its pages to the WAL; the database file itself is untouched.
    expect(statSync(`${scavengeDbPath(indexPath)}-wal`).size).toBeGreaterThan(1024 * 1024);
    expect(readFileSync(scavengeDbPath(indexPath)).equals(committedBytes)).toBe(true);
    const state = open({ indexPath });
    expect(state.lastAccumulatedChunk()).toBe(0);
    const rows = [...state.allOriginalsWithDiscards()];
    const seedNames = Array.from({ length: SEED_ROW_COUNT }, (_, i) => seedName(i));
    expect(rows.map((d) => d.stream)).toEqual(seedNames);
    expect(rows.filter((d) => d.discardPoint !== 1)).toEqual([]);
    state.close();
    expect(readdirSync(join(indexPath, 'scavenging'))).toEqual(['scavenging.db']);
  });

  // Why the state uses WAL: with the rollback journal, this VFS never replays a hot journal (its
  // xCheckReservedLock sees the connection's own lock directory), so the same crash leaves the
  // uncommitted pages in the file. If this starts failing, the library fixed it.
  it('shows that node-sqlite3-wasm does not roll back a hot rollback journal', async () => {
    const indexPath = makeIndexPath();
    const path = join(indexPath, 'raw.db');
    const child = spawnChild(childDirectory, ['rawjournal', path]);
    await waitForLine(child, 'in-transaction');
    await killChild(child);
    expect(existsSync(`${path}-journal`)).toBe(true);
    rmSync(`${path}.lock`, { recursive: true, force: true });
    const db = new SqliteDatabase(path);
    try {
      const changed = db.get('SELECT count(*) AS n FROM t WHERE v = 99')?.['n'];
      expect(Number(changed)).toBeGreaterThan(0);
    } finally {
      db.close();
    }
  });

  /** Returns the committed counter after checking every transaction's rows are all there. */
  function checkConsistentPrefix(indexPath: string, rowsPerTransaction: number): number {
    const state = open({ indexPath });
    const counter = state.lastAccumulatedChunk();
    const rowCounts = new Map<number, number>();
    for (const data of state.allOriginalsWithDiscards()) {
      const transactionNumber = Number(/^t(\d+)-/.exec(data.stream)?.[1]);
      rowCounts.set(transactionNumber, (rowCounts.get(transactionNumber) ?? 0) + 1);
      expect(data.lastEventNumber).toBe(transactionNumber);
    }
    for (let transactionNumber = 0; transactionNumber <= counter; transactionNumber++) {
      expect(rowCounts.get(transactionNumber)).toBe(rowsPerTransaction);
    }
    expect([...rowCounts.keys()].filter((n) => n > counter)).toEqual([]);
    const checkpoint = state.getCheckpoint();
    const done = checkpoint?.stage === 'Accumulating' ? checkpoint.doneLogicalChunkNumber : null;
    expect(done).toBe(counter);
    state.close();
    return counter;
  }
});

interface Child {
  readonly process: ChildProcess;
  lastCounter: number;
  readonly lines: string[];
  readonly waiters: Array<() => void>;
}

function spawnChild(childDirectory: string, args: string[]): Child {
  const program = join(childDirectory, 'child.mjs');
  const process = spawn('node', [program, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const child: Child = { process, lastCounter: -1, lines: [], waiters: [] };
  let buffered = '';
  process.stdout?.on('data', (data: Buffer) => {
    buffered += data.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      child.lines.push(line);
      const counter = /^committed (\d+)$/.exec(line)?.[1];
      if (counter !== undefined) child.lastCounter = Number(counter);
    }
    for (const waiter of child.waiters.splice(0)) waiter();
  });
  let stderr = '';
  process.stderr?.on('data', (data: Buffer) => (stderr += data.toString('utf8')));
  process.on('exit', (code) => {
    if (code !== null && code !== 0) child.lines.push(`exit ${code}: ${stderr}`);
    for (const waiter of child.waiters.splice(0)) waiter();
  });
  return child;
}

async function waitFor(child: Child, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!done()) {
    if (child.process.exitCode !== null) throw new Error(`child exited: ${child.lines.join('\n')}`);
    if (Date.now() > deadline) throw new Error(`child timed out: ${child.lines.join('\n')}`);
    await new Promise<void>((resolveWait) => {
      child.waiters.push(resolveWait);
      setTimeout(resolveWait, 200);
    });
  }
}

async function waitForCounter(child: Child, target: number): Promise<number> {
  await waitFor(child, () => child.lastCounter >= target);
  return child.lastCounter;
}

async function waitForLine(child: Child, line: string): Promise<void> {
  await waitFor(child, () => child.lines.includes(line));
}

async function killChild(child: Child): Promise<void> {
  if (child.process.exitCode !== null) return;
  const exited = new Promise<void>((resolveExit) => {
    child.process.once('exit', () => resolveExit());
  });
  child.process.kill('SIGKILL');
  await exited;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

/** The child imports the real module: it and its relative imports, found by following them. */
const CHILD_ENTRY = 'node/src/storage/scavenge/sqlite-scavenge-state.ts';

function childSources(): string[] {
  const found = new Set<string>();
  const pending = [CHILD_ENTRY];
  for (let source = pending.pop(); source !== undefined; source = pending.pop()) {
    if (found.has(source)) continue;
    found.add(source);
    const text = readFileSync(join(repoRoot, source), 'utf8');
    for (const match of text.matchAll(/^import (?!type )[^;]*?from '(\.{1,2}\/[^']+)\.js';/gms)) {
      const specifier = match[1] ?? '';
      pending.push(join(dirname(source), `${specifier}.ts`));
    }
  }
  return [...found];
}

/** Committed rows the interrupted transaction rewrites. */
const SEED_ROW_COUNT = 2000;

function seedName(seedIndex: number): string {
  return `before-${String(seedIndex).padStart(5, '0')}`;
}

const CHILD_PROGRAM = `
import { pino } from 'pino';
import pkg from 'node-sqlite3-wasm';
import { openSqliteScavengeState } from './node/src/storage/scavenge/sqlite-scavenge-state.js';
const { Database } = pkg;
const [mode, indexPath, rowCountText] = process.argv.slice(2);
const log = pino({ level: 'silent' });
const point = { number: 0, position: 0, effectiveNowMs: 0, threshold: 0 };
function row(stream, eventNumber) {
  return { stream, isTombstoned: false, maxAgeSeconds: null, maxCount: 1, truncateBefore: null,
    discardPoint: 1, maybeDiscardPoint: 0, lastEventNumber: eventNumber, status: 'Active' };
}
if (mode === 'loop') {
  const state = openSqliteScavengeState({ indexPath, log, cacheSizeBytes: 256 * 1024 });
  const rowCount = Number(rowCountText);
  for (let counter = state.lastAccumulatedChunk() + 1; ; counter++) {
    state.transaction(() => {
      for (let i = 0; i < rowCount; i++) state.setOriginal(row('t' + counter + '-' + i, counter));
      state.setLastAccumulatedChunk(counter);
      state.setCheckpoint({
        stage: 'Accumulating', scavengePoint: point, doneLogicalChunkNumber: counter,
      });
    });
    process.stdout.write('committed ' + counter + '\\n');
  }
} else if (mode === 'rawjournal') {
  const db = new Database(indexPath);
  db.exec('PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL; PRAGMA cache_size = -64');
  db.exec('CREATE TABLE t (key TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID; BEGIN');
  for (let i = 0; i < 2000; i++) {
    db.run('INSERT INTO t VALUES (?, 1)', 'k' + String(i).padStart(5, '0'));
  }
  db.exec('COMMIT; BEGIN IMMEDIATE; UPDATE t SET v = 99');
  for (let i = 0; i < 20000; i++) db.run('INSERT INTO t VALUES (?, 1)', 'z' + i + 'x'.repeat(100));
  process.stdout.write('in-transaction\\n');
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
} else if (mode === 'midtransaction') {
  // A small cache makes SQLite spill pages into the database file before the commit.
  const state = openSqliteScavengeState({ indexPath, log, cacheSizeBytes: 64 * 1024 });
  state.transaction(() => {
    // Rewrites the committed rows first: their leaf pages go cold and are spilled to the file
    // in place, which only the journal can undo.
    for (let i = 0; i < ${SEED_ROW_COUNT}; i++) {
      state.setOriginal({ ...row('before-' + String(i).padStart(5, '0'), 99), discardPoint: 99 });
    }
    for (let i = 0; i < 20000; i++) {
      state.setOriginal(row('during-' + i + '-' + 'x'.repeat(100), 1));
    }
    state.setLastAccumulatedChunk(1);
    process.stdout.write('in-transaction\\n');
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
  });
}
`;

function writeChildProgram(childDirectory: string): void {
  for (const source of childSources()) {
    const output = ts.transpileModule(readFileSync(join(repoRoot, source), 'utf8'), {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    const target = join(childDirectory, source.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, output.outputText);
  }
  writeFileSync(join(childDirectory, 'package.json'), JSON.stringify({ type: 'module' }));
  symlinkSync(join(repoRoot, 'node_modules'), join(childDirectory, 'node_modules'), 'dir');
  writeFileSync(join(childDirectory, 'child.mjs'), CHILD_PROGRAM);
}

/**
 * Opens real engines on temp directories for tests, and makes events.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, onTestFinished } from 'vitest';
import { openEngine, type Engine, type EventDbDeps } from '../../node/src/storage/event-db.js';
import type { EventDbOptions, NewEvent } from '../../node/src/storage/event-db-types.js';

/**
 * A fresh temp directory, removed when the test that made it finishes (or, made outside a test,
 * after the file's tests; failing both, when the process exits), so a test run leaves nothing
 * in the temp directory.
 */
export function tempDir(prefix = 'edb-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  removeLater(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function removeLater(remove: () => void): void {
  try {
    onTestFinished(remove);
    return;
  } catch {
    // Not inside a running test.
  }
  try {
    afterAll(remove);
  } catch {
    process.once('exit', remove);
  }
}

export function engineOptions(dir: string, overrides: Partial<EventDbOptions> = {}): EventDbOptions {
  return {
    dbPath: path.join(dir, 'db'), indexPath: path.join(dir, 'index'), memDb: false, chunkSizeBytes: 64 * 1024,
    maxMemTableSize: 1000, maxEventSizeBytes: 4 * 1024 * 1024, streamExistenceFilterSizeBytes: 64 * 1024,
    hashCollisionReadLimit: 100, ...overrides,
  };
}

export const quietLog = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

export async function openTestEngine(options: EventDbOptions, deps: Partial<EventDbDeps> = {}): Promise<Engine> {
  return openEngine(options, { log: quietLog, onFatal: (err) => { throw err; }, ...deps });
}

export function jsonEvent(body: unknown, eventType = 'TestEvent', eventId: string = crypto.randomUUID()): NewEvent {
  return { eventId, eventType, data: Buffer.from(JSON.stringify(body)), metadata: Buffer.alloc(0), isJson: true };
}

/** A logger that keeps every line (parsed) for assertions. */
export function capturingLog(level = 'debug'): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level }, { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>); } });
  return { log, lines };
}

/** The real engine in --mem-db mode, for in-process (inject) tests of the layers above it. */
export async function openMemEngine(): Promise<Engine> {
  // --mem-db touches no file: the paths are never created.
  const dir = path.join(os.tmpdir(), 'edb-mem-unused');
  return openTestEngine(engineOptions(dir, { memDb: true, chunkSizeBytes: 1024 * 1024 }));
}

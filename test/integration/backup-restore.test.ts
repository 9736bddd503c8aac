/**
 * The backup and restore procedures of the specification, on real files: a copy taken in the
 * documented order, with chaser.chk copied over truncate.chk, opens and reads everything.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { engineOptions, jsonEvent, openTestEngine, tempDir } from '../support/engine-fixture.js';
import { prepareRestore, simpleFullBackup } from '../support/backup.js';
import type { Engine } from '../../node/src/storage/event-db.js';
import type { RecordedEvent } from '../../node/src/storage/event-db-types.js';

const OPTS = { chunkSizeBytes: 16 * 1024, maxMemTableSize: 300 };

async function allUserEvents(db: Engine): Promise<RecordedEvent[]> {
  const all = await db.readAll(undefined, 1_000_000, 'forward');
  return all.events.filter((e) => !e.stream.startsWith('$'));
}

function dirsOf(root: string): { db: string; index: string } {
  return { db: path.join(root, 'db'), index: path.join(root, 'index') };
}

describe('simple full backup and restore', () => {
  it('restores a stopped node completely', async () => {
    const src = tempDir('edb-backup-src-');
    const db = await openTestEngine(engineOptions(src, OPTS));
    for (let i = 0; i < 600; i++) await db.append(`order-${i % 37}`, -2, [jsonEvent({ i, pad: 'z'.repeat(i % 150) })]);
    await db.setStreamMetadata('order-3', -2, { $maxCount: 5 });
    await db.deleteStream('order-4', -2, true);
    const before = await allUserEvents(db);
    await db.close();

    const dst = tempDir('edb-backup-dst-');
    const order = simpleFullBackup(dirsOf(src), dirsOf(dst));
    expect(order.findIndex((f) => f.startsWith('db/chunk-'))).toBeGreaterThan(order.findIndex((f) => f === 'db/writer.chk'));
    expect(order.some((f) => f === 'index/indexmap')).toBe(true);
    prepareRestore(dirsOf(dst));

    const restored = await openTestEngine(engineOptions(dst, OPTS));
    try {
      expect((await allUserEvents(restored)).map((e) => e.eventId)).toEqual(before.map((e) => e.eventId));
      for (let s = 0; s < 37; s++) {
        const r = await restored.readStream(`order-${s}`, 0, 4096, 'forward');
        if (s === 4) { expect(r.kind).toBe('stream-deleted'); continue; }
        expect(r.kind).toBe('success');
        if (r.kind !== 'success') continue;
        expect(r.events.length).toBe(s === 3 ? 5 : before.filter((e) => e.stream === `order-${s}`).length);
      }
      // The restored node accepts writes at the right numbers.
      expect(await restored.append('order-0', -2, [jsonEvent('after')])).toMatchObject({ kind: 'success', firstEventNumber: 17 });
    } finally {
      await restored.close();
    }
  });

  it('restores a node that was killed mid-write to the chaser position, consistently', async () => {
    const src = tempDir('edb-backup-kill-');
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [path.resolve('dist/test/crash/append-driver.js'), '--dir', src, '--writers', '16', '--chunk-size', '16384', '--max-mem-table-size', '300'], { stdio: ['ignore', 'pipe', 'inherit'] });
      readline.createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.includes('"ready"')) setTimeout(() => child.kill('SIGKILL'), 1500);
      });
      child.on('exit', (_c, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error('driver did not run'))));
    });
    const dst = tempDir('edb-backup-kill-dst-');
    simpleFullBackup(dirsOf(src), dirsOf(dst));
    prepareRestore(dirsOf(dst));
    const original = await openTestEngine(engineOptions(src, OPTS));
    const restored = await openTestEngine(engineOptions(dst, OPTS));
    try {
      const a = await allUserEvents(original);
      const b = await allUserEvents(restored);
      expect(b.length).toBeGreaterThan(0);
      // chaser.chk trails writer.chk by up to a second, so the restore really truncates.
      expect(b.length).toBeLessThan(a.length);
      // The restore is a prefix of the original log (truncated at the chaser position).
      expect(b.map((e) => e.eventId)).toEqual(a.slice(0, b.length).map((e) => e.eventId));
      for (let k = 0; k < 16; k++) {
        const r = await restored.readStream(`w-${k}`, 0, 100_000, 'forward');
        if (r.kind !== 'success') continue;
        r.events.forEach((e, i) => expect(e.eventNumber).toBe(i));
        expect(r.events.length).toBe(b.filter((e) => e.stream === `w-${k}`).length);
      }
    } finally {
      await original.close();
      await restored.close();
    }
  });
});

/**
 * The log writer thread (node/src/storage/writer/log-writer-thread.ts) seals, checksums, writes
 * and fdatasyncs each batch on a second thread. It runs only from the compiled worker module, so
 * this test loads the engine from dist/ (`make build` first), on real files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type * as EventDbModule from '../../node/src/storage/event-db.js';
import type * as ChunkStorageModule from '../../node/src/storage/chunk/chunk-storage.js';
import type { BlockFile } from '../../node/src/platform/block-file.js';
import type { NewEvent } from '../../node/src/storage/event-db-types.js';
import { decodeCheckpointFile } from '../../node/src/storage/format/checkpoint-file.js';
import { engineOptions, quietLog, tempDir } from '../support/engine-fixture.js';

const DIST = path.resolve('dist/node/src/storage');
const { openEngine } = (await import(pathToFileURL(path.join(DIST, 'event-db.js')).href)) as typeof EventDbModule;
const { DirectoryChunkStorage } = (await import(pathToFileURL(path.join(DIST, 'chunk/chunk-storage.js')).href)) as typeof ChunkStorageModule;

function kibEvent(stream: string, n: number): NewEvent {
  const body = JSON.stringify({ stream, n, pad: 'p'.repeat(1000) });
  return { eventId: crypto.randomUUID(), eventType: 'KibEvent', data: Buffer.from(body), metadata: Buffer.from(`{"n":${n}}`), isJson: true };
}

describe('log writer thread', () => {
  it('writes batches from many writers across completed chunks; a restart verifies every chunk and reads every event back', async () => {
    const dir = tempDir('edb-lwt-');
    // 256 KiB chunks: about 200 events each, so the run completes many chunks on the thread.
    const options = engineOptions(dir, { chunkSizeBytes: 256 * 1024, maxMemTableSize: 2000 });
    const fatal: Error[] = [];
    const db = await openEngine(options, { log: quietLog, onFatal: (e) => { fatal.push(e); } });
    expect(db.stats().writer.onWriterThread).toBe(true);
    const written = new Map<string, NewEvent[]>();
    await Promise.all(Array.from({ length: 16 }, async (_, w) => {
      const stream = `kib-${w}`;
      const mine: NewEvent[] = [];
      written.set(stream, mine);
      for (let b = 0; b < 10; b++) {
        const batch = Array.from({ length: 20 }, (_, i) => kibEvent(stream, b * 20 + i));
        const r = await db.append(stream, b === 0 ? -1 : b * 20 - 1, batch);
        expect(r).toMatchObject({ kind: 'success', firstEventNumber: b * 20 });
        mine.push(...batch);
      }
    }));
    expect(fatal).toEqual([]);
    // writer.chk is written on the thread too: when an append is acknowledged, the file already
    // covers it (its commit record starts at commitPosition; the record is 32 bytes + framing).
    for (let i = 0; i < 20; i++) {
      const r = await db.append('chk', -2, [kibEvent('chk', i)]);
      if (r.kind !== 'success') throw new Error(r.kind);
      const slot = decodeCheckpointFile(fs.readFileSync(path.join(options.dbPath, 'writer.chk')));
      expect(slot!.value).toBeGreaterThan(r.commitPosition);
      expect(slot!.value).toBe(db.stats().writerCheckpoint);
    }
    const chunks = fs.readdirSync(options.dbPath).filter((f) => f.startsWith('chunk-'));
    expect(chunks.length).toBeGreaterThan(10);
    await db.close();

    // Completed chunks are verified against their footer's checksum (the thread's running crc)
    // when the database opens; every record's own checksum is checked when it is read.
    const reopened = await openEngine(options, { log: quietLog, onFatal: (e) => { fatal.push(e); } });
    for (const [stream, events] of written) {
      const r = await reopened.readStream(stream, 0, 1000, 'forward');
      expect(r.kind).toBe('success');
      if (r.kind !== 'success') continue;
      expect(r.events.map((e) => e.eventId)).toEqual(events.map((e) => e.eventId));
      expect(r.events.every((e, i) => e.data.equals(events[i]!.data) && e.metadata.equals(events[i]!.metadata))).toBe(true);
    }
    const all = await reopened.readAll(undefined, 10_000, 'forward');
    expect(all.events.filter((e) => e.stream.startsWith('kib-')).length).toBe(16 * 200);
    expect((await reopened.readStream('chk', 0, 100, 'forward')).kind === 'success').toBe(true);
    await reopened.close();
    expect(fatal).toEqual([]);

    // The footer checksum is real: one flipped byte in a completed chunk stops the next open.
    const victim = path.join(options.dbPath, chunks.sort()[2]!);
    const fd = fs.openSync(victim, 'r+');
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, 4096);
    b[0] = b[0]! ^ 0xff;
    fs.writeSync(fd, b, 0, 1, 4096);
    fs.closeSync(fd);
    await expect(openEngine(options, { log: quietLog, onFatal: () => undefined })).rejects.toThrow(new RegExp(path.basename(victim)));
  });

  it('a write that fails on the thread stops the engine: that append is not acknowledged, later calls fail, acknowledged events survive', async () => {
    const dir = tempDir('edb-lwt-fail-');
    const options = engineOptions(dir);
    /** Chunk files whose descriptor for the thread turns read-only when told to: the thread's write fails (EBADF). */
    class ReadOnlyForThread extends DirectoryChunkStorage {
      failWrites = false;
      override open(name: string, writable: boolean): BlockFile { return this.wrap(super.open(name, writable)); }
      override create(name: string): BlockFile { return this.wrap(super.create(name)); }
      private wrap(file: BlockFile): BlockFile {
        const storage = this;
        let readOnlyFd: number | undefined;
        return new Proxy(file, {
          get(target, prop, receiver) {
            if (prop === 'fd' && storage.failWrites) return (readOnlyFd ??= fs.openSync(target.path, 'r'));
            const v = Reflect.get(target, prop, receiver) as unknown;
            return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          },
        });
      }
    }
    const storage = new ReadOnlyForThread(options.dbPath);
    const fatal: Error[] = [];
    const db = await openEngine(options, { log: quietLog, chunkStorage: storage, onFatal: (e) => { fatal.push(e); } });
    expect(db.stats().writer.onWriterThread).toBe(true);
    const acked = kibEvent('s', 0);
    expect(await db.append('s', -1, [acked])).toMatchObject({ kind: 'success' });
    storage.failWrites = true;
    await expect(db.append('s', 0, [kibEvent('s', 1)])).rejects.toThrow(/write to .*chunk-000000\.000000 failed/);
    expect(fatal).toHaveLength(1);
    expect((fatal[0] as Error & { code?: string }).code).toBe('EDB_WRITE_FAILED');
    await expect(db.append('s', 0, [kibEvent('s', 2)])).rejects.toThrow();
    await db.close().catch(() => undefined);

    const reopened = await openEngine(options, { log: quietLog, onFatal: (e) => { throw e; } });
    const r = await reopened.readStream('s', 0, 10, 'forward');
    expect(r.kind === 'success' && r.events.map((e) => e.eventId)).toEqual([acked.eventId]);
    await reopened.close();
  });

  it('a log writer thread that dies stops the engine instead of leaving appends hanging', async () => {
    const dir = tempDir('edb-lwt-exit-');
    const options = engineOptions(dir);
    const fatal: Error[] = [];
    const db = await openEngine(options, { log: quietLog, onFatal: (e) => { fatal.push(e); } });
    const acked = kibEvent('s', 0);
    expect(await db.append('s', -1, [acked])).toMatchObject({ kind: 'success' });
    // The thread goes away as it would on an out-of-memory abort inside it.
    const thread = (db as unknown as { writerThread: { worker: { terminate(): Promise<number> } } }).writerThread;
    await thread.worker.terminate();
    const settled = await Promise.race([
      db.append('s', 0, [kibEvent('s', 1)]).then(() => 'acknowledged', (e: Error) => `rejected: ${e.message}`),
      new Promise<string>((resolve) => setTimeout(() => resolve('hung'), 5000)),
    ]);
    expect(settled).toMatch(/^rejected: write to .*chunk-000000\.000000 failed/);
    expect(fatal).toHaveLength(1);
    expect(String((fatal[0] as Error & { cause?: Error }).cause?.message)).toMatch(/log writer thread exited/);
    await db.close().catch(() => undefined);
    const reopened = await openEngine(options, { log: quietLog, onFatal: (e) => { throw e; } });
    const r = await reopened.readStream('s', 0, 10, 'forward');
    expect(r.kind === 'success' && r.events.map((e) => e.eventId)).toEqual([acked.eventId]);
    await reopened.close();
  });
});

import { describe, expect, it } from 'vitest';
import { DirectoryChunkStorage } from './chunk/chunk-storage.js';
import type { BlockFile } from '../platform/block-file.js';
import { engineOptions, jsonEvent, openTestEngine, tempDir } from '../../../test/support/engine-fixture.js';

/** Real chunk files whose fdatasync starts failing (EIO) when told to. */
class FailingSyncStorage extends DirectoryChunkStorage {
  failSyncs = false;
  syncCalls = 0;
  private wrap(file: BlockFile): BlockFile {
    const storage = this;
    return new Proxy(file, {
      get(target, prop, receiver) {
        if (prop === 'sync') {
          return async () => {
            storage.syncCalls++;
            if (storage.failSyncs) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
            return target.sync();
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
  override open(name: string, writable: boolean): BlockFile { return this.wrap(super.open(name, writable)); }
  override create(name: string): BlockFile { return this.wrap(super.create(name)); }
}

describe('fsync failure', () => {
  it('stops the engine: the append is not acknowledged, the fatal handler runs once, and later calls fail', async () => {
    const dir = tempDir();
    const options = engineOptions(dir);
    const storage = new FailingSyncStorage(options.dbPath);
    const fatal: Error[] = [];
    const db = await openTestEngine(options, { chunkStorage: storage, onFatal: (err) => { fatal.push(err); } });
    expect(await db.append('s', -1, [jsonEvent(0)])).toMatchObject({ kind: 'success' });
    storage.failSyncs = true;
    const syncsBefore = storage.syncCalls;
    await expect(db.append('s', 0, [jsonEvent(1)])).rejects.toThrow(/fsync/);
    expect(storage.syncCalls - syncsBefore).toBe(1); // never retried
    expect(fatal).toHaveLength(1);
    expect(fatal[0]?.message).toMatch(/fsync of .*chunk-000000\.000000 failed/);
    await expect(db.append('s', 0, [jsonEvent(2)])).rejects.toThrow(/fsync/);
    await expect(db.readStream('s', 0, 10, 'forward')).rejects.toThrow(/fsync/);
    expect(fatal).toHaveLength(1);
    await db.close().catch(() => undefined);

    // After a restart on a healthy disk the acknowledged event is there and the failed one is not.
    const reopened = await openTestEngine(options);
    const r = await reopened.readStream('s', 0, 10, 'forward');
    expect(r.kind === 'success' && r.events.map((e) => e.eventNumber)).toEqual([0]);
    await reopened.close();
  });

  it('rejects every append in flight when a data fsync fails under concurrent load: none hangs, none succeeds', async () => {
    const dir = tempDir();
    const options = engineOptions(dir);
    const storage = new FailingSyncStorage(options.dbPath);
    const fatal: Error[] = [];
    const db = await openTestEngine(options, { chunkStorage: storage, onFatal: (err) => { fatal.push(err); } });
    expect(await db.append('warm', -1, [jsonEvent(0)])).toMatchObject({ kind: 'success' });
    storage.failSyncs = true;
    const appends = Array.from({ length: 64 }, (_, i) => db.append(`s-${i}`, -2, [jsonEvent(i)]));
    const settled = await Promise.race([
      Promise.allSettled(appends),
      new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 5000)),
    ]);
    expect(settled).not.toBe('hung');
    expect((settled as PromiseSettledResult<unknown>[]).map((r) => r.status)).toEqual(appends.map(() => 'rejected'));
    expect(fatal).toHaveLength(1);
    await db.close().catch(() => undefined);
  });
});

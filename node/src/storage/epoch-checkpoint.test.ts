import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectoryChunkStorage } from './chunk/chunk-storage.js';
import { FileCheckpoint } from './checkpoint/checkpoint.js';
import type { BlockFile } from '../platform/block-file.js';
import { engineOptions, openTestEngine, tempDir } from '../../../test/support/engine-fixture.js';
import type { Engine } from './event-db.js';

/** Real chunk files whose fdatasync waits while `held` is set (a write caught in flight). */
class HeldSyncStorage extends DirectoryChunkStorage {
  held = false;
  waiting = 0;
  private release: (() => void)[] = [];
  open2(file: BlockFile): BlockFile {
    const storage = this;
    return new Proxy(file, {
      get(target, prop, receiver) {
        if (prop === 'sync') {
          return async () => {
            if (storage.held) {
              storage.waiting++;
              await new Promise<void>((r) => storage.release.push(r));
            }
            return target.sync();
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
  letGo(): void {
    this.held = false;
    for (const r of this.release.splice(0)) r();
  }
  override open(name: string, writable: boolean): BlockFile { return this.open2(super.open(name, writable)); }
  override create(name: string): BlockFile { return this.open2(super.create(name)); }
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const engines: Engine[] = [];
afterEach(async () => {
  for (const db of engines.splice(0)) await db.close().catch(() => undefined);
});

const cluster = { instanceId: 'node-a' };

describe('epoch.chk follows every durable epoch record', () => {
  it('a leader that steps down while its epoch record is being written still reports that epoch as its last', async () => {
    const options = engineOptions(tempDir());
    const storage = new HeldSyncStorage(options.dbPath);
    const db = await openTestEngine(options, { cluster, chunkStorage: storage, logWriterThread: false });
    engines.push(db);
    expect((await db.becomeLeader(4, 'node-a')).epochNumber).toBe(4);

    storage.held = true;
    const elected = db.becomeLeader(5, 'node-a');
    const outcome = elected.then(() => 'answered', (err: Error) => `refused: ${err.message}`);
    await until(() => storage.waiting > 0); // the record is in the file, its fdatasync not yet done
    const steppedDown = db.stopLeading(new Error('stepped down'));
    storage.letGo();
    await steppedDown;
    expect(await outcome).toBe('refused: stepped down');
    // The record became durable after the refusal: the chain this node reports includes it, so the
    // next leader sees where their logs part.
    expect(db.epochs(5).map((e) => e.epochNumber)).toEqual([5, 4]);
    await db.close();

    const reopened = await openTestEngine(options, { cluster });
    engines.push(reopened);
    expect(reopened.epochs(5).map((e) => e.epochNumber)).toEqual([5, 4]);
  });

  it('at start-up, an epoch record past epoch.chk (the process ended between the two) becomes the last epoch', async () => {
    const options = engineOptions(tempDir());
    const db = await openTestEngine(options, { cluster });
    await db.becomeLeader(7, 'node-a');
    const seventh = db.epochs(1)[0]!;
    await db.becomeLeader(8, 'node-a');
    await db.close();
    // epoch.chk as it was before the eighth epoch's record reached it, and an index that has not
    // replayed that part of the log yet (records after an epoch are applied only once epoch.chk
    // points at it, so a process that ended in between never indexed past it)
    fs.rmSync(options.indexPath, { recursive: true, force: true });
    const chk = await FileCheckpoint.open(options.dbPath, 'epoch.chk', -1);
    await chk.write(seventh.epochPosition);
    await chk.close();

    const reopened = await openTestEngine(options, { cluster });
    engines.push(reopened);
    expect(reopened.epochs(5).map((e) => e.epochNumber)).toEqual([8, 7]);
  });
});

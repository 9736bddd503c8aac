import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStreamExistenceFilter } from './stream-existence-filter.js';

const log = pino({ level: 'silent' });
let indexPath = '';

beforeEach(async () => {
  indexPath = await mkdtemp(join(tmpdir(), 'edb-existence-'));
});
afterEach(async () => {
  await rm(indexPath, { recursive: true, force: true });
});

describe('StreamExistenceFilter', () => {
  it('answers for added streams and rarely for others', async () => {
    const filter = await openStreamExistenceFilter({ indexPath, log, sizeBytes: 10_000 });
    for (let i = 0; i < 8000; i += 1) filter.add(`stream-${i}`);
    for (let i = 0; i < 8000; i += 1) expect(filter.mightExist(`stream-${i}`)).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 10_000; i += 1) if (filter.mightExist(`other-${i}`)) falsePositives += 1;
    expect(falsePositives / 10_000).toBeLessThan(0.05);
  });

  it('persists atomically with its covered position and reloads', async () => {
    const filter = await openStreamExistenceFilter({ indexPath, log, sizeBytes: 4096 });
    expect(filter.checkpoint).toBe(0);
    filter.add('orders-1');
    filter.advance(12_345);
    await filter.persist();
    expect(filter.checkpoint).toBe(12_345);
    filter.advance(100);
    expect(filter.coveredLogPosition).toBe(12_345);
    const dataPath = join(indexPath, 'stream-existence', 'streamExistenceFilter.dat');
    const dataBefore = await stat(dataPath);
    filter.add('orders-1');
    filter.advance(20_000);
    await filter.persist();
    expect(filter.checkpoint).toBe(20_000);
    // No new stream: only the checkpoint file was rewritten.
    expect((await stat(dataPath)).ino).toBe(dataBefore.ino);
    const files = await readdir(join(indexPath, 'stream-existence'));
    expect(files.sort()).toEqual(['streamExistenceFilter.chk', 'streamExistenceFilter.dat']);
    const reloaded = await openStreamExistenceFilter({ indexPath, log, sizeBytes: 4096 });
    expect(reloaded.checkpoint).toBe(20_000);
    expect(reloaded.mightExist('orders-1')).toBe(true);
    expect(reloaded.mightExist('orders-2')).toBe(false);
  });

  it('starts empty from position 0 when the data file is damaged or resized', async () => {
    const filter = await openStreamExistenceFilter({ indexPath, log, sizeBytes: 4096 });
    filter.add('orders-1');
    filter.advance(99);
    await filter.close();
    const leftover = join(indexPath, 'stream-existence', 'streamExistenceFilter.dat.x.tmp');
    await writeFile(leftover, 'partial');
    const resized = await openStreamExistenceFilter({ indexPath, log, sizeBytes: 8192 });
    expect(await readdir(join(indexPath, 'stream-existence'))).not.toContain(
      'streamExistenceFilter.dat.x.tmp',
    );
    expect(resized.checkpoint).toBe(0);
    const path = join(indexPath, 'stream-existence', 'streamExistenceFilter.dat');
    const bytes = await readFile(path);
    bytes[100]! ^= 0xff;
    await writeFile(path, bytes);
    const damaged = await openStreamExistenceFilter({ indexPath, log, sizeBytes: 4096 });
    expect(damaged.checkpoint).toBe(0);
    expect(damaged.mightExist('orders-1')).toBe(false);
  });

  it('persists periodically when changed', async () => {
    const filter = await openStreamExistenceFilter({
      indexPath, log, sizeBytes: 1024, persistIntervalMs: 20,
    });
    filter.add('a');
    filter.advance(7);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(filter.checkpoint).toBe(7);
    await filter.close();
  });
});

import { describe, expect, it } from 'vitest';
import {
  chunksToCopy,
  chunksToRemove,
  indexFilesToCopy,
  indexFilesToDelete,
  indexHasFiles,
  indexMapCopyIsCurrent,
  lastBackupChunk,
  listIndexFiles,
  restoreCut,
  simpleFullOrder,
} from './plan.js';

const G1 = '11111111-1111-1111-1111-111111111111';
const G2 = '22222222-2222-2222-2222-222222222222';
const G3 = '33333333-3333-3333-3333-333333333333';

describe('simple full backup order', () => {
  it('copies index checkpoints, other index files (indexmap first), db checkpoints (writer.chk last), chunks in log order', () => {
    const order = simpleFullOrder(
      ['eventdb.lock', G2, `${G2}.bloomfilter`, 'indexmap', G1, 'indexmap.tmp', 'stream-existence/streamExistenceFilter.chk',
        'stream-existence/streamExistenceFilter.dat', 'scavenging/scavenging.db', 'scavenging/chunk-summaries/chunk-3.json', `${G3}.tmp`],
      ['writer.chk', 'chunk-000002.000000', 'chaser.chk', 'chunk-000000.000001', 'epoch.chk', 'chunk-000000.000001.prealloc.tmp',
        'proposal.chk', 'truncate.chk', 'eventdb.lock', 'eventdb.node-id', 'chunk-000010.000000'],
    );
    expect(order.indexCheckpoints).toEqual(['stream-existence/streamExistenceFilter.chk']);
    expect(order.indexOthers).toEqual(['indexmap', G1, G2, `${G2}.bloomfilter`, 'scavenging/scavenging.db', 'stream-existence/streamExistenceFilter.dat']);
    expect(order.dbCheckpoints).toEqual(['chaser.chk', 'epoch.chk', 'proposal.chk', 'truncate.chk', 'writer.chk']);
    expect(order.chunks).toEqual(['chunk-000000.000001', 'chunk-000002.000000', 'chunk-000010.000000']);
  });

  it('leaves out the scavenge database while a scavenge has it open', () => {
    const order = simpleFullOrder(['indexmap', 'scavenging/scavenging.db', 'scavenging/scavenging.db-wal'], []);
    expect(order.indexOthers).toEqual(['indexmap']);
  });
});

describe('differential backup, index part', () => {
  it('step 1: only directories (or only the lock file) means no index files', () => {
    expect(indexHasFiles(['stream-existence/streamExistenceFilter.chk', 'eventdb.lock'])).toBe(false);
    expect(indexHasFiles(['indexmap'])).toBe(true);
  });

  it('steps 3, 4 and 6: lists tables and bloom filters, copies the new ones, deletes the ones gone from the source', () => {
    const indexFiles = listIndexFiles(['indexmap', G2, `${G2}.bloomfilter`, G3, `${G3}.bloomfilter`, `${G1}.tmp`, 'eventdb.lock']);
    expect(indexFiles).toEqual([G2, `${G2}.bloomfilter`, G3, `${G3}.bloomfilter`]);
    const backup = ['indexmap', G1, `${G1}.bloomfilter`, G2, `${G2}.bloomfilter`];
    expect(indexFilesToCopy(indexFiles, backup)).toEqual([G3, `${G3}.bloomfilter`]);
    expect(indexFilesToDelete(indexFiles, [...backup, G3, `${G3}.bloomfilter`])).toEqual([G1, `${G1}.bloomfilter`]);
  });

  it('step 5: loops until the backup indexmap equals the source one', () => {
    expect(indexMapCopyIsCurrent(Buffer.from('a'), Buffer.from('a'))).toBe(true);
    expect(indexMapCopyIsCurrent(Buffer.from('a'), Buffer.from('b'))).toBe(false);
    expect(indexMapCopyIsCurrent(Buffer.from('a'), undefined)).toBe(false);
    expect(indexMapCopyIsCurrent(undefined, Buffer.from('a'))).toBe(false);
  });
});

describe('differential backup, log part', () => {
  it('step 1 renames the last backup chunk; step 3 copies the missing ones; step 4 removes stale ones and the .old', () => {
    const backup = ['chaser.chk', 'chunk-000000.000000', 'chunk-000001.000000', 'chunk-000002.000000', 'writer.chk'];
    expect(lastBackupChunk(backup)).toBe('chunk-000002.000000');
    const afterRename = ['chaser.chk', 'chunk-000000.000000', 'chunk-000001.000000', 'chunk-000002.000000.old', 'writer.chk'];
    // A scavenge merged chunks 0-1 into chunk-000000.000001; chunk 2 grew and chunk 3 started.
    const chunkFiles = ['chunk-000000.000001', 'chunk-000002.000000', 'chunk-000003.000000'];
    expect(chunksToCopy(chunkFiles, afterRename)).toEqual(['chunk-000000.000001', 'chunk-000002.000000', 'chunk-000003.000000']);
    const afterCopy = [...afterRename, 'chunk-000000.000001', 'chunk-000002.000000', 'chunk-000003.000000'];
    expect(chunksToRemove(chunkFiles, afterCopy)).toEqual(['chunk-000000.000000', 'chunk-000001.000000', 'chunk-000002.000000.old']);
  });

  it('orders chunks by number, then version, not by name length', () => {
    expect(lastBackupChunk(['chunk-000009.000000', 'chunk-000010.000000', 'chunk-000002.000003'])).toBe('chunk-000010.000000');
    expect(lastBackupChunk(['writer.chk'])).toBeUndefined();
  });
});

describe('restore cut', () => {
  it('cuts the chunk holding the end position to header + data up to it', () => {
    expect(restoreCut(['chunk-000000.000001', 'chunk-000001.000000', 'chunk-000002.000000'], 1000 + 123, 1000, 128))
      .toEqual({ name: 'chunk-000001.000000', sizeBytes: 128 + 123 });
  });

  it('leaves a position on a chunk boundary, or with no chunk, alone', () => {
    expect(restoreCut(['chunk-000000.000000', 'chunk-000001.000000'], 1000, 1000, 128)).toBeUndefined();
    expect(restoreCut([], 10, 1000, 128)).toBeUndefined();
    expect(restoreCut(['chunk-000000.000000'], 0, 1000, 128)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import { MemoryBlockFile } from '../../platform/block-file.js';
import { Chunk } from '../chunk/chunk.js';
import { GroupChunkWriter } from './group-chunk-writer.js';

const CHUNK_SIZE = 256 * 1024 * 1024;

function bytes(n: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));
}

describe('GroupChunkWriter', () => {
  it('writes a verified chunk whose map holds logical offsets past 4 GiB, with or without given crcs', async () => {
    const file = new MemoryBlockFile('group.tmp');
    const writer = new GroupChunkWriter(file, CHUNK_SIZE, 3);
    const start = 3 * CHUNK_SIZE;
    const frames = [bytes(100, 1), bytes(5000, 2), bytes(7, 3)];
    const logical = [10, 2 ** 32 + 7, 2 ** 33 + 100];
    await writer.mark();
    frames.forEach((f, i) => writer.mapFrame(start + logical[i]!, f.length));
    writer.copy(frames[0]!, 0, 100);
    writer.copy(frames[1]!, 0, 5000, crc32(frames[1]!));
    writer.copy(frames[2]!, 0, 7);
    await writer.drain();
    await writer.finish(40, 2 ** 33 + 107);
    await writer.settle();
    const chunk = Chunk.open(file, true); // verifies the checksum and the size
    expect([chunk.header.chunkStartNumber, chunk.header.chunkEndNumber, chunk.header.isScavenged]).toEqual([3, 40, true]);
    expect(chunk.physicalDataSizeBytes).toBe(5107);
    expect(chunk.positionMapEntryCount).toBe(3);
    for (let i = 0; i < 3; i++) {
      expect(chunk.logicalOffsetOfMapEntry(i)).toBe(logical[i]);
      expect(chunk.physicalOffsetOfMapEntry(i)).toBe([0, 100, 5100][i]);
    }
    expect(chunk.readData(100, 5000).equals(frames[1]!)).toBe(true);
  });

  it('takes back what was added since the mark, also bytes already written', async () => {
    const file = new MemoryBlockFile('group.tmp');
    const writer = new GroupChunkWriter(file, CHUNK_SIZE, 0);
    const kept = bytes(1000, 9);
    await writer.mark();
    writer.mapFrame(0, 1000);
    writer.copy(kept, 0, 1000, crc32(kept));
    await writer.mark();
    const big = bytes(3 * 1024 * 1024, 4); // more than one write's worth
    writer.mapFrame(CHUNK_SIZE, big.length);
    writer.copy(big, 0, big.length);
    await writer.drain();
    await writer.rollback();
    expect(writer.dataSizeBytes).toBe(1000);
    await writer.finish(0, 1000);
    await writer.settle();
    const chunk = Chunk.open(file, true);
    expect(chunk.physicalDataSizeBytes).toBe(1000);
    expect(chunk.positionMapEntryCount).toBe(1);
    expect(chunk.readData(0, 1000).equals(kept)).toBe(true);
  });
});

import { afterAll, describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryBlockFile, NodeBlockFile, type BlockFile } from '../../platform/block-file.js';
import { openDirect } from '../../platform/direct-file.js';
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

  it('lists the logical offsets of a map of several pages', async () => {
    const writer = new GroupChunkWriter(new MemoryBlockFile('group.tmp'), CHUNK_SIZE, 1);
    const frame = bytes(16, 1);
    for (let i = 0; i < 140_000; i++) {
      writer.mapFrame(CHUNK_SIZE + i * 40 + (i % 3), 16);
      writer.copy(frame, 0, 16);
    }
    const offsets = writer.keptLogicalOffsets();
    expect(offsets.length).toBe(140_000);
    for (const i of [0, 65_535, 65_536, 139_999]) expect(offsets[i]).toBe(i * 40 + (i % 3));
    await writer.settle();
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

/**
 * Direct writes (O_DIRECT, real files): the file must come out byte for byte as the page-cache
 * path writes it, whatever the sizes (blocks of 4 KiB, a rest carried over, marks and rollbacks
 * at unaligned offsets, tiny files, a frame bigger than a buffer).
 */
describe('GroupChunkWriter with direct writes', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edb-group-direct-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  let n = 0;

  type Step = { frame: Buffer; logical: number } | 'mark' | 'rollback' | 'drain';

  async function write(direct: boolean, steps: readonly Step[], end: { chunkEndNumber: number; logicalDataSizeBytes: number }): Promise<string> {
    const file = path.join(dir, `copy-${n++}.tmp`);
    const blockFile: BlockFile = NodeBlockFile.create(file);
    const handle = direct ? openDirect(file) : undefined;
    // This machine's filesystem takes direct writes: if it did not, this test would prove nothing.
    if (direct) expect(handle).toBeDefined();
    const writer = new GroupChunkWriter(blockFile, CHUNK_SIZE, 2, undefined, handle);
    for (const step of steps) {
      if (step === 'mark') await writer.mark();
      else if (step === 'rollback') await writer.rollback();
      else if (step === 'drain') await writer.drain();
      else {
        writer.mapFrame(2 * CHUNK_SIZE + step.logical, step.frame.length);
        // Every other frame with its crc given, like the execution walk does for kept runs.
        writer.copy(step.frame, 0, step.frame.length, step.logical % 2 === 0 ? crc32(step.frame) : undefined);
      }
    }
    await writer.finish(end.chunkEndNumber, end.logicalDataSizeBytes);
    await writer.settle();
    await blockFile.close();
    return file;
  }

  /** Both ways; the files must verify and be identical but for the chunk id in the header. */
  async function sameBothWays(steps: readonly Step[], end: { chunkEndNumber: number; logicalDataSizeBytes: number }): Promise<Chunk> {
    const viaCache = fs.readFileSync(await write(false, steps, end));
    const directPath = await write(true, steps, end);
    const direct = fs.readFileSync(directPath);
    expect(direct.length).toBe(viaCache.length);
    expect(direct.subarray(128).equals(viaCache.subarray(128))).toBe(true);
    const chunk = Chunk.open(NodeBlockFile.openExisting(directPath, false), true); // verifies size and checksum
    expect(chunk.header.chunkStartNumber).toBe(2);
    return chunk;
  }

  it('writes whole blocks direct and the rest through the file, over many buffers', async () => {
    const steps: Step[] = [];
    let logical = 0;
    for (let i = 0; i < 700; i++) {
      const frame = bytes(1000 + ((i * 7919) % 9000), i); // sizes unaligned on purpose
      steps.push({ frame, logical });
      logical += frame.length + 64; // a gap: records removed between kept ones
      if (i % 10 === 9) steps.push('drain');
    }
    const chunk = await sameBothWays(steps, { chunkEndNumber: 2, logicalDataSizeBytes: logical });
    expect(chunk.positionMapEntryCount).toBe(700);
    const first = (steps[0] as { frame: Buffer }).frame;
    expect(chunk.readData(0, first.length).equals(first)).toBe(true);
  });

  it('rolls back to an unaligned mark after direct writes went past it', async () => {
    const steps: Step[] = ['mark', { frame: bytes(5555, 1), logical: 0 }, 'drain', 'mark'];
    for (let i = 0; i < 8; i++) steps.push({ frame: bytes(700_001, 10 + i), logical: 10_000 + i * 800_000 }, 'drain');
    steps.push('rollback', { frame: bytes(4321, 3), logical: 20_000_000 });
    const chunk = await sameBothWays(steps, { chunkEndNumber: 3, logicalDataSizeBytes: 20_004_321 });
    expect(chunk.physicalDataSizeBytes).toBe(5555 + 4321);
    expect(chunk.readData(5555, 4321).equals(bytes(4321, 3))).toBe(true);
  });

  it('keeps a position map of many pages, also when a rollback crosses a page boundary', async () => {
    const steps: Step[] = [];
    const tiny = (i: number): Buffer => bytes(20, i & 0xff);
    for (let i = 0; i < 60_000; i++) steps.push({ frame: tiny(i), logical: i * 30 });
    steps.push('drain', 'mark');
    for (let i = 60_000; i < 70_000; i++) steps.push({ frame: tiny(i), logical: i * 30 }); // into the map's second page
    steps.push('drain', 'rollback');
    for (let i = 60_000; i < 140_000; i++) steps.push({ frame: tiny(i), logical: i * 30 + 7 }); // third page
    const chunk = await sameBothWays(steps, { chunkEndNumber: 2, logicalDataSizeBytes: 140_000 * 30 });
    expect(chunk.positionMapEntryCount).toBe(140_000);
    for (const i of [0, 59_999, 60_000, 65_535, 65_536, 131_072, 139_999]) {
      expect(chunk.logicalOffsetOfMapEntry(i)).toBe(i < 60_000 ? i * 30 : i * 30 + 7);
      expect(chunk.physicalOffsetOfMapEntry(i)).toBe(i * 20);
    }
  });

  it('writes a file smaller than one block, and a frame bigger than a buffer', async () => {
    await sameBothWays([{ frame: bytes(10, 5), logical: 0 }], { chunkEndNumber: 2, logicalDataSizeBytes: 10 });
    const big = bytes(5 * 1024 * 1024 + 3, 6);
    const chunk = await sameBothWays([{ frame: bytes(99, 7), logical: 0 }, { frame: big, logical: 200 }, 'drain', { frame: bytes(17, 8), logical: 6_000_000 }],
      { chunkEndNumber: 2, logicalDataSizeBytes: 6_000_017 });
    expect(chunk.readData(99, big.length).equals(big)).toBe(true);
  });
});

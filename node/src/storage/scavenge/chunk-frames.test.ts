import { describe, expect, it } from 'vitest';
import { MemoryBlockFile } from '../../platform/block-file.js';
import { Chunk } from '../chunk/chunk.js';
import { PrepareFlags, encodePrepare } from '../format/record.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import { encodeChunkFooter, encodeChunkHeader } from '../format/chunk-header.js';
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { forEachFrame } from './chunk-frames.js';
import { MemoryChunkStorage } from '../chunk/chunk-storage.js';
import { rewriteChunkRange, type DiscardRules } from './execute.js';
import { GroupChunkWriter } from './group-chunk-writer.js';

const CHUNK_SIZE = 1 << 20;

/** A completed chunk 0 with `count` prepares of streams s-0, s-1, ... (two events each), built byte by byte. */
function completedChunk(count: number): { chunk: Chunk; file: MemoryBlockFile; positions: number[] } {
  const positions: number[] = [];
  const data = Buffer.alloc(count * 3000);
  let size = 0;
  for (let i = 0; i < count; i++) {
    positions.push(size);
    size += encodePrepare(data, size, {
      logPosition: size, flags: PrepareFlags.Data, transactionPosition: size, transactionOffset: 0, eventNumber: i % 2,
      eventId: '0f8fad5b-d9cb-469f-a165-70867728950e', timestampMs: 1000 + i, stream: `s-${Math.floor(i / 2)}`, eventType: 'T',
      data: Buffer.alloc(100 + (i % 7) * 300, 1), metadata: Buffer.alloc(0),
    });
  }
  const header = encodeChunkHeader({ chunkSizeBytes: CHUNK_SIZE, chunkStartNumber: 0, chunkEndNumber: 0, isScavenged: false, chunkId: randomUUID() });
  const footer = encodeChunkFooter({ isCompleted: true, physicalDataSizeBytes: size, logicalDataSizeBytes: size, mapCount: 0, dataCrc32: crc32(data.subarray(0, size)) });
  const file = new MemoryBlockFile('chunk-000000.000000', Buffer.concat([header, data.subarray(0, size), footer]));
  return { chunk: Chunk.open(file, true), file, positions };
}

const noRules: DiscardRules = { originals: new Map(), metas: new Map(), effectiveNowMs: 0 };

describe('forEachFrame', () => {
  it('visits every frame with its log position, in small blocks too', async () => {
    const { chunk, positions } = completedChunk(5000);
    const seen: number[] = [];
    let blocks = 0;
    await forEachFrame(chunk, (_b, _f, _s, logicalOffset) => { seen.push(chunk.startPosition + logicalOffset); }, async () => { blocks++; });
    expect(seen).toEqual(positions);
    expect(blocks).toBeGreaterThan(1);
  });

  it('walks a scavenged chunk through its position map', async () => {
    const { chunk, positions } = completedChunk(300);
    const storage = new MemoryChunkStorage();
    const rules: DiscardRules = { ...noRules, originals: new Map([['s-1', { stream: 's-1', isTombstoned: true, maxAgeSeconds: null, maxCount: null, truncateBefore: null, discardPoint: 0, maybeDiscardPoint: 0, lastEventNumber: 1, status: 'Active' as const }]]) };
    const groups = await rewriteChunkRange([chunk], storage, CHUNK_SIZE, rules, true);
    expect(groups.map((g) => g.members.map((m) => m.removed))).toEqual([[2]]);
    const scavenged = Chunk.open(storage.open(groups[0]!.tempName), true);
    const seen: number[] = [];
    await forEachFrame(scavenged, (_b, _f, _s, logicalOffset) => { seen.push(scavenged.startPosition + logicalOffset); }, async () => {});
    expect(seen).toEqual(positions.filter((_, i) => i !== 2 && i !== 3));
  });

  it('reports a flipped data byte as a corrupt chunk, after the visits, so callers keep nothing', async () => {
    const { chunk, file } = completedChunk(3000);
    // Flip a byte inside an event's data, far from any length field.
    const at = CHUNK_HEADER_SIZE_BYTES + 500_000;
    const byte = file.readSync(at, 1);
    file.writeSync(Buffer.from([byte[0]! ^ 0x10]), at);
    await expect(forEachFrame(chunk, () => {}, async () => {})).rejects.toMatchObject({ code: 'EDB_CHUNK_CORRUPT' });
    const copy = rewriteChunkRange([chunk], new MemoryChunkStorage(), CHUNK_SIZE, noRules, true);
    await expect(copy).rejects.toMatchObject({ code: 'EDB_CHUNK_CORRUPT' });
  });

  it('reports a damaged frame length as corrupt', async () => {
    const { chunk, file, positions } = completedChunk(10);
    file.writeSync(Buffer.from([0xff, 0xff, 0, 0]), CHUNK_HEADER_SIZE_BYTES + positions[4]!);
    await expect(forEachFrame(chunk, () => {}, async () => {})).rejects.toMatchObject({ code: 'EDB_CHUNK_CORRUPT' });
  });
});

describe('GroupChunkWriter over many frames', () => {
  it('writes data in runs and maps each frame, across its output buffer swaps', async () => {
    const file = new MemoryBlockFile('w.tmp');
    const writer = new GroupChunkWriter(file, 64 << 20, 0);
    const frame = Buffer.alloc(1000);
    let logical = 0;
    for (let i = 0; i < 20_000; i++) {
      encodePrepare(frame, 0, {
        logPosition: logical, flags: 0, transactionPosition: logical, transactionOffset: 0, eventNumber: i, eventId: '0f8fad5b-d9cb-469f-a165-70867728950e',
        timestampMs: 1, stream: 's', eventType: 'T', data: Buffer.alloc(1000 - 100, 2), metadata: Buffer.alloc(0),
      });
      const size = frame.readUInt32LE(0) + 12;
      writer.mapFrame(logical, size);
      writer.copy(frame, 0, size);
      logical += size + 500; // something removed after every frame
      if (i % 1000 === 0) await writer.drain();
    }
    await writer.finish(0, logical);
    await writer.settle();
    const chunk = Chunk.open(file, true);
    expect(chunk.positionMapEntryCount).toBe(20_000);
    expect(chunk.logicalOffsetOfMapEntry(19_999)).toBe(19_999 * (chunk.physicalOffsetOfMapEntry(1) + 500));
    let frames = 0;
    await forEachFrame(chunk, () => { frames++; }, async () => {});
    expect(frames).toBe(20_000);
  });
});

/**
 * The index stage's answer to "is there still a record at this log position?", for every entry
 * of the index: the position maps of the scavenged chunks are read once, in a few large reads,
 * into arrays of kept logical offsets with a bucket table per chunk, so a lookup is a short binary
 * search in memory. (Searching each map in its file, as readers do, read and decoded a map page
 * for nearly every entry: index entries come in hash order, so their positions jump around.)
 *
 * Memory: 4 bytes per kept record (8 for a merged chunk spanning more than 4 GiB) plus 4 bytes
 * per 64 KiB of logical span. Chunks past `budgetBytes` are not loaded: their entries are
 * answered by the registry's own lookup in the file, as before.
 */
import type { Chunk } from '../chunk/chunk.js';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import { POSMAP_ENTRY_BYTES } from '../chunk/position-map.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import { giveBackScratch, takeScratch } from '../chunk/scratch-buffers.js';

/** Logical bytes per bucket: a lookup searches only the kept offsets of one bucket. */
const BUCKET_SHIFT = 16;
const BUCKET_BYTES = 2 ** BUCKET_SHIFT;
/** Map entries decoded per read (1.5 MiB). */
const READ_ENTRIES = 128 * 1024;
/** Default cap on the memory of the loaded maps. */
export const KEPT_POSITIONS_BUDGET_BYTES = 64 * 1024 * 1024;

/** A copy of chunks chunkStartNumber..chunkEndNumber, durable or about to be, not yet swapped in. */
export interface PendingCopy {
  readonly chunkStartNumber: number;
  readonly chunkEndNumber: number;
  /** Logical offsets (from the start of chunkStartNumber) of the records it keeps, ascending. */
  readonly offsets: Float64Array;
}

interface LoadedMap {
  readonly startPosition: number;
  /** Logical offsets (from the chunk's start) of the kept records, ascending. */
  readonly offsets: Uint32Array | Float64Array;
  /** bucket b: index of the first offset >= b * BUCKET_BYTES; one extra bucket at the end. */
  readonly buckets: Uint32Array;
}

export class KeptPositions {
  /** By logical chunk number: the loaded map of the scavenged chunk covering it. */
  private readonly maps: Array<LoadedMap | undefined> = [];
  /** Scavenged chunks left unloaded (budget): answered through the registry. */
  private readonly unloaded = new Set<number>();
  readonly loadedBytes: number;

  private constructor(
    private readonly registry: ChunkRegistry, private readonly chunkSizeBytes: number, budgetBytes: number, pending: readonly PendingCopy[],
  ) {
    for (const p of pending) {
      const span = (p.chunkEndNumber - p.chunkStartNumber + 1) * chunkSizeBytes;
      const map = withBuckets(p.chunkStartNumber * chunkSizeBytes, span, p.offsets);
      for (let n = p.chunkStartNumber; n <= p.chunkEndNumber; n++) this.maps[n] = map;
    }
    let used = 0;
    const seen = new Set<Chunk>();
    for (const chunk of registry.allChunks()) {
      if (seen.has(chunk) || !chunk.header.isScavenged || !chunk.isCompleted) continue;
      seen.add(chunk);
      if (this.maps[chunk.header.chunkStartNumber] !== undefined) continue; // a pending copy replaces it
      const span = (chunk.header.chunkEndNumber - chunk.header.chunkStartNumber + 1) * chunkSizeBytes;
      const wide = span > 0xffffffff;
      const bytes = chunk.positionMapEntryCount * (wide ? 8 : 4) + (Math.ceil(span / BUCKET_BYTES) + 1) * 4;
      if (used + bytes > budgetBytes) {
        for (let n = chunk.header.chunkStartNumber; n <= chunk.header.chunkEndNumber; n++) this.unloaded.add(n);
        continue;
      }
      used += bytes;
      const map = loadMap(chunk, span, wide);
      for (let n = chunk.header.chunkStartNumber; n <= chunk.header.chunkEndNumber; n++) this.maps[n] = map;
    }
    this.loadedBytes = used;
  }

  /**
   * `pending`: copies written but not yet swapped in (the registry still has the chunks they
   * replace); their kept offsets are taken from memory and win over the registry's chunks.
   */
  static load(registry: ChunkRegistry, chunkSizeBytes: number, budgetBytes = KEPT_POSITIONS_BUDGET_BYTES, pending: readonly PendingCopy[] = []): KeptPositions {
    return new KeptPositions(registry, chunkSizeBytes, budgetBytes, pending);
  }

  /** False when `logPosition` is in a scavenged chunk that no longer holds a record there. */
  keeps(logPosition: number): boolean {
    const n = Math.floor(logPosition / this.chunkSizeBytes);
    const map = this.maps[n];
    if (map === undefined) return this.unloaded.has(n) ? !this.registry.isScavengedAway(logPosition) : true;
    const offset = logPosition - map.startPosition;
    const bucket = Math.floor(offset / BUCKET_BYTES);
    const buckets = map.buckets;
    if (bucket + 1 >= buckets.length) return false;
    const offsets = map.offsets;
    let lo = buckets[bucket]!;
    let hi = buckets[bucket + 1]!;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (offsets[mid]! < offset) lo = mid + 1; else hi = mid;
    }
    return lo < offsets.length && offsets[lo] === offset;
  }
}

function loadMap(chunk: Chunk, span: number, wide: boolean): LoadedMap {
  const count = chunk.positionMapEntryCount;
  const offsets = wide ? new Float64Array(count) : new Uint32Array(count);
  const mapStart = CHUNK_HEADER_SIZE_BYTES + chunk.physicalDataSizeBytes;
  const scratch = takeScratch(READ_ENTRIES * POSMAP_ENTRY_BYTES);
  try {
    for (let first = 0; first < count; first += READ_ENTRIES) {
      const n = Math.min(READ_ENTRIES, count - first);
      const len = n * POSMAP_ENTRY_BYTES;
      const read = chunk.file.readIntoSync(scratch, mapStart + first * POSMAP_ENTRY_BYTES, len);
      if (read !== len) throw new Error(`position map of ${chunk.file.path} is shorter than its footer says`);
      // Entry: u32 physical | i64 logical (little-endian); the logical offset is what is looked up.
      for (let i = 0, at = 4; i < n; i++, at += POSMAP_ENTRY_BYTES) {
        const low = (scratch[at]! | (scratch[at + 1]! << 8) | (scratch[at + 2]! << 16)) + scratch[at + 3]! * 0x1000000;
        const high = scratch[at + 4]! | (scratch[at + 5]! << 8) | (scratch[at + 6]! << 16) | (scratch[at + 7]! << 24);
        offsets[first + i] = high * 0x100000000 + low;
      }
    }
  } finally {
    giveBackScratch(scratch);
  }
  return withBuckets(chunk.startPosition, span, offsets);
}

function withBuckets(startPosition: number, span: number, offsets: Uint32Array | Float64Array): LoadedMap {
  const count = offsets.length;
  const bucketCount = Math.ceil(span / BUCKET_BYTES);
  const buckets = new Uint32Array(bucketCount + 1);
  let i = 0;
  for (let b = 0; b <= bucketCount; b++) {
    const from = b * BUCKET_BYTES;
    while (i < count && offsets[i]! < from) i++;
    buckets[b] = i;
  }
  return { startPosition, offsets, buckets };
}

/**
 * Writes a completed, scavenged chunk file from kept records: header (isScavenged), the records
 * back to back, the position map (physical offset -> logical offset of each kept record), and
 * the footer with the crc32 of data and map. Used by scavenge execution and merging.
 *
 * The file is written under a temp name and synced; the caller renames it into place.
 */
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { encodeChunkFooter, encodeChunkHeader } from '../format/chunk-header.js';
import { writeInt64 } from '../format/binary.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import type { BlockFile } from '../../platform/block-file.js';
import { FatalError } from '../../errors.js';

const POSMAP_ENTRY_BYTES = 12;
const FLUSH_BYTES = 4 * 1024 * 1024;

export class ScavengedChunkWriter {
  private physicalBytes = 0;
  private crc = 0;
  /** Kept frames are copied here (callers' buffers are reused) and written 4 MiB at a time. */
  private out = Buffer.allocUnsafe(FLUSH_BYTES);
  private outBytes = 0;
  private readonly map: number[] = [];

  constructor(
    private readonly file: BlockFile,
    private readonly chunkSizeBytes: number,
    private readonly chunkStartNumber: number,
    private readonly chunkEndNumber: number,
  ) {}

  async begin(): Promise<void> {
    await this.file.write(encodeChunkHeader({
      chunkSizeBytes: this.chunkSizeBytes, chunkStartNumber: this.chunkStartNumber, chunkEndNumber: this.chunkEndNumber,
      isScavenged: true, chunkId: randomUUID(),
    }), 0);
  }

  /** Adds a kept record frame (copied verbatim) whose log position is `logPosition`. */
  async add(frame: Buffer, logPosition: number): Promise<void> {
    const logicalOffset = logPosition - this.chunkStartNumber * this.chunkSizeBytes;
    this.map.push(this.physicalBytes, logicalOffset);
    if (this.outBytes + frame.length > this.out.length) await this.flushPending();
    if (frame.length > this.out.length) this.out = Buffer.allocUnsafe(frame.length);
    frame.copy(this.out, this.outBytes);
    this.outBytes += frame.length;
    this.physicalBytes += frame.length;
  }

  get dataSizeBytes(): number {
    return this.physicalBytes;
  }

  private async flushPending(): Promise<void> {
    if (this.outBytes === 0) return;
    const view = this.out.subarray(0, this.outBytes);
    this.crc = crc32(view, this.crc);
    await this.file.write(view, CHUNK_HEADER_SIZE_BYTES + this.physicalBytes - this.outBytes);
    this.outBytes = 0;
  }

  /** Writes map and footer and syncs. `logicalDataSizeBytes`: logical span of the data. */
  async finish(logicalDataSizeBytes: number): Promise<void> {
    await this.flushPending();
    const mapCount = this.map.length / 2;
    const map = Buffer.alloc(mapCount * POSMAP_ENTRY_BYTES);
    for (let i = 0; i < mapCount; i++) {
      map.writeUInt32LE(this.map[2 * i]!, i * POSMAP_ENTRY_BYTES);
      writeInt64(map, this.map[2 * i + 1]!, i * POSMAP_ENTRY_BYTES + 4);
    }
    this.crc = crc32(map, this.crc);
    await this.file.write(map, CHUNK_HEADER_SIZE_BYTES + this.physicalBytes);
    await this.file.write(encodeChunkFooter({
      isCompleted: true, physicalDataSizeBytes: this.physicalBytes, logicalDataSizeBytes, mapCount, dataCrc32: this.crc,
    }), CHUNK_HEADER_SIZE_BYTES + this.physicalBytes + map.length);
    try {
      await this.file.sync();
    } catch (err: unknown) {
      throw new FatalError('EDB_FSYNC_FAILED', `fsync of ${this.file.path} failed`, { cause: err });
    }
  }
}

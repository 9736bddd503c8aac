/**
 * Writes a completed, scavenged chunk file from kept records: header (isScavenged), the records
 * back to back, the position map (physical offset -> logical offset of each kept record), and
 * the footer with the crc32 of data and map. Used by scavenge execution and merging.
 *
 * Callers hand over whole frames: `mapFrame` for each kept frame (its map entry), and `copy` for
 * its bytes, which may cover a run of several frames at once. Copying is synchronous into an
 * output buffer; `drain` (between source blocks) writes the buffer once 2 MiB have gathered,
 * while the caller fills a second buffer. `finish` writes map and footer and syncs (fdatasyncs
 * started earlier, in the background, made writes wait on the journal here and were slower).
 * The file is written under a temp name; the caller renames it into place only after `finish`.
 */
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { encodeChunkFooter, encodeChunkHeader } from '../format/chunk-header.js';
import { writeInt64 } from '../format/binary.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import type { BlockFile } from '../../platform/block-file.js';
import { FatalError, assert } from '../../errors.js';
import { giveBackScratch, takeScratch } from './scratch-buffers.js';

const POSMAP_ENTRY_BYTES = 12;
const FLUSH_BYTES = 2 * 1024 * 1024;
/** Room past FLUSH_BYTES so that one source block (1 MiB) can be copied before a drain. */
const OUT_BUFFER_BYTES = FLUSH_BYTES + 1024 * 1024;

export class ScavengedChunkWriter {
  /** Data bytes handed to `copy` so far. */
  private physicalBytes = 0;
  /** Data bytes covered by map entries so far (must equal physicalBytes at finish). */
  private mappedBytes = 0;
  /** Data bytes whose write has been started. */
  private writtenBytes = 0;
  private crc = 0;
  private out = takeScratch(OUT_BUFFER_BYTES);
  private spare = takeScratch(OUT_BUFFER_BYTES);
  private outBytes = 0;
  private inFlight: Promise<void> | undefined;
  private map = Buffer.allocUnsafe(64 * 1024);
  private mapCount = 0;

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

  /** Records the map entry of the next kept frame: `frameSizeBytes` long, at `logPosition`. */
  mapFrame(logPosition: number, frameSizeBytes: number): void {
    if ((this.mapCount + 1) * POSMAP_ENTRY_BYTES > this.map.length) {
      const bigger = Buffer.allocUnsafe(this.map.length * 2);
      this.map.copy(bigger, 0, 0, this.mapCount * POSMAP_ENTRY_BYTES);
      this.map = bigger;
    }
    const at = this.mapCount * POSMAP_ENTRY_BYTES;
    this.map.writeUInt32LE(this.mappedBytes, at);
    writeInt64(this.map, logPosition - this.chunkStartNumber * this.chunkSizeBytes, at + 4);
    this.mapCount++;
    this.mappedBytes += frameSizeBytes;
  }

  /** Copies `src[start, end)`: whole frames already announced with `mapFrame`. */
  copy(src: Buffer, start: number, end: number): void {
    const len = end - start;
    if (len <= 0) return;
    if (this.outBytes + len > this.out.length) {
      const bigger = Buffer.allocUnsafe(this.outBytes + len);
      this.out.copy(bigger, 0, 0, this.outBytes);
      this.out = bigger;
    }
    src.copy(this.out, this.outBytes, start, end);
    this.outBytes += len;
    this.physicalBytes += len;
  }

  /** Kept frame bytes (copy + one frame = the convenience of the old per-frame API). */
  add(frame: Buffer, logPosition: number): void {
    this.mapFrame(logPosition, frame.length);
    this.copy(frame, 0, frame.length);
  }

  get dataSizeBytes(): number {
    return this.physicalBytes;
  }

  /** Writes the buffered data once enough has gathered. Call between source blocks. */
  async drain(): Promise<void> {
    if (this.outBytes >= FLUSH_BYTES) await this.startWrite();
  }

  /** Starts writing the buffered data (waiting for the previous write first), then swaps buffers. */
  private async startWrite(): Promise<void> {
    if (this.outBytes === 0) return;
    await this.inFlight;
    const view = this.out.subarray(0, this.outBytes);
    this.crc = crc32(view, this.crc);
    const position = CHUNK_HEADER_SIZE_BYTES + this.writtenBytes;
    this.writtenBytes += this.outBytes;
    const write = this.file.write(view, position);
    write.catch(() => {}); // awaited by the next startWrite or finish; never an unhandled rejection
    this.inFlight = write;
    // The other buffer is free: its write was awaited above.
    const next = this.spare.length >= OUT_BUFFER_BYTES ? this.spare : takeScratch(OUT_BUFFER_BYTES);
    this.spare = this.out;
    this.out = next;
    this.outBytes = 0;
  }

  /** Writes map and footer and syncs. `logicalDataSizeBytes`: logical span of the data. */
  async finish(logicalDataSizeBytes: number): Promise<void> {
    assert(this.mappedBytes === this.physicalBytes, `scavenged chunk map covers ${this.mappedBytes} of ${this.physicalBytes} data bytes`);
    await this.startWrite();
    await this.inFlight;
    const map = this.map.subarray(0, this.mapCount * POSMAP_ENTRY_BYTES);
    this.crc = crc32(map, this.crc);
    await this.file.write(map, CHUNK_HEADER_SIZE_BYTES + this.physicalBytes);
    await this.file.write(encodeChunkFooter({
      isCompleted: true, physicalDataSizeBytes: this.physicalBytes, logicalDataSizeBytes, mapCount: this.mapCount, dataCrc32: this.crc,
    }), CHUNK_HEADER_SIZE_BYTES + this.physicalBytes + map.length);
    try {
      await this.file.sync();
    } catch (err: unknown) {
      throw new FatalError('EDB_FSYNC_FAILED', `fsync of ${this.file.path} failed`, { cause: err });
    }
  }

  /**
   * Waits for a write in flight and hands the buffers back. Call once, after `finish` or after a
   * failure or a stop, before the temp file is closed; the writer is unusable afterwards.
   */
  async settle(): Promise<void> {
    await this.inFlight?.catch(() => {});
    for (const buf of [this.out, this.spare]) if (buf.length === OUT_BUFFER_BYTES) giveBackScratch(buf);
    this.out = this.spare = Buffer.alloc(0);
  }
}

/**
 * Writes one scavenged chunk file: the kept records of one source chunk (worker threads), of one
 * or more neighbouring source chunks (single-thread execution merges while it rewrites: see
 * execute.ts), or every record of a run of small chunks (the merge stage). Layout: header with
 * isScavenged, records, position map (physical offset -> logical offset of each record), footer
 * with the crc32 of data and map. The range a file covers may be known only at the end, so the
 * header is written by `finish`; and the data of the source chunk being added can be taken back
 * (`mark` before a source chunk, `rollback` to it) when it turns out not to fit.
 *
 * Callers hand over whole frames: `mapFrame` for each frame (its map entry), and `copy` for its
 * bytes, which may cover a run of several frames at once. Copying is synchronous into a 2 MiB
 * output buffer; `drain`, between source blocks, starts a write once enough has gathered, while
 * the caller fills another buffer. The crc32 of the data is folded from the crcs of copied runs
 * when the caller has them (`copy`'s `rangeCrc32`), and otherwise taken of the buffered bytes
 * before they are written. The file is written under a temp name; the caller renames it into
 * place only after `finish` (written and fsynced).
 *
 * With a direct handle on the file (platform/direct-file.ts) the buffers hold the file's bytes
 * from an aligned offset: the first starts at offset 0 with the header's place left zero, each
 * write takes the aligned part, and what is left (less than one block) moves to the front of
 * the next buffer. The last of it, the map, the footer and the header go through the file's
 * ordinary descriptor at `finish`.
 */
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { encodeChunkFooter, encodeChunkHeader } from '../format/chunk-header.js';
import { CHUNK_FOOTER_SIZE_BYTES, CHUNK_HEADER_SIZE_BYTES } from '../limits.js';
import type { BlockFile } from '../../platform/block-file.js';
import { FatalError, assert } from '../../errors.js';
import { giveBackScratch, takeScratch } from '../chunk/scratch-buffers.js';
import { POSMAP_ENTRY_BYTES } from '../chunk/position-map.js';
import { crc32Combine } from './crc32-combine.js';
import { DIRECT_IO_ALIGNMENT_BYTES, alignUp, giveBackAligned, takeAligned, type DirectFile } from '../../platform/direct-file.js';

const FLUSH_BYTES = 2 * 1024 * 1024;
/** Position map entries per page (a power of two): 768 KiB pages. */
const MAP_PAGE_SHIFT = 16;
const MAP_PAGE_ENTRIES = 1 << MAP_PAGE_SHIFT;
/** Room past FLUSH_BYTES so that one source block (1 MiB) can be copied before a drain. */
const OUT_BUFFER_BYTES = FLUSH_BYTES + 1024 * 1024;
/**
 * Writes under way at once by default (each with its own buffer; one more buffer is being
 * filled). Worker threads pass 1: they run several writers at once, and each buffer is 3 MiB.
 */
const WRITES_IN_FLIGHT_MAX = 2;

interface Mark { physicalBytes: number; mappedBytes: number; mapCount: number; crc: number; bufferStart: number; rest: Buffer }

export class GroupChunkWriter {
  /** Data bytes handed to `copy` so far. */
  private physicalBytes = 0;
  /** Data bytes covered by map entries so far (must equal physicalBytes at finish). */
  private mappedBytes = 0;
  private crc = 0;
  private out: Buffer;
  /** Output buffers not in use. */
  private readonly free: Buffer[] = [];
  /** Writes started and not yet awaited, oldest first, with their buffers. */
  private readonly writing: Array<{ done: Promise<void>; buf: Buffer }> = [];
  private outBytes = 0;
  /** Bytes at the start of `out` already taken into `crc` (or not data: the header's place). */
  private crcBytes = 0;
  /** File offset of `out[0]`. */
  private bufferStart: number;
  /**
   * The position map, in pages of MAP_PAGE_ENTRIES entries: it grows without copying, and holds
   * no more memory than it needs (a doubling buffer held up to three times the map at once,
   * tens of MB for a chunk of small events).
   */
  private readonly mapPages: Buffer[] = [];
  private mapCount = 0;
  private marked: Mark | undefined;
  /** Highest file offset written to, so stale bytes past the end are cut at finish. */
  private fileEnd = 0;
  /** Writes go out in multiples of this (direct writes: the alignment; else every byte). */
  private readonly writeUnitBytes: number;

  constructor(
    private readonly file: BlockFile,
    private readonly chunkSizeBytes: number,
    readonly chunkStartNumber: number,
    private readonly writesInFlightMax = WRITES_IN_FLIGHT_MAX,
    private direct?: DirectFile,
  ) {
    this.out = this.newBuffer(OUT_BUFFER_BYTES);
    if (direct) {
      this.writeUnitBytes = DIRECT_IO_ALIGNMENT_BYTES;
      this.bufferStart = 0;
      this.out.fill(0, 0, CHUNK_HEADER_SIZE_BYTES); // the header's place (written at finish)
      this.outBytes = CHUNK_HEADER_SIZE_BYTES;
      this.crcBytes = CHUNK_HEADER_SIZE_BYTES;
      this.fileEnd = DIRECT_IO_ALIGNMENT_BYTES; // openDirect's check wrote the first block
    } else {
      this.writeUnitBytes = 1;
      this.bufferStart = CHUNK_HEADER_SIZE_BYTES;
    }
  }

  private newBuffer(sizeBytes: number): Buffer {
    if (!this.direct) return sizeBytes === OUT_BUFFER_BYTES ? takeScratch(sizeBytes) : Buffer.allocUnsafe(sizeBytes);
    return takeAligned(alignUp(sizeBytes));
  }

  private giveBack(buf: Buffer): void {
    if (buf.length !== OUT_BUFFER_BYTES) return;
    if (this.direct) giveBackAligned(buf);
    else giveBackScratch(buf);
  }

  get dataSizeBytes(): number {
    return this.physicalBytes;
  }

  /** Records the map entry of the next kept frame: `frameSizeBytes` long, at `logPosition`. */
  mapFrame(logPosition: number, frameSizeBytes: number): void {
    const page = this.mapCount >>> MAP_PAGE_SHIFT;
    if (page === this.mapPages.length) this.mapPages.push(Buffer.allocUnsafe(MAP_PAGE_ENTRIES * POSMAP_ENTRY_BYTES));
    // u32 physical | i64 logical, little-endian, stored byte by byte (Buffer's write helpers
    // validate every call; this runs once per kept record). Both values are >= 0 here.
    const m = this.mapPages[page]!;
    const at = (this.mapCount & (MAP_PAGE_ENTRIES - 1)) * POSMAP_ENTRY_BYTES;
    const physical = this.mappedBytes;
    const logical = logPosition - this.chunkStartNumber * this.chunkSizeBytes;
    const low = logical % 0x100000000;
    const high = (logical - low) / 0x100000000;
    m[at] = physical; m[at + 1] = physical >>> 8; m[at + 2] = physical >>> 16; m[at + 3] = physical >>> 24;
    m[at + 4] = low; m[at + 5] = low >>> 8; m[at + 6] = low >>> 16; m[at + 7] = low >>> 24;
    m[at + 8] = high; m[at + 9] = high >>> 8; m[at + 10] = high >>> 16; m[at + 11] = high >>> 24;
    this.mapCount++;
    this.mappedBytes += frameSizeBytes;
  }

  /**
   * Copies `src[start, end)`: whole frames already announced with `mapFrame`. `rangeCrc32`, when
   * the caller has it, is the crc32 of those bytes: it is folded in without reading them again.
   */
  copy(src: Buffer, start: number, end: number, rangeCrc32?: number): void {
    const len = end - start;
    if (len <= 0) return;
    if (this.outBytes + len > this.out.length) {
      const bigger = this.newBuffer(this.outBytes + len);
      this.out.copy(bigger, 0, 0, this.outBytes);
      this.out = bigger;
    }
    if (rangeCrc32 !== undefined) this.foldPendingCrc();
    src.copy(this.out, this.outBytes, start, end);
    this.outBytes += len;
    this.physicalBytes += len;
    if (rangeCrc32 !== undefined) {
      this.crc = crc32Combine(this.crc, rangeCrc32, len);
      this.crcBytes = this.outBytes;
    }
  }

  /** Takes the buffered bytes not yet in the running crc into it. */
  private foldPendingCrc(): void {
    if (this.crcBytes < this.outBytes) this.crc = crc32(this.out.subarray(this.crcBytes, this.outBytes), this.crc);
    this.crcBytes = this.outBytes;
  }

  /** Writes the buffered data once enough has gathered. Call between source blocks. */
  async drain(): Promise<void> {
    if (this.outBytes >= FLUSH_BYTES) await this.startWrite();
  }

  /**
   * Logical offsets (from the start of chunk `chunkStartNumber`) of the records mapped so far,
   * ascending: what the index stage needs of a copy not yet swapped in.
   */
  keptLogicalOffsets(): Float64Array {
    const offsets = new Float64Array(this.mapCount);
    let i = 0;
    for (const m of this.mapUsed()) {
      for (let at = 4; at < m.length; i++, at += POSMAP_ENTRY_BYTES) {
        const low = (m[at]! | (m[at + 1]! << 8) | (m[at + 2]! << 16)) + m[at + 3]! * 0x1000000;
        const high = m[at + 4]! | (m[at + 5]! << 8) | (m[at + 6]! << 16) | (m[at + 7]! << 24);
        offsets[i] = high * 0x100000000 + low;
      }
    }
    return offsets;
  }

  /** The map's bytes so far, page by page. */
  private mapUsed(): Buffer[] {
    const pages: Buffer[] = [];
    let left = this.mapCount;
    for (const page of this.mapPages) {
      if (left <= 0) break;
      const n = Math.min(left, MAP_PAGE_ENTRIES);
      pages.push(page.subarray(0, n * POSMAP_ENTRY_BYTES));
      left -= n;
    }
    return pages;
  }

  /** Remembers where the next source chunk's data starts (see `rollback`). */
  async mark(): Promise<void> {
    await this.startWrite();
    this.foldPendingCrc();
    this.marked = {
      physicalBytes: this.physicalBytes, mappedBytes: this.mappedBytes, mapCount: this.mapCount, crc: this.crc,
      bufferStart: this.bufferStart, rest: Buffer.from(this.out.subarray(0, this.outBytes)),
    };
  }

  /** Takes back everything added since `mark`; bytes already written there are overwritten or cut. */
  async rollback(): Promise<void> {
    const m = this.marked;
    assert(m !== undefined, 'rollback after mark');
    await this.awaitWrites(0).catch(() => {});
    this.physicalBytes = m.physicalBytes;
    this.mappedBytes = m.mappedBytes;
    this.mapCount = m.mapCount;
    this.crc = m.crc;
    this.bufferStart = m.bufferStart;
    m.rest.copy(this.out, 0);
    this.outBytes = m.rest.length;
    this.crcBytes = this.outBytes;
  }

  /**
   * Starts writing the buffered data (first waiting for the oldest write when
   * `writesInFlightMax` are under way) and goes on in a free buffer. With direct writes only
   * whole blocks go; the rest moves to the front of the next buffer.
   */
  private async startWrite(): Promise<void> {
    const writeBytes = this.outBytes - (this.outBytes % this.writeUnitBytes);
    if (writeBytes === 0) return;
    await this.awaitWrites(this.writesInFlightMax - 1);
    this.foldPendingCrc();
    const view = this.out.subarray(0, writeBytes);
    const position = this.bufferStart;
    const next = this.free.pop() ?? this.newBuffer(OUT_BUFFER_BYTES);
    const rest = this.outBytes - writeBytes;
    if (rest > 0) this.out.copy(next, 0, writeBytes, this.outBytes);
    this.bufferStart += writeBytes;
    this.fileEnd = Math.max(this.fileEnd, position + writeBytes);
    const done = this.direct ? this.direct.write(view, position) : this.file.write(view, position);
    done.catch(() => {}); // awaited by awaitWrites (next writes, finish, settle); never an unhandled rejection
    this.writing.push({ done, buf: this.out });
    this.out = next;
    this.outBytes = rest;
    this.crcBytes = rest;
  }

  /** Waits for the oldest writes until at most `left` are under way; their buffers become free. */
  private async awaitWrites(left: number): Promise<void> {
    while (this.writing.length > left) {
      const oldest = this.writing.shift()!;
      try {
        await oldest.done;
      } finally {
        // A bigger one-off buffer (a frame larger than a buffer) is let go.
        if (oldest.buf.length === OUT_BUFFER_BYTES) this.free.push(oldest.buf);
      }
    }
  }

  /**
   * Writes map, footer and header (covering chunks chunkStartNumber..`chunkEndNumber`) and
   * syncs. `logicalDataSizeBytes`: logical span of the data from the start of the first chunk.
   */
  async finish(chunkEndNumber: number, logicalDataSizeBytes: number): Promise<void> {
    assert(this.mappedBytes === this.physicalBytes, `scavenged chunk map covers ${this.mappedBytes} of ${this.physicalBytes} data bytes`);
    await this.startWrite();
    await this.awaitWrites(0);
    if (this.outBytes > 0) {
      // Direct writes: the last part of a block (with the header's place when that is all).
      this.foldPendingCrc();
      await this.file.write(this.out.subarray(0, this.outBytes), this.bufferStart);
    }
    const mapOffset = CHUNK_HEADER_SIZE_BYTES + this.physicalBytes;
    assert(mapOffset === this.bufferStart + this.outBytes, `scavenged chunk data ends at ${this.bufferStart + this.outBytes}, map at ${mapOffset}`);
    let mapBytes = 0;
    for (const page of this.mapUsed()) {
      this.crc = crc32(page, this.crc);
      await this.file.write(page, mapOffset + mapBytes);
      mapBytes += page.length;
    }
    await this.file.write(encodeChunkFooter({
      isCompleted: true, physicalDataSizeBytes: this.physicalBytes, logicalDataSizeBytes, mapCount: this.mapCount, dataCrc32: this.crc,
    }), mapOffset + mapBytes);
    await this.file.write(encodeChunkHeader({
      chunkSizeBytes: this.chunkSizeBytes, chunkStartNumber: this.chunkStartNumber, chunkEndNumber, isScavenged: true, chunkId: randomUUID(),
    }), 0);
    const end = mapOffset + mapBytes + CHUNK_FOOTER_SIZE_BYTES;
    if (this.fileEnd > end) await this.file.truncate(end); // data of a source chunk taken back
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
    while (this.writing.length > 0) await this.awaitWrites(0).catch(() => {});
    for (const buf of [this.out, ...this.free]) this.giveBack(buf);
    this.free.length = 0;
    this.out = Buffer.alloc(0);
    const direct = this.direct;
    this.direct = undefined;
    await direct?.close();
  }
}

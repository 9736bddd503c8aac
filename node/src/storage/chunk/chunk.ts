/**
 * One chunk of the transaction log: a file covering the logical range
 * [chunkStartNumber * chunkSize, (chunkEndNumber + 1) * chunkSize).
 *
 * Invariants:
 * - The header is written and synced before any data.
 * - Records never straddle chunks; a record is read whole or reported torn.
 * - A completed chunk is immutable; its footer carries the data checksum, verified on open.
 * - A scavenged chunk may have fewer physical bytes than its logical span: a position map
 *   translates logical offsets (of the kept records) to physical ones.
 */
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { CHUNK_FOOTER_SIZE_BYTES, CHUNK_HEADER_SIZE_BYTES, RECORD_FRAME_OVERHEAD_BYTES } from '../limits.js';
import {
  decodeChunkFooter, decodeChunkHeader, encodeChunkFooter, encodeChunkHeader, type ChunkFooter, type ChunkHeader,
} from '../format/chunk-header.js';
import { decodeFrame, sealFrames, type FrameResult } from '../format/record.js';
import type { LogWriterThread } from '../writer/log-writer-thread.js';
import type { CheckpointHandover } from '../checkpoint/checkpoint.js';
import { FatalError } from '../../errors.js';
import type { BlockFile } from '../../platform/block-file.js';
import { giveBackScratch, takeScratch } from './scratch-buffers.js';
import { POSMAP_ENTRY_BYTES, PositionMap } from './position-map.js';

let nextCrcToken = 0;

/** Bytes read ahead when fetching one record; most records fit in one read. */
const READ_AHEAD_BYTES = 4096;
/** Bytes read per step when verifying a whole chunk's checksum. */
const VERIFY_STEP_BYTES = 8 * 1024 * 1024;

export class Chunk {
  readonly header: ChunkHeader;
  readonly file: BlockFile;
  private footer: ChunkFooter | undefined;
  /** Physical bytes of record data written (active chunk) or sealed (completed chunk). */
  private dataSizeBytes: number;
  /** For scavenged chunks: the position map (searched in the file). */
  private posMap: PositionMap | undefined;
  /** crc32 of the data written so far (active chunk); undefined until computed after an open. */
  private runningCrc: number | undefined;
  /** Names this chunk's running checksum to the log writer thread. */
  private readonly crcToken = nextCrcToken++;
  /** The log writer thread has been given this chunk's starting checksum. */
  private threadStarted = false;

  private constructor(file: BlockFile, header: ChunkHeader, footer: ChunkFooter | undefined, dataSizeBytes: number) {
    this.file = file;
    this.header = header;
    this.footer = footer;
    this.dataSizeBytes = dataSizeBytes;
  }

  get startPosition(): number {
    return this.header.chunkStartNumber * this.header.chunkSizeBytes;
  }

  get endPosition(): number {
    return (this.header.chunkEndNumber + 1) * this.header.chunkSizeBytes;
  }

  get isCompleted(): boolean {
    return this.footer?.isCompleted ?? false;
  }

  get physicalDataSizeBytes(): number {
    return this.dataSizeBytes;
  }

  /** Logical end of the data (completed chunks) or of the written data (active chunk). */
  get logicalDataEndPosition(): number {
    return this.startPosition + (this.footer ? this.footer.logicalDataSizeBytes : this.dataSizeBytes);
  }

  /** Creates a new active chunk file: header written and synced. */
  static async create(file: BlockFile, chunkNumber: number, chunkSizeBytes: number): Promise<Chunk> {
    const header: ChunkHeader = {
      chunkSizeBytes, chunkStartNumber: chunkNumber, chunkEndNumber: chunkNumber, isScavenged: false, chunkId: randomUUID(),
    };
    await file.write(encodeChunkHeader(header), 0);
    await syncOrDie(file);
    const chunk = new Chunk(file, header, undefined, 0);
    chunk.runningCrc = 0;
    return chunk;
  }

  /**
   * Opens an existing chunk file. Completed chunks are verified against their footer checksum;
   * for the active chunk the caller passes how much data is known durable (from writer.chk).
   */
  static open(file: BlockFile, verify: boolean): Chunk {
    const size = file.sizeBytes();
    if (size < CHUNK_HEADER_SIZE_BYTES) throw corrupt(file, 'file is shorter than a chunk header');
    let header: ChunkHeader;
    try {
      header = decodeChunkHeader(file.readSync(0, CHUNK_HEADER_SIZE_BYTES));
    } catch (err: unknown) {
      throw corrupt(file, (err as Error).message);
    }
    const footer = Chunk.tryReadFooter(file, size);
    if (!footer) return new Chunk(file, header, undefined, size - CHUNK_HEADER_SIZE_BYTES);
    const chunk = new Chunk(file, header, footer, footer.physicalDataSizeBytes);
    const expectedSize = CHUNK_HEADER_SIZE_BYTES + footer.physicalDataSizeBytes + footer.mapCount * POSMAP_ENTRY_BYTES + CHUNK_FOOTER_SIZE_BYTES;
    if (expectedSize !== size) throw corrupt(file, `size ${size} does not match its footer (${expectedSize})`);
    if (verify) chunk.verifyChecksum();
    if (footer.mapCount > 0) chunk.loadPosMap();
    return chunk;
  }

  private static tryReadFooter(file: BlockFile, size: number): ChunkFooter | undefined {
    if (size < CHUNK_HEADER_SIZE_BYTES + CHUNK_FOOTER_SIZE_BYTES) return undefined;
    try {
      const footer = decodeChunkFooter(file.readSync(size - CHUNK_FOOTER_SIZE_BYTES, CHUNK_FOOTER_SIZE_BYTES));
      return footer.isCompleted ? footer : undefined;
    } catch {
      return undefined; // An active chunk ends in record data, not a footer.
    }
  }

  /** Reads all data and map bytes and compares with the footer's crc32. */
  verifyChecksum(): void {
    const footer = this.footer;
    if (!footer) return;
    const total = footer.physicalDataSizeBytes + footer.mapCount * POSMAP_ENTRY_BYTES;
    let crc = 0;
    // One reused buffer: a fresh 8 MiB buffer per step left glibc holding the freed memory.
    const buf = takeScratch(VERIFY_STEP_BYTES);
    try {
      for (let done = 0; done < total; done += VERIFY_STEP_BYTES) {
        const len = Math.min(VERIFY_STEP_BYTES, total - done);
        const n = this.file.readIntoSync(buf, CHUNK_HEADER_SIZE_BYTES + done, len);
        if (n !== len) throw corrupt(this.file, 'data is shorter than the footer says');
        crc = crc32(buf.subarray(0, n), crc);
      }
    } finally {
      giveBackScratch(buf);
    }
    if (crc !== footer.dataCrc32) throw corrupt(this.file, 'data checksum does not match the footer');
  }

  private loadPosMap(): void {
    const footer = this.footer!;
    this.posMap = new PositionMap(this.file, CHUNK_HEADER_SIZE_BYTES + footer.physicalDataSizeBytes, footer.mapCount);
  }

  /** Physical data offset of a logical offset, or -1 when no record starts there (scavenged away). */
  physicalOffsetOf(logicalOffset: number): number {
    const map = this.posMap;
    if (!map) return logicalOffset;
    const i = map.lowerBoundLogical(logicalOffset);
    return i < map.count && map.logicalAt(i) === logicalOffset ? map.physicalAt(i) : -1;
  }

  /** Physical offset of the first kept record at or after a logical offset (-1 past the end). */
  firstPhysicalAtOrAfterLogical(logicalOffset: number): number {
    const map = this.posMap;
    if (!map) return logicalOffset;
    const i = map.lowerBoundLogical(logicalOffset);
    return i < map.count ? map.physicalAt(i) : -1;
  }

  /** Logical offset of the record at a physical offset (inverse of physicalOffsetOf). */
  logicalOffsetOfPhysical(physicalOffset: number): number {
    const map = this.posMap;
    if (!map) return physicalOffset;
    const i = map.lowerBoundPhysical(physicalOffset);
    return i < map.count && map.physicalAt(i) === physicalOffset ? map.logicalAt(i) : -1;
  }

  /** Entries of the position map (0 for a chunk that was never scavenged). */
  get positionMapEntryCount(): number {
    return this.posMap?.count ?? 0;
  }

  /** Logical offset of the i-th position map entry (entries are in physical = logical order). */
  logicalOffsetOfMapEntry(i: number): number {
    return this.posMap!.logicalAt(i);
  }

  /** Physical offset of the i-th position map entry. */
  physicalOffsetOfMapEntry(i: number): number {
    return this.posMap!.physicalAt(i);
  }

  /**
   * For a completed chunk: whether `dataCrc32`, the crc32 of all record data as a scan read it,
   * continued over the position map, equals the footer's checksum. Lets a sequential scan verify
   * the whole chunk with one crc pass over the bytes it reads anyway.
   */
  checksumMatchesData(dataCrc32: number): boolean {
    const footer = this.footer;
    if (!footer) return false;
    let crc = dataCrc32;
    if (footer.mapCount > 0) {
      crc = crc32(this.file.readSync(CHUNK_HEADER_SIZE_BYTES + footer.physicalDataSizeBytes, footer.mapCount * POSMAP_ENTRY_BYTES), crc);
    }
    return crc === footer.dataCrc32;
  }

  /**
   * Reads the frame at a physical data offset, limited to `physicalLimit` bytes of data
   * (the writer checkpoint for the active chunk). `logPosition` is what the record must say.
   */
  readFrameAt(physicalOffset: number, physicalLimit: number, logPosition: number): FrameResult {
    if (physicalOffset + RECORD_FRAME_OVERHEAD_BYTES > physicalLimit) return { kind: 'end' };
    const fileOffset = CHUNK_HEADER_SIZE_BYTES + physicalOffset;
    let buf = this.file.readSync(fileOffset, Math.min(READ_AHEAD_BYTES, physicalLimit - physicalOffset));
    const length = buf.readUInt32LE(0);
    const needed = length + RECORD_FRAME_OVERHEAD_BYTES;
    if (length > 0 && needed > buf.length && physicalOffset + needed <= physicalLimit) {
      buf = this.file.readSync(fileOffset, needed);
    }
    return decodeFrame(buf, 0, buf.length, logPosition);
  }

  /** Reads raw bytes of record data (sequential scans read big blocks). */
  readData(physicalOffset: number, length: number): Buffer {
    return this.file.readSync(CHUNK_HEADER_SIZE_BYTES + physicalOffset, length);
  }

  /** Reads record data into `target` (a reused buffer); returns the view of what was read. */
  readDataInto(target: Buffer, physicalOffset: number, length: number): Buffer {
    const n = this.file.readIntoSync(target, CHUNK_HEADER_SIZE_BYTES + physicalOffset, Math.min(length, target.length));
    return target.subarray(0, n);
  }

  /**
   * Appends a batch of unsealed record frames (encoded with `seal` false) at the end of the data
   * (active chunk only) and returns the promise of their durability. The position is taken at
   * once, so the writer can append the next batch while this one is written and flushed.
   *
   * With a log writer thread, sealing, the running checksum, the write and the fdatasync happen
   * there, in order (`bytes` must come from its takeBuffer and moves to it), followed by the
   * write and fdatasync of `checkpoint` (the batch's writer.chk slot) when given. Without one, the
   * bytes are sealed, checksummed and in the page cache before this returns (the caller may
   * reuse them), and the fdatasync runs in libuv's pool.
   */
  appendDurably(bytes: Buffer, thread?: LogWriterThread, checkpoint?: CheckpointHandover): Promise<void> {
    if (this.isCompleted) return Promise.reject(new FatalError('EDB_INVARIANT', `append to completed chunk ${this.file.path}`));
    const position = CHUNK_HEADER_SIZE_BYTES + this.dataSizeBytes;
    const fd = this.file.fd;
    if (thread !== undefined && fd !== undefined) {
      const first = !this.threadStarted;
      this.threadStarted = true;
      const length = bytes.length;
      this.dataSizeBytes += length;
      return thread.write(bytes, {
        fd, position, crcToken: this.crcToken, ...(first ? { crcStart: this.runningCrc ?? null } : {}),
        ...(checkpoint ? { checkpoint: { fd: checkpoint.fd, position: checkpoint.position, bytes: checkpoint.bytes } } : {}),
      }).then(
        (crc) => {
          this.file.noteWritten(position, length);
          if (crc !== null) this.runningCrc = crc;
        },
        (err: unknown) => {
          const op = (err as { op?: string }).op;
          if (op === 'fdatasync') throw fsyncFailed(this.file, err);
          if (op === 'checkpoint') throw new FatalError('EDB_FSYNC_FAILED', `write or fsync of checkpoint ${checkpoint?.path} failed`, { cause: err });
          throw err;
        },
      );
    }
    try {
      sealFrames(bytes, 0, bytes.length);
      this.file.writeSync(bytes, position);
    } catch (err: unknown) {
      return Promise.reject(err);
    }
    this.dataSizeBytes += bytes.length;
    const synced = syncOrDie(this.file);
    if (this.runningCrc !== undefined) this.runningCrc = crc32(bytes, this.runningCrc);
    return synced;
  }

  /**
   * Takes the checksum of the data an active chunk already holds (start-up), so appends continue
   * it and completion needs no pass over the file.
   */
  primeChecksum(): void {
    if (!this.isCompleted && this.runningCrc === undefined) this.runningCrc = this.computeDataCrc();
  }

  /** Drops data past `physicalSize` (recovery: discard what writer.chk does not cover). */
  async truncateData(physicalSize: number): Promise<void> {
    await this.file.truncate(CHUNK_HEADER_SIZE_BYTES + physicalSize);
    await syncOrDie(this.file);
    this.dataSizeBytes = physicalSize;
    this.footer = undefined;
    this.runningCrc = this.computeDataCrc();
    this.threadStarted = false;
  }

  /** Seals the chunk: footer with the data checksum, synced. */
  async complete(): Promise<void> {
    const crc = this.runningCrc ?? this.computeDataCrc();
    const footer: ChunkFooter = {
      isCompleted: true, physicalDataSizeBytes: this.dataSizeBytes, logicalDataSizeBytes: this.dataSizeBytes, mapCount: 0, dataCrc32: crc,
    };
    const footerOffset = CHUNK_HEADER_SIZE_BYTES + this.dataSizeBytes;
    await this.file.write(encodeChunkFooter(footer), footerOffset);
    // A preallocated file is cut to its exact size, so the footer ends the file.
    if (this.file.sizeBytes() > footerOffset + CHUNK_FOOTER_SIZE_BYTES) await this.file.truncate(footerOffset + CHUNK_FOOTER_SIZE_BYTES);
    await syncOrDie(this.file);
    this.footer = footer;
  }

  /** Clean shutdown: cut the preallocated zeros after the data of the active chunk. */
  async trimPreallocation(): Promise<void> {
    if (this.isCompleted || this.file.sizeBytes() <= CHUNK_HEADER_SIZE_BYTES + this.dataSizeBytes) return;
    await this.file.truncate(CHUNK_HEADER_SIZE_BYTES + this.dataSizeBytes);
    await syncOrDie(this.file);
  }

  private computeDataCrc(): number {
    let crc = 0;
    const buf = takeScratch(VERIFY_STEP_BYTES);
    try {
      for (let done = 0; done < this.dataSizeBytes; done += VERIFY_STEP_BYTES) {
        crc = crc32(this.readDataInto(buf, done, Math.min(VERIFY_STEP_BYTES, this.dataSizeBytes - done)), crc);
      }
    } finally {
      giveBackScratch(buf);
    }
    return crc;
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

async function syncOrDie(file: BlockFile): Promise<void> {
  try {
    await file.sync();
  } catch (err: unknown) {
    throw fsyncFailed(file, err);
  }
}

/** A failed fsync of a chunk file (here or on the log writer thread): fatal, never retried. */
function fsyncFailed(file: BlockFile, cause: unknown): FatalError {
  return new FatalError('EDB_FSYNC_FAILED', `fsync of ${file.path} failed`, { cause });
}

function corrupt(file: BlockFile, reason: string): FatalError {
  return new FatalError('EDB_CHUNK_CORRUPT', `chunk file ${file.path} is corrupt: ${reason}`, { details: { file: file.path } });
}

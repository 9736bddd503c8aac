/**
 * A leader's reading of its own log for replication: which chunk holds a position, the durable
 * bytes of an unscavenged chunk (sent as they are: positions in such a chunk are file offsets),
 * and whole chunk files (a scavenged or merged chunk cannot be rebuilt from its records, so it
 * is sent as a file). Never past the durable position.
 */
import fs from 'node:fs';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import type { Chunk } from '../chunk/chunk.js';
import { wholeFramesLength } from '../format/record.js';
import { RECORD_FRAME_OVERHEAD_BYTES } from '../limits.js';

export interface ShippingChunk {
  readonly chunkStartNumber: number;
  readonly chunkEndNumber: number;
  readonly startPosition: number;
  /** Logical end of the chunk's range (the next chunk starts here). */
  readonly endPosition: number;
  readonly isCompleted: boolean;
  /** Scavenged or merged: only the whole file can be sent. */
  readonly wholeFileOnly: boolean;
  /** End of its data: the data end of a completed chunk, the durable end of the active one. */
  readonly dataEndPosition: number;
}

/** A chunk file held open for a whole-file transfer, unaffected by a later swap of that chunk. */
export interface ChunkFileSnapshot {
  readonly sizeBytes: number;
  read(offset: number, length: number): Buffer;
  close(): void;
}

export class LogSource {
  constructor(private readonly registry: ChunkRegistry, private readonly durablePosition: () => number) {}

  get durable(): number {
    return this.durablePosition();
  }

  chunkAt(position: number): ShippingChunk | undefined {
    const chunk = this.registry.chunkAt(position);
    if (chunk === undefined || chunk.startPosition > this.durablePosition()) return undefined;
    return describe(chunk, this.durablePosition());
  }

  /**
   * Up to `maxBytes` of durable log bytes from `position` in an unscavenged chunk, cut after the
   * last whole record (a replica checks every piece on its own: a record split between two pieces
   * would look torn). A record larger than `maxBytes` comes whole, alone.
   */
  readBytes(position: number, maxBytes: number): Buffer {
    const chunk = this.registry.chunkAt(position);
    if (chunk === undefined || chunk.header.isScavenged) return Buffer.alloc(0);
    const dataEnd = describe(chunk, this.durablePosition()).dataEndPosition;
    const end = Math.min(dataEnd, position + maxBytes);
    if (end <= position) return Buffer.alloc(0);
    const bytes = chunk.readData(position - chunk.startPosition, end - position);
    const whole = wholeFramesLength(bytes);
    if (whole > 0 || bytes.length < 4) return bytes.subarray(0, whole);
    const first = Math.min(bytes.readUInt32LE(0) + RECORD_FRAME_OVERHEAD_BYTES, dataEnd - position);
    return chunk.readData(position - chunk.startPosition, first);
  }

  /** Opens the file of the completed chunk at `position` for a whole-file transfer. */
  snapshotFile(position: number): ChunkFileSnapshot | undefined {
    const chunk = this.registry.chunkAt(position);
    if (chunk === undefined || !chunk.isCompleted) return undefined;
    const file = chunk.file;
    if (file.fd === undefined) {
      // In memory (--mem-db): a copy.
      const bytes = file.readSync(0, file.sizeBytes());
      return { sizeBytes: bytes.length, read: (offset, length) => bytes.subarray(offset, offset + length), close: () => undefined };
    }
    const fd = fs.openSync(file.path, 'r');
    const sizeBytes = fs.fstatSync(fd).size;
    return {
      sizeBytes,
      read(offset, length) {
        const buf = Buffer.allocUnsafe(Math.min(length, sizeBytes - offset));
        let done = 0;
        while (done < buf.length) {
          const n = fs.readSync(fd, buf, done, buf.length - done, offset + done);
          if (n === 0) break;
          done += n;
        }
        return buf.subarray(0, done);
      },
      close: () => fs.closeSync(fd),
    };
  }
}

function describe(chunk: Chunk, durable: number): ShippingChunk {
  const merged = chunk.header.chunkEndNumber > chunk.header.chunkStartNumber;
  return {
    chunkStartNumber: chunk.header.chunkStartNumber,
    chunkEndNumber: chunk.header.chunkEndNumber,
    startPosition: chunk.startPosition,
    endPosition: chunk.endPosition,
    isCompleted: chunk.isCompleted,
    wholeFileOnly: chunk.header.isScavenged || merged,
    dataEndPosition: chunk.isCompleted
      ? chunk.logicalDataEndPosition
      : Math.min(durable, chunk.startPosition + chunk.physicalDataSizeBytes),
  };
}


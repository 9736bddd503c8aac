/**
 * Walking the log by position: one record at a time (for $all pages), forward and backward,
 * and in large sequential blocks (for index catch-up on start). Positions below the writer
 * checkpoint are durable; a record that does not decode there means corruption: fatal.
 */
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import type { Chunk } from '../chunk/chunk.js';
import { decodeFrameIndexFields, type IndexFields, type LogRecord } from '../format/record.js';
import { FatalError } from '../../errors.js';
import { RECORD_FRAME_OVERHEAD_BYTES } from '../limits.js';

export interface PositionedRecord {
  readonly record: LogRecord;
  /** Logical position just past this record. */
  readonly nextPosition: number;
}

export class LogReader {
  constructor(private readonly registry: ChunkRegistry, private readonly writerPosition: () => number) {}

  /** The record at or after `position` (skipping chunk tails), or undefined at the end of the log. */
  readForward(position: number): PositionedRecord | undefined {
    let pos = position;
    const writer = this.writerPosition();
    for (let guard = 0; guard < 1_000_000 && pos < writer; guard++) {
      const chunk = this.registry.chunkAt(pos);
      if (!chunk) return undefined;
      const start = chunk.startPosition;
      const limit = this.physicalLimit(chunk, writer);
      const physical = chunk.header.isScavenged ? chunk.firstPhysicalAtOrAfterLogical(pos - start) : pos - start;
      if (physical < 0 || physical >= limit) {
        if (!chunk.isCompleted) return undefined;
        pos = chunk.endPosition;
        continue;
      }
      const logical = start + chunk.logicalOffsetOfPhysical(physical);
      const frame = chunk.readFrameAt(physical, limit, logical);
      if (frame.kind === 'torn') throw corruptAt(chunk, logical, frame.reason);
      if (frame.kind === 'end') throw corruptAt(chunk, logical, 'no record where the log says there is one');
      const nextPhysical = physical + frame.frameSizeBytes;
      let nextPosition: number;
      if (nextPhysical < limit) nextPosition = start + chunk.logicalOffsetOfPhysical(nextPhysical);
      else nextPosition = chunk.isCompleted ? chunk.endPosition : start + nextPhysical;
      return { record: frame.record, nextPosition };
    }
    return undefined;
  }

  /** The record that ends at `position` (exclusive), or undefined at the start of the log. */
  readBackward(position: number): { record: LogRecord; position: number } | undefined {
    let pos = Math.min(position, this.writerPosition());
    for (let guard = 0; guard < 1_000_000 && pos > 0; guard++) {
      let chunk = this.registry.chunkAt(pos);
      if (!chunk || pos === chunk.startPosition) {
        const prev = this.registry.chunkAt(pos - 1);
        if (!prev) return undefined;
        chunk = prev;
        pos = prev.logicalDataEndPosition;
        if (pos === prev.startPosition) { pos = prev.startPosition; if (pos === 0) return undefined; continue; }
      }
      const limit = this.physicalLimit(chunk, this.writerPosition());
      const physicalEnd = pos >= chunk.logicalDataEndPosition ? limit : chunk.physicalOffsetOf(pos - chunk.startPosition);
      if (physicalEnd <= 0) { pos = chunk.startPosition; continue; }
      const len = chunk.readData(physicalEnd - 4, 4).readUInt32LE(0);
      const physicalStart = physicalEnd - len - RECORD_FRAME_OVERHEAD_BYTES;
      const logical = chunk.startPosition + chunk.logicalOffsetOfPhysical(physicalStart);
      const frame = physicalStart >= 0 ? chunk.readFrameAt(physicalStart, limit, logical) : undefined;
      if (frame?.kind === 'record') return { record: frame.record, position: logical };
      throw corruptAt(chunk, logical, frame && frame.kind === 'torn' ? frame.reason : 'bad trailing length');
    }
    return undefined;
  }

  /**
   * Visits every record in [from, to) in order, reading big blocks. Used at start-up to bring
   * the index up to the writer checkpoint.
   */
  scan(from: number, to: number, visit: (record: IndexFields, nextPosition: number) => void): void {
    let pos = from;
    while (pos < to) {
      const chunk = this.registry.chunkAt(pos);
      if (!chunk) return;
      if (chunk.header.isScavenged) {
        const r = this.readForward(pos);
        if (!r || r.record.logPosition >= to) return;
        const rec = r.record;
        visit({ type: rec.type, logPosition: rec.logPosition, stream: rec.type === 0 ? rec.stream : '', eventNumber: rec.type === 0 ? rec.eventNumber : -1 }, r.nextPosition);
        pos = r.nextPosition;
        continue;
      }
      pos = this.scanChunk(chunk, pos, to, visit);
    }
  }

  private scanChunk(chunk: Chunk, from: number, to: number, visit: (record: IndexFields, nextPosition: number) => void): number {
    const start = chunk.startPosition;
    const limit = Math.min(this.physicalLimit(chunk, this.writerPosition()), to - start);
    let physical = from - start;
    while (physical < limit) {
      const head = chunk.readData(physical, 4).readUInt32LE(0);
      const blockBytes = Math.max(4 * 1024 * 1024, head + RECORD_FRAME_OVERHEAD_BYTES);
      const block = chunk.readData(physical, Math.min(blockBytes, limit - physical));
      let offset = 0;
      while (offset + 4 <= block.length) {
        const len = block.readUInt32LE(offset);
        const at = start + physical + offset;
        if (len === 0) throw corruptAt(chunk, at, 'zero-length frame below the writer checkpoint');
        if (offset + len + RECORD_FRAME_OVERHEAD_BYTES > block.length) {
          if (physical + offset + len + RECORD_FRAME_OVERHEAD_BYTES > limit) throw corruptAt(chunk, at, 'frame runs past the durable end');
          break; // cut by the block boundary: read again with the next block
        }
        const frame = decodeFrameIndexFields(block, offset, block.length, at);
        if (frame.kind !== 'record') throw corruptAt(chunk, at, frame.kind === 'torn' ? frame.reason : 'unreadable frame');
        offset += frame.frameSizeBytes;
        visit(frame.fields, start + physical + offset);
      }
      if (offset === 0) throw corruptAt(chunk, start + physical, 'unreadable frame');
      physical += offset;
    }
    return chunk.isCompleted ? chunk.endPosition : start + physical;
  }

  private physicalLimit(chunk: Chunk, writer: number): number {
    if (chunk.isCompleted) return chunk.physicalDataSizeBytes;
    return Math.max(0, Math.min(chunk.physicalDataSizeBytes, writer - chunk.startPosition));
  }

}

function corruptAt(chunk: Chunk, logPosition: number, reason: string): FatalError {
  return new FatalError('EDB_CHUNK_CORRUPT', `chunk file ${chunk.file.path} is corrupt at log position ${logPosition}: ${reason}`, {
    details: { file: chunk.file.path, logPosition },
  });
}

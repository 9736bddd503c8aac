/**
 * A follower's (or read-only replica's) side of the log: it writes what the leader sends, at
 * the same logical positions, and makes it visible only as far as the leader says a quorum
 * holds it.
 *
 * - `append(position, bytes)`: sealed record frames from the leader's log. Every frame is
 *   decoded (length, checksum, position) before anything is written; a bad frame is refused and
 *   nothing changes. Then the bytes go to the active chunk like a local batch (write, fdatasync,
 *   writer.chk) and epoch records among them move epoch.chk.
 * - `completeChunk()`: the leader completed its active chunk; so does the follower.
 * - `installChunk(name)`: a completed chunk file the leader sent whole (a scavenged or merged
 *   chunk cannot be rebuilt from records), written beforehand under a temp name.
 * - `commitTo(position)`: the leader's commit position; whole writes up to it are applied
 *   (CommitApplier) exactly as the leader applies its own.
 *
 * Operations run one at a time, in the order called. Any failure to write or sync is fatal.
 */
import type { Logger } from 'pino';
import { EventDbError, FatalError } from '../../errors.js';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import type { ChunkRegistry } from '../chunk/chunk-registry.js';
import { decodeFrame, RecordType, SystemRecordType, type PrepareRecord } from '../format/record.js';
import type { AppliedWrite, CommitApplier } from '../engine/commit-applier.js';
import { decodeEpoch, type EpochRecord } from '../epochs.js';
import type { LogReader } from '../reader/log-reader.js';
import { BATCH_BUFFER_BYTES, type EngineFailure, type LogPositions } from '../writer/log-writer.js';
import type { LogWriterThread } from '../writer/log-writer-thread.js';

export interface ReplicaWriterDeps {
  readonly log: Logger;
  readonly registry: ChunkRegistry;
  readonly writerCheckpoint: Checkpoint;
  readonly positions: LogPositions;
  readonly failure: EngineFailure;
  readonly thread: LogWriterThread | undefined;
  readonly applier: CommitApplier;
  /** Reads records up to the durable position (not only the committed one). */
  readonly durableReader: LogReader;
  /** An epoch record became durable here. */
  readonly onEpoch: (epoch: EpochRecord) => Promise<void>;
}

/** The leader sent something that does not fit this log: the replication session must restart. */
export function replicationMismatch(message: string): EventDbError {
  return new EventDbError('EDB_REPLICATION_MISMATCH', message, { httpStatus: 500 });
}

export class ReplicaWriter {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly deps: ReplicaWriterDeps) {}

  /** Runs `op` after every earlier operation; a fatal error fails the engine. */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => {
      const failed = this.deps.failure.current;
      if (failed) throw failed;
      return op();
    });
    this.tail = run.then(() => undefined, () => undefined);
    return run.catch((err: unknown) => {
      if (err instanceof FatalError) this.deps.failure.fail(err);
      throw err;
    });
  }

  append(position: number, bytes: Buffer): Promise<void> {
    return this.serial(async () => {
      const { positions, registry, thread } = this.deps;
      if (position !== positions.writer) {
        throw replicationMismatch(`data for log position ${position} but this log ends at ${positions.writer}`);
      }
      const active = registry.active;
      if (position + bytes.length > active.endPosition) {
        throw replicationMismatch(`data for ${position}..${position + bytes.length} runs past the active chunk's end ${active.endPosition}`);
      }
      const epochs = this.checkFrames(position, bytes);
      let buf = bytes;
      if (thread) {
        // A buffer of the writer's usual size: the thread's pool reuses it.
        buf = thread.takeBuffer(Math.max(bytes.length, BATCH_BUFFER_BYTES)).subarray(0, bytes.length);
        bytes.copy(buf);
      }
      const end = position + bytes.length;
      const handover = thread ? this.deps.writerCheckpoint.reserve?.(end) : undefined;
      positions.writer = end;
      try {
        const durable = active.appendDurably(buf, thread, handover);
        registry.noteAppended();
        await durable;
        await handover?.landed();
        if (!handover) await this.deps.writerCheckpoint.write(end);
      } catch (err: unknown) {
        throw err instanceof FatalError ? err : new FatalError('EDB_WRITE_FAILED', `write to ${active.file.path} failed`, { cause: err });
      }
      positions.durable = end;
      for (const epoch of epochs) await this.deps.onEpoch(epoch);
    });
  }

  /** Decodes every frame (checksums, positions); returns the epoch records among them. */
  private checkFrames(position: number, bytes: Buffer): EpochRecord[] {
    const epochs: EpochRecord[] = [];
    let offset = 0;
    while (offset < bytes.length) {
      const frame = decodeFrame(bytes, offset, bytes.length, position + offset);
      if (frame.kind !== 'record') {
        const reason = frame.kind === 'torn' ? frame.reason : 'no record';
        throw replicationMismatch(`bad record from the leader at log position ${position + offset}: ${reason}`);
      }
      const record = frame.record;
      if (record.type === RecordType.System && record.systemRecordType === SystemRecordType.Epoch) {
        const epoch = decodeEpoch(record.data, record.logPosition);
        if (epoch) epochs.push(epoch);
      }
      offset += frame.frameSizeBytes;
    }
    return epochs;
  }

  /** The leader completed the chunk this log is writing: complete it and start the next. */
  completeChunk(): Promise<void> {
    return this.serial(async () => {
      const { positions, registry } = this.deps;
      const completed = registry.active;
      if (positions.writer !== completed.startPosition + completed.physicalDataSizeBytes) {
        throw replicationMismatch('chunk completion while the active chunk has data past the writer position');
      }
      await registry.completeActiveAndStartNext();
      const next = registry.active.startPosition;
      await this.deps.writerCheckpoint.write(next);
      positions.writer = next;
      positions.durable = next;
    });
  }

  /**
   * Puts a completed chunk file the leader sent whole (in storage under `tempName`) in place of
   * this log's empty active chunk, and starts the next one. The file is verified in full first.
   */
  installChunk(tempName: string): Promise<void> {
    return this.serial(async () => {
      const { positions, registry } = this.deps;
      const installed = await registry.installCompletedChunk(tempName, positions.writer);
      await this.deps.writerCheckpoint.write(installed.nextPosition);
      positions.writer = installed.nextPosition;
      positions.durable = installed.nextPosition;
      for (const epoch of this.epochsIn(installed.startPosition, installed.nextPosition)) await this.deps.onEpoch(epoch);
    });
  }

  private epochsIn(from: number, to: number): EpochRecord[] {
    const epochs: EpochRecord[] = [];
    let pos = from;
    while (pos < to) {
      const r = this.deps.durableReader.readForward(pos);
      if (!r || r.record.logPosition >= to) break;
      if (r.record.type === RecordType.System && r.record.systemRecordType === SystemRecordType.Epoch) {
        const epoch = decodeEpoch(r.record.data, r.record.logPosition);
        if (epoch) epochs.push(epoch);
      }
      pos = r.nextPosition;
    }
    return epochs;
  }

  /**
   * Applies the whole writes between the committed position and `position` (bounded by what is
   * durable here): index, caches, listeners. Returns the new committed position.
   */
  commitTo(position: number): number {
    const { positions, applier } = this.deps;
    const target = Math.min(position, positions.durable);
    if (target <= positions.committed) return positions.committed;
    const writes: AppliedWrite[] = [];
    let prepares: PrepareRecord[] = [];
    let pos = positions.committed;
    let boundary = positions.committed;
    while (pos < target) {
      const r = this.deps.durableReader.readForward(pos);
      if (!r || r.nextPosition > target) break;
      const record = r.record;
      if (record.type === RecordType.Prepare) {
        prepares.push(record);
      } else {
        if (record.type === RecordType.Commit && prepares.length > 0) {
          const first = prepares[0]!;
          const last = prepares[prepares.length - 1]!;
          writes.push({
            stream: first.stream, events: prepares, firstEventId: first.eventId,
            lastEventData: last.data, commitPosition: record.logPosition,
          });
        }
        prepares = [];
        boundary = r.nextPosition;
      }
      pos = r.nextPosition;
    }
    // A chunk's unwritten tail (a chunk completed early) holds nothing: skip to the target.
    if (prepares.length === 0 && pos >= target) boundary = Math.max(boundary, Math.min(pos, target));
    if (boundary <= positions.committed) return positions.committed;
    positions.committed = boundary;
    applier.apply(writes, boundary);
    return boundary;
  }
}

/**
 * Checkpoints: durable int64 values (writer, chaser, epoch, proposal, truncate positions).
 * `write` resolves only once the value is durable; a failed fsync rejects and the caller
 * treats it as fatal. See format/checkpoint-file.ts for the two-slot layout.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  CHECKPOINT_FILE_SIZE_BYTES, checkpointSlotOffset, decodeCheckpointFile, encodeCheckpointSlot,
} from '../format/checkpoint-file.js';
import { FatalError, isErrno } from '../../errors.js';
import { NodeBlockFile, writeFileAtomic, type BlockFile } from '../../platform/block-file.js';

export interface Checkpoint {
  readonly name: string;
  read(): number;
  write(value: number): Promise<void>;
  /**
   * Hands the next write of `value` to another thread (the log writer): the slot bytes and where
   * they go, with the sequence taken now. Undefined when this checkpoint has no file descriptor.
   */
  reserve?(value: number): CheckpointHandover | undefined;
  close(): Promise<void>;
}

/** A checkpoint write made by another thread through the file's descriptor. */
export interface CheckpointHandover {
  readonly path: string;
  readonly fd: number;
  readonly position: number;
  readonly bytes: Buffer;
  /** Records the value once the other thread has written and fdatasynced the slot. */
  landed(): void;
}

export class MemoryCheckpoint implements Checkpoint {
  constructor(readonly name: string, private value: number) {}
  read(): number { return this.value; }
  async write(value: number): Promise<void> { this.value = value; }
  async close(): Promise<void> {}
}

export class FileCheckpoint implements Checkpoint {
  private constructor(
    readonly name: string,
    private readonly file: BlockFile,
    private value: number,
    private sequence: number,
  ) {}

  /** Opens `<dir>/<name>`, creating it with `initialValue` when missing. */
  static async open(dir: string, name: string, initialValue: number): Promise<FileCheckpoint> {
    const filePath = path.join(dir, name);
    if (!fs.existsSync(filePath)) {
      const bytes = Buffer.alloc(CHECKPOINT_FILE_SIZE_BYTES);
      encodeCheckpointSlot({ sequence: 0, value: initialValue }).copy(bytes, 0);
      await writeFileAtomic(filePath, bytes);
    }
    let file: NodeBlockFile;
    try {
      file = NodeBlockFile.openExisting(filePath, true);
    } catch (err: unknown) {
      if (isErrno(err, 'ENOENT')) throw new FatalError('EDB_CHECKPOINT_CORRUPT', `checkpoint ${filePath} vanished`, { cause: err });
      throw err;
    }
    const slot = decodeCheckpointFile(file.readSync(0, CHECKPOINT_FILE_SIZE_BYTES));
    if (!slot) {
      await file.close();
      throw new FatalError('EDB_CHECKPOINT_CORRUPT', `checkpoint file ${filePath} is corrupt (no valid slot)`);
    }
    return new FileCheckpoint(name, file, slot.value, slot.sequence);
  }

  read(): number {
    return this.value;
  }

  /** Writes are serialised: a later write never overtakes an earlier one. */
  write(value: number): Promise<void> {
    this.queuedWrites += 1;
    const next = this.tail.then(() => this.writeNow(value)).finally(() => { this.queuedWrites -= 1; });
    this.tail = next.catch(() => undefined);
    return next;
  }

  private queuedWrites = 0;

  /**
   * The sequence is taken at once, so handed-over writes must be made in the order reserved and
   * none skipped (the log writer thread makes them in job order; any failure stops the node). A
   * skipped sequence could leave, after a torn write, only a slot older than the last value
   * acknowledged. Never while a `write` of this checkpoint is queued.
   */
  reserve(value: number): CheckpointHandover | undefined {
    const fd = this.file.fd;
    if (fd === undefined) return undefined;
    if (this.queuedWrites > 0) throw new FatalError('EDB_INVARIANT', `checkpoint ${this.file.path} handed over while a write of it is queued`);
    const sequence = (this.sequence + 1) >>> 0;
    this.sequence = sequence;
    return {
      path: this.file.path, fd, position: checkpointSlotOffset(sequence), bytes: encodeCheckpointSlot({ sequence, value }),
      landed: () => { this.value = value; },
    };
  }

  private tail: Promise<void> = Promise.resolve();

  private async writeNow(value: number): Promise<void> {
    const sequence = (this.sequence + 1) >>> 0;
    this.file.writeSync(encodeCheckpointSlot({ sequence, value }), checkpointSlotOffset(sequence));
    try {
      await this.file.sync();
    } catch (err: unknown) {
      throw new FatalError('EDB_FSYNC_FAILED', `fsync of checkpoint ${this.file.path} failed`, { cause: err });
    }
    this.sequence = sequence;
    this.value = value;
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

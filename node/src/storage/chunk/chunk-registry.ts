/**
 * The set of chunks that make up the log, and position -> chunk lookup.
 *
 * Recovery rules applied by `open` (writer.chk is the truth about what is durable):
 * - temp files are deleted; for each chunk number the highest file version wins, older
 *   versions left by an interrupted scavenge swap are deleted;
 * - chunks must form a gap-free sequence from chunk 0;
 * - completed chunks are verified against their checksum (a mismatch is fatal, naming the file);
 * - chunk files wholly past writer.chk are deleted, and the active chunk's data past writer.chk
 *   is cut off (it was never acknowledged).
 */
import type { Logger } from 'pino';
import { Chunk } from './chunk.js';
import { DirectoryChunkStorage, type ChunkStorage } from './chunk-storage.js';
import { dropScratch } from './scratch-buffers.js';
import { CHUNK_HEADER_SIZE_BYTES } from '../limits.js';

/** Zeros written per call when preallocating a chunk file. */
const PREALLOC_WRITE_BYTES = 8 * 1024 * 1024;
import { chunkFileName, parseChunkFileName } from '../format/chunk-header.js';
import { FatalError, assert } from '../../errors.js';
import type { FrameResult } from '../format/record.js';

export class ChunkRegistry {
  /** Index = logical chunk number; a merged chunk appears at each number it covers. */
  private readonly chunks: Chunk[] = [];

  private constructor(
    readonly storage: ChunkStorage,
    readonly chunkSizeBytes: number,
    private readonly log: Logger,
    private readonly shouldPreallocate: () => boolean,
  ) {}

  /**
   * `shouldPreallocate` is asked once per chunk, when it is half full, whether to zero-fill the
   * next one (see prepareNext); by default always.
   */
  static async open(
    storage: ChunkStorage,
    chunkSizeBytes: number,
    writerPosition: number,
    log: Logger,
    shouldPreallocate: () => boolean = () => true,
  ): Promise<ChunkRegistry> {
    const registry = new ChunkRegistry(storage, chunkSizeBytes, log, shouldPreallocate);
    await registry.load(writerPosition);
    return registry;
  }

  get active(): Chunk {
    const last = this.chunks[this.chunks.length - 1];
    assert(last !== undefined && !last.isCompleted, 'there is an active chunk');
    return last;
  }

  get chunkCount(): number {
    return new Set(this.chunks).size;
  }

  /** Distinct chunks in log order. */
  allChunks(): Chunk[] {
    return [...new Set(this.chunks)];
  }

  chunkAt(logPosition: number): Chunk | undefined {
    return this.chunks[Math.floor(logPosition / this.chunkSizeBytes)];
  }

  private async load(writerPosition: number): Promise<void> {
    const best = await this.pickFiles();
    const writerChunkNumber = Math.floor(writerPosition / this.chunkSizeBytes);
    const numbers = [...best.keys()].sort((a, b) => a - b);
    let expected = 0;
    for (const n of numbers) {
      const name = best.get(n)!;
      if (n > writerChunkNumber) {
        this.log.warn({ file: name, writerPosition }, 'deleting chunk past the writer checkpoint');
        await this.storage.remove(name);
        continue;
      }
      if (n * this.chunkSizeBytes === writerPosition && n > 0 && parseChunkFileName(name)!.version > 0 && this.isCompletedFile(name)) {
        // A completed chunk that starts where writer.chk ends is not part of the log: a replica's
        // chunk installation cut short before its checkpoint (installCompletedChunk).
        this.log.warn({ file: name, writerPosition }, 'deleting a completed chunk the writer checkpoint does not cover');
        await this.storage.remove(name);
        continue;
      }
      if (n < expected) {
        // Covered by a merged chunk before it: a leftover of a merge interrupted after the rename.
        this.log.warn({ file: name }, 'deleting chunk file covered by a merged chunk');
        await this.storage.remove(name);
        continue;
      }
      if (n !== expected) throw new FatalError('EDB_CHUNK_CORRUPT', `chunk ${expected} is missing from ${this.storage.description} (found ${name})`);
      const chunk = Chunk.open(this.storage.open(name, true), true);
      if (chunk.header.chunkStartNumber !== n) {
        throw new FatalError('EDB_CHUNK_CORRUPT', `chunk file ${name} says it starts at chunk ${chunk.header.chunkStartNumber}`);
      }
      for (let i = chunk.header.chunkStartNumber; i <= chunk.header.chunkEndNumber; i++) this.chunks[i] = chunk;
      expected = chunk.header.chunkEndNumber + 1;
    }
    dropScratch(); // the verification buffer
    await this.recoverTail(writerPosition);
  }

  /** Chooses the newest version of each chunk number and deletes leftovers. */
  private async pickFiles(): Promise<Map<number, string>> {
    const versions = new Map<number, { version: number; name: string }>();
    for (const name of this.storage.list()) {
      if (name.endsWith('.tmp')) {
        await this.storage.remove(name);
        continue;
      }
      const parsed = parseChunkFileName(name);
      if (!parsed) continue;
      const current = versions.get(parsed.chunkNumber);
      if (current && current.version > parsed.version) {
        await this.storage.remove(name);
      } else {
        if (current) await this.storage.remove(current.name);
        versions.set(parsed.chunkNumber, { version: parsed.version, name });
      }
    }
    return new Map([...versions].map(([n, v]) => [n, v.name]));
  }

  /** Makes the chunk holding writer.chk the active one, with nothing past writer.chk. */
  private async recoverTail(writerPosition: number): Promise<void> {
    const last = this.chunks[this.chunks.length - 1];
    if (!last) {
      assert(writerPosition === 0, `writer checkpoint ${writerPosition} but no chunks`);
      await this.addNewChunk(0);
      return;
    }
    if (last.isCompleted) {
      assert(writerPosition <= last.endPosition, `writer checkpoint ${writerPosition} past completed chunk end ${last.endPosition}`);
      assert(writerPosition >= last.logicalDataEndPosition, `writer checkpoint ${writerPosition} inside a completed chunk`);
      await this.addNewChunk(last.header.chunkEndNumber + 1);
      return;
    }
    const durable = writerPosition - last.startPosition;
    if (durable < 0 || durable > last.physicalDataSizeBytes) {
      throw new FatalError('EDB_CHUNK_CORRUPT', `active chunk ${last.file.path} holds ${last.physicalDataSizeBytes} bytes but writer.chk needs ${durable}`);
    }
    if (durable < last.physicalDataSizeBytes) {
      this.log.warn({ file: last.file.path, discardedBytes: last.physicalDataSizeBytes - durable }, 'discarding log data past the writer checkpoint');
      await last.truncateData(durable);
    }
    // Now rather than at its completion, where it would stall the writer (and a scavenge).
    last.primeChecksum();
  }

  private async addNewChunk(chunkNumber: number): Promise<Chunk> {
    const name = chunkFileName(chunkNumber, 0);
    await this.storage.remove(name); // a header-only leftover from a crash during creation
    const prepared = await this.takePrepared(chunkNumber);
    if (prepared) await this.storage.rename(prepared, name);
    const file = prepared ? this.storage.open(name, true) : this.storage.create(name);
    const chunk = await Chunk.create(file, chunkNumber, this.chunkSizeBytes);
    await this.storage.syncDirectory();
    this.chunks[chunkNumber] = chunk;
    return chunk;
  }

  /**
   * Preallocation: once the active chunk is half full, the next chunk's file is written full of
   * zeros in the background (`<name>.prealloc.tmp`), so appends to it overwrite existing blocks:
   * an fdatasync then flushes data only, with no file-size change to journal. That shortens
   * small fsyncs (p50 0.14-0.21 vs 0.22-0.26 ms for 16 KiB here) but writes every byte of the
   * log twice, so the engine asks `shouldPreallocate` (small recent flushes) first. Half full
   * rather than at the chunk's start: a new or small log holds no chunk of zeros, and a chunk
   * started early (a scavenge point completes the active chunk) adds at most its own preallocated
   * file, not a second one; the zero-fill still has half a chunk of appends to finish. Only for
   * on-disk storage; a leftover temp file is deleted at start-up like any other.
   */
  private prepared: { chunkNumber: number; done: Promise<string | undefined> } | undefined;
  /** The chunk number whose half-full point was reached (the next chunk decided once). */
  private halfFullChunk = -1;

  /** After an append to the active chunk: starts preparing the next chunk at its half-full point. */
  noteAppended(): void {
    const active = this.active;
    const chunkNumber = active.header.chunkEndNumber;
    if (chunkNumber === this.halfFullChunk || active.physicalDataSizeBytes * 2 < this.chunkSizeBytes) return;
    this.halfFullChunk = chunkNumber;
    this.prepareNext(chunkNumber + 1);
  }

  private prepareNext(chunkNumber: number): void {
    if (!(this.storage instanceof DirectoryChunkStorage) || !this.shouldPreallocate()) return;
    const tempName = `${chunkFileName(chunkNumber, 0)}.prealloc.tmp`;
    const sizeBytes = CHUNK_HEADER_SIZE_BYTES + this.chunkSizeBytes;
    const done = (async (): Promise<string | undefined> => {
      await this.storage.remove(tempName);
      const file = this.storage.create(tempName);
      try {
        const zeros = Buffer.alloc(Math.min(PREALLOC_WRITE_BYTES, sizeBytes));
        for (let at = 0; at < sizeBytes; at += zeros.length) {
          await file.write(zeros.subarray(0, Math.min(zeros.length, sizeBytes - at)), at);
        }
        await file.sync();
      } finally {
        await file.close();
      }
      return tempName;
    })().catch((err: unknown) => {
      // Preallocation is an optimisation: on failure the next chunk is created the plain way.
      this.log.warn({ err, file: tempName }, 'could not preallocate the next chunk');
      return undefined;
    });
    this.prepared = { chunkNumber, done };
  }

  private async takePrepared(chunkNumber: number): Promise<string | undefined> {
    const prepared = this.prepared;
    this.prepared = undefined;
    if (!prepared) return undefined;
    const name = await prepared.done;
    if (prepared.chunkNumber === chunkNumber) return name;
    if (name) await this.storage.remove(name);
    return undefined;
  }

  /** Seals the active chunk and starts the next one; returns the new active chunk. */
  async completeActiveAndStartNext(): Promise<Chunk> {
    const active = this.active;
    await active.complete();
    this.log.info({ file: active.file.path, dataSizeBytes: active.physicalDataSizeBytes }, 'chunk completed');
    return this.addNewChunk(active.header.chunkEndNumber + 1);
  }

  private isCompletedFile(name: string): boolean {
    const probe = Chunk.open(this.storage.open(name, false), false);
    const completed = probe.isCompleted;
    void probe.close();
    return completed;
  }

  /**
   * A replica installs a completed chunk file its leader sent whole (under `tempName`) in place of
   * its empty active chunk, which must start where the file starts: the file is verified in full,
   * renamed to a version above the active chunk's, the directory synced, the mapping swapped, the
   * old active file deleted, and the next chunk started. The caller moves writer.chk to
   * `nextPosition` afterwards; a crash before that leaves a completed chunk at the writer
   * checkpoint, which start-up deletes (see load).
   */
  async installCompletedChunk(tempName: string, writerPosition: number): Promise<{ startPosition: number; nextPosition: number }> {
    const probe = Chunk.open(this.storage.open(tempName, false), true);
    const start = probe.header.chunkStartNumber;
    const end = probe.header.chunkEndNumber;
    const completed = probe.isCompleted;
    await probe.close();
    const active = this.active;
    if (!completed || start !== active.header.chunkStartNumber || writerPosition !== active.startPosition || active.physicalDataSizeBytes !== 0) {
      await this.storage.remove(tempName);
      throw new FatalError('EDB_INVARIANT', `cannot install chunk file for chunks ${start}-${end} over active chunk ${active.header.chunkStartNumber} at writer position ${writerPosition}`);
    }
    const finalName = chunkFileName(start, this.nextVersionFor(start));
    await this.storage.rename(tempName, finalName);
    await this.storage.syncDirectory();
    const chunk = Chunk.open(this.storage.open(finalName, false), false);
    const oldName = this.fileNameOf(active);
    await active.close();
    this.chunks.length = start;
    for (let i = start; i <= end; i++) this.chunks[i] = chunk;
    await this.storage.remove(oldName);
    await this.takePrepared(-1);
    await this.addNewChunk(end + 1);
    this.log.info({ file: finalName, chunkStartNumber: start, chunkEndNumber: end }, 'chunk installed from the leader');
    return { startPosition: chunk.startPosition, nextPosition: chunk.endPosition };
  }

  /** File name (in storage) of a chunk. */
  fileNameOf(chunk: Chunk): string {
    const parts = chunk.file.path.split(/[\\/]/);
    return parts[parts.length - 1]!;
  }

  /** The next file version for a chunk range starting at `chunkStartNumber`. */
  nextVersionFor(chunkStartNumber: number): number {
    let highest = -1;
    for (const name of this.storage.list()) {
      const parsed = parseChunkFileName(name);
      if (parsed && parsed.chunkNumber === chunkStartNumber) highest = Math.max(highest, parsed.version);
    }
    return highest + 1;
  }

  /** Deletions of replaced chunk files still under way (see swapIn). */
  private readonly removals = new Set<Promise<void>>();

  /**
   * Puts a new completed chunk file (written under `tempName`) in place of the chunks it covers:
   * rename to its versioned name, sync the directory, swap the in-memory mapping in one
   * synchronous step (so no reader ever sees half of it), then close the old files and delete
   * them in the background. A crash after the rename leaves both versions; start-up keeps the
   * newer and deletes the rest.
   *
   * Why in the background: deleting a 256 MiB file took 60-90 ms here (freeing its blocks, with
   * discard), which held up the next swap; a scavenge swapping one chunk after another spent
   * half its swap time waiting for deletions. `settleRemovals` waits for them (end of a
   * scavenge stage, close).
   */
  async swapIn(tempName: string): Promise<{ chunk: Chunk; oldSizeBytes: number; newSizeBytes: number }> {
    // The writer checksummed the data as it wrote it; open checks header, footer and size only
    // (re-reading a 256 MiB file here would also stall the event loop).
    const probe = Chunk.open(this.storage.open(tempName, false), false);
    const start = probe.header.chunkStartNumber;
    const end = probe.header.chunkEndNumber;
    await probe.close();
    const finalName = chunkFileName(start, this.nextVersionFor(start));
    await this.storage.rename(tempName, finalName);
    await this.storage.syncDirectory();
    const chunk = Chunk.open(this.storage.open(finalName, false), false);
    const old = new Set<Chunk>();
    for (let i = start; i <= end; i++) {
      const c = this.chunks[i];
      assert(c !== undefined && c.isCompleted, `chunk ${i} exists and is completed before a swap`);
      old.add(c);
    }
    for (let i = start; i <= end; i++) this.chunks[i] = chunk;
    let oldSizeBytes = 0;
    const names: string[] = [];
    for (const c of old) {
      oldSizeBytes += c.file.sizeBytes();
      names.push(this.fileNameOf(c));
      await c.close();
    }
    this.removeInBackground(names);
    return { chunk, oldSizeBytes, newSizeBytes: chunk.file.sizeBytes() };
  }

  /** Deletes replaced files (then syncs the directory) without holding up the caller. */
  private removeInBackground(names: readonly string[]): void {
    const removal = (async () => {
      for (const name of names) await this.storage.remove(name);
      await this.storage.syncDirectory();
    })().catch((err: unknown) => {
      // Harmless: start-up deletes versions a newer file replaced.
      this.log.warn({ err, files: names }, 'could not delete replaced chunk files; start-up will');
    });
    this.removals.add(removal);
    void removal.finally(() => this.removals.delete(removal));
  }

  /** Resolves once every replaced chunk file swapped out so far has been deleted. */
  async settleRemovals(): Promise<void> {
    while (this.removals.size > 0) await Promise.all([...this.removals]);
  }

  /** True when `logPosition` is in a scavenged chunk that no longer holds a record there. */
  isScavengedAway(logPosition: number): boolean {
    const chunk = this.chunkAt(logPosition);
    if (!chunk || !chunk.header.isScavenged) return false;
    return chunk.physicalOffsetOf(logPosition - chunk.startPosition) < 0;
  }

  /** Reads the record at a log position; `writerPosition` bounds what may be read. */
  readRecord(logPosition: number, writerPosition: number): FrameResult {
    const chunk = this.chunkAt(logPosition);
    if (!chunk || logPosition >= writerPosition) return { kind: 'end' };
    const physical = chunk.physicalOffsetOf(logPosition - chunk.startPosition);
    if (physical < 0) return { kind: 'end' };
    const limit = chunk.isCompleted ? chunk.physicalDataSizeBytes : Math.min(chunk.physicalDataSizeBytes, writerPosition - chunk.startPosition);
    return chunk.readFrameAt(physical, limit, logPosition);
  }

  /** Truncation for restore/replication: drops chunks past `position` and data past it. */
  async truncateTo(position: number): Promise<void> {
    const keepNumber = Math.floor(position / this.chunkSizeBytes);
    for (const chunk of this.allChunks().reverse()) {
      if (chunk.header.chunkStartNumber <= keepNumber && position > chunk.startPosition) {
        if (chunk.logicalDataEndPosition > position || chunk.isCompleted) {
          assert(!chunk.header.isScavenged, `cannot truncate inside scavenged chunk ${chunk.file.path}`);
          this.log.warn({ file: chunk.file.path, position }, 'truncating chunk');
          await chunk.truncateData(position - chunk.startPosition);
        }
        break;
      }
      this.log.warn({ file: chunk.file.path, position }, 'deleting chunk past the truncate checkpoint');
      await chunk.close();
      for (const name of this.storage.list()) {
        const parsed = parseChunkFileName(name);
        if (parsed && parsed.chunkNumber === chunk.header.chunkStartNumber) await this.storage.remove(name);
      }
      this.chunks.length = chunk.header.chunkStartNumber;
    }
    await this.storage.syncDirectory();
    if (this.chunks.length === 0 || this.chunks[this.chunks.length - 1]!.isCompleted) {
      await this.addNewChunk(this.chunks.length);
    }
  }

  async close(): Promise<void> {
    await this.settleRemovals();
    const prepared = await this.prepared?.done;
    if (prepared) await this.storage.remove(prepared);
    const last = this.chunks[this.chunks.length - 1];
    if (last && !last.isCompleted) await last.trimPreallocation();
    for (const chunk of this.allChunks()) await chunk.close();
  }
}

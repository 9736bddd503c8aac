/**
 * Worker threads for chunk execution (`threads` > 1): each worker rewrites a range of
 * consecutive chunks (read, verify, filter, write, fsync; merging neighbours as one thread
 * does) in parallel with the others and with the main thread, which keeps the swaps, the state
 * and the acknowledgements. A worker holds up to `TASKS_PER_WORKER_MAX` ranges at once. Only for
 * on-disk databases, and
 * only when the compiled worker module exists (tests that run the TypeScript sources directly
 * fall back to in-thread execution).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Chunk } from '../chunk/chunk.js';
import { DirectoryChunkStorage } from '../chunk/chunk-storage.js';
import type { DiscardRules, RangeGroup } from './execute.js';
import type { ScavengeAccess } from './scavenge-access.js';

/** Rewrite these consecutive chunk files, temp files in `dir` (see rewriteChunkRange). */
export interface RewriteTask {
  readonly id: number;
  readonly chunkPaths: readonly string[];
  readonly dir: string;
  readonly merging: boolean;
}

/**
 * What a worker wrote: the files, and which thread it was; each chunk's times (epoch ms, with
 * fractions) go to the log, where the rewrites of different threads are seen to overlap.
 */
export interface RewrittenRange {
  readonly groups: readonly RangeGroup[];
  readonly threadId: number;
}

export type RewriteReply = ({ readonly id: number } & RewrittenRange) | { readonly id: number; readonly error: string };

const WORKER_FILE = fileURLToPath(new URL('./execute-worker.js', import.meta.url));

/**
 * Chunks one worker rewrites at once. One: with copies written direct the fsync at the end of
 * a copy is short, and a second task per worker measured no faster while its buffers and
 * position map raised peak RSS by 5-20 MB (threads=2).
 */
export const TASKS_PER_WORKER_MAX = 1;

export class ChunkRewritePool {
  /** Tasks each worker holds now. */
  private readonly load = new Map<Worker, number>();
  private readonly waiting: ((w: Worker) => void)[] = [];
  private readonly pending = new Map<number, { resolve: (r: RewrittenRange) => void; reject: (e: Error) => void }>();
  private nextId = 0;

  private constructor(private readonly workers: Worker[], private readonly dir: string) {
    for (const w of workers) {
      this.load.set(w, 0);
      w.on('message', (reply: RewriteReply) => this.onReply(w, reply));
      w.on('error', (err) => { for (const p of this.pending.values()) p.reject(err); this.pending.clear(); });
    }
  }

  /** How many rewrites may be outstanding at once across the pool. */
  get capacity(): number {
    return this.workers.length * TASKS_PER_WORKER_MAX;
  }

  /** Starts `threads` workers, or returns undefined when workers cannot be used here. */
  static async start(threads: number, rules: DiscardRules, access: ScavengeAccess): Promise<ChunkRewritePool | undefined> {
    const storage = access.registry.storage;
    if (!(storage instanceof DirectoryChunkStorage) || !fs.existsSync(WORKER_FILE)) return undefined;
    const workerData = {
      chunkSizeBytes: access.chunkSizeBytes,
      originals: [...rules.originals.values()], metas: [...rules.metas.values()], effectiveNowMs: rules.effectiveNowMs,
    };
    const workers = Array.from({ length: threads }, () => new Worker(WORKER_FILE, { workerData }));
    access.log.info({ threads }, 'chunk execution on worker threads');
    return new ChunkRewritePool(workers, storage.dir);
  }

  /** Rewrites consecutive `chunks` on a free worker; the groups come back with the thread's id. */
  async rewriteRange(chunks: readonly Chunk[], merging: boolean): Promise<(RangeGroup & { threadId: number })[]> {
    const done = await this.run(chunks, merging);
    return done.groups.map((g) => ({ ...g, threadId: done.threadId }));
  }

  private async run(chunks: readonly Chunk[], merging: boolean): Promise<RewrittenRange> {
    const worker = this.leastLoaded() ?? (await new Promise<Worker>((resolve) => this.waiting.push(resolve)));
    this.load.set(worker, this.load.get(worker)! + 1);
    const id = this.nextId++;
    const task: RewriteTask = { id, chunkPaths: chunks.map((c) => c.file.path), dir: this.dir, merging };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage(task);
    });
  }

  private onReply(worker: Worker, reply: RewriteReply): void {
    const p = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    this.load.set(worker, this.load.get(worker)! - 1);
    this.waiting.shift()?.(worker);
    if (!p) return;
    if ('error' in reply) p.reject(new Error(reply.error));
    else p.resolve({ groups: reply.groups, threadId: reply.threadId });
  }

  /** The worker with the fewest tasks, if it can take one more. */
  private leastLoaded(): Worker | undefined {
    let best: Worker | undefined;
    for (const w of this.workers) if (this.load.get(w)! < TASKS_PER_WORKER_MAX && (best === undefined || this.load.get(w)! < this.load.get(best)!)) best = w;
    return best;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

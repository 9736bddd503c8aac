/**
 * Worker thread of chunk execution: rewrites the ranges of consecutive chunks it is given with
 * the run's discard rules (see chunk-rewrite-pool.ts, rewriteChunkRange). It writes only temp
 * files in the directory it is told; the main thread swaps them in.
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { Chunk } from '../chunk/chunk.js';
import { NodeBlockFile } from '../../platform/block-file.js';
import { DirectoryChunkStorage } from '../chunk/chunk-storage.js';
import { rewriteChunkRange, type DiscardRules } from './execute.js';
import type { MetastreamData, OriginalStreamData } from './scavenge-types.js';
import type { RewriteReply, RewriteTask } from './chunk-rewrite-pool.js';

interface WorkerInput {
  readonly chunkSizeBytes: number;
  readonly originals: OriginalStreamData[];
  readonly metas: MetastreamData[];
  readonly effectiveNowMs: number;
}

const input = workerData as WorkerInput;
const rules: DiscardRules = {
  originals: new Map(input.originals.map((o) => [o.stream, o])),
  metas: new Map(input.metas.map((m) => [m.metastream, m])),
  effectiveNowMs: input.effectiveNowMs,
};

parentPort?.on('message', (task: RewriteTask) => {
  void handle(task).then((reply) => parentPort?.postMessage(reply));
});

async function handle(task: RewriteTask): Promise<RewriteReply> {
  const sources: NodeBlockFile[] = [];
  try {
    const chunks = task.chunkPaths.map((p) => {
      const file = NodeBlockFile.openExisting(p, false);
      sources.push(file);
      return Chunk.open(file, false);
    });
    const groups = await rewriteChunkRange(chunks, new DirectoryChunkStorage(task.dir), input.chunkSizeBytes, rules, task.merging);
    return { id: task.id, groups, threadId };
  } catch (err: unknown) {
    return { id: task.id, error: (err as Error).message };
  } finally {
    for (const file of sources) await file.close().catch(() => {});
  }
}

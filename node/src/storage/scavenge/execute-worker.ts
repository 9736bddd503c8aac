/**
 * Worker thread of chunk execution: rewrites the chunks it is given with the run's discard
 * rules (see chunk-rewrite-pool.ts). It writes only the temp file it is told to; the main
 * thread swaps it in.
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { Chunk } from '../chunk/chunk.js';
import { NodeBlockFile } from '../../platform/block-file.js';
import { openDirect } from '../../platform/direct-file.js';
import { rewriteChunk, type DiscardRules } from './execute.js';
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
  const startedAtMs = performance.timeOrigin + performance.now();
  const source = NodeBlockFile.openExisting(task.chunkPath, false);
  try {
    const chunk = Chunk.open(source, false);
    const copy = NodeBlockFile.create(task.tempPath);
    let direct;
    try {
      direct = openDirect(task.tempPath);
    } catch (err: unknown) {
      await copy.close();
      throw err;
    }
    const result = await rewriteChunk(chunk, copy, input.chunkSizeBytes, rules, async () => {}, direct);
    return { id: task.id, ...result, threadId, startedAtMs, finishedAtMs: performance.timeOrigin + performance.now() };
  } catch (err: unknown) {
    return { id: task.id, error: (err as Error).message };
  } finally {
    await source.close();
  }
}

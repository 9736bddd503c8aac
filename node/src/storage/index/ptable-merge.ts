/**
 * Streams the k-way merge of sorted tables as sorted chunks for writePTable(). Each input is read
 * sequentially in chunks of `chunkEntryCount` entries, so memory stays at (k + 1) chunks however
 * big the tables are. Entries that are exact duplicates (same hash, event number and position)
 * are written once; entries differing only in position (hash collisions) are all kept. An
 * optional filter drops entries as they stream by (the index stage of a scavenge).
 */

import {
  ENTRY_SIZE_BYTES,
  ENTRY_SIZE_WORDS,
  allocEntryBuffer,
  compareEntries,
} from './index-entry-codec.js';

/** One input: its current chunk and the next entry to take from it. */
class MergeInput {
  words: Uint32Array = new Uint32Array(0);
  entry = 0;
  entryCount = 0;

  constructor(private readonly chunks: AsyncIterator<Buffer>) {}

  /** Loads the next chunk; false when the input is exhausted. */
  async refill(): Promise<boolean> {
    const next = await this.chunks.next();
    if (next.done === true) return false;
    const bytes = next.value;
    this.words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    this.entry = 0;
    this.entryCount = bytes.length / ENTRY_SIZE_BYTES;
    return this.entryCount > 0 || this.refill();
  }
}

/** Decides whether entry `entryIndex` of `words` is written (scavenge); absent keeps all. */
export type EncodedEntryFilter = (words: Uint32Array, entryIndex: number) => boolean;

/**
 * Merges sorted inputs into sorted chunks of `chunkEntryCount` entries, dropping duplicates and
 * what `keep` rejects. A yielded chunk is valid until the next one is requested (one buffer is
 * reused); the inputs may reuse theirs the same way.
 */
export async function* mergeSortedChunks(
  inputs: readonly AsyncIterable<Buffer>[],
  chunkEntryCount: number,
  keep?: EncodedEntryFilter,
): AsyncGenerator<Buffer> {
  let live: MergeInput[] = [];
  for (const input of inputs) {
    const cursor = new MergeInput(input[Symbol.asyncIterator]());
    if (await cursor.refill()) live.push(cursor);
  }
  let out = allocEntryBuffer(chunkEntryCount);
  let filled = 0;
  // The last entry written, kept apart from `out` so duplicates across chunks are seen too.
  const last = new Uint32Array(ENTRY_SIZE_WORDS);
  let hasLast = false;
  while (live.length > 0) {
    // The input whose entry sorts first, and the runner-up: entries are taken from the first in
    // a run for as long as they sort before the runner-up's (one comparison per entry instead of
    // one per input; a stream's entries mostly sit together in one input).
    let best = live[0]!;
    let second: MergeInput | undefined;
    for (let i = 1; i < live.length; i += 1) {
      const candidate = live[i]!;
      if (compareEntries(candidate.words, candidate.entry, best.words, best.entry) < 0) {
        second = best;
        best = candidate;
      } else if (second === undefined || compareEntries(candidate.words, candidate.entry, second.words, second.entry) < 0) {
        second = candidate;
      }
    }
    for (;;) {
      const words = best.words;
      const entry = best.entry;
      const isNew = !hasLast || compareEntries(last, 0, words, entry) !== 0;
      if (isNew && (keep === undefined || keep(words, entry))) {
        const from = entry * ENTRY_SIZE_WORDS;
        const to = filled * ENTRY_SIZE_WORDS;
        const outWords = out.words;
        for (let word = 0; word < ENTRY_SIZE_WORDS; word += 1) {
          const value = words[from + word]!;
          outWords[to + word] = value;
          last[word] = value;
        }
        hasLast = true;
        filled += 1;
      }
      best.entry = entry + 1;
      if (filled === chunkEntryCount) {
        // The consumer is done with a chunk when it asks for the next: `out` is reused.
        yield out.bytes;
        filled = 0;
      }
      if (best.entry === best.entryCount) {
        if (!(await best.refill())) {
          const done = best;
          live = live.filter((input) => input !== done);
        }
        break;
      }
      if (second !== undefined && compareEntries(best.words, best.entry, second.words, second.entry) > 0) break;
    }
  }
  if (filled > 0) yield out.bytes.subarray(0, filled * ENTRY_SIZE_BYTES);
}

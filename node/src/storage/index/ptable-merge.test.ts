import { describe, expect, it } from 'vitest';
import { ENTRY_SIZE_BYTES, ENTRY_SIZE_WORDS, allocEntryBuffer, compareEntries, decodeEntry, encodeEntry, readUint53, splitHash } from './index-entry-codec.js';
import { mergeSortedChunks } from './ptable-merge.js';

type Entry = [hash: bigint, eventNumber: number, logPosition: number];

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function sortKey(a: Entry, b: Entry): number {
  if (a[0] !== b[0]) return a[0] > b[0] ? -1 : 1;
  if (a[1] !== b[1]) return b[1] - a[1];
  return b[2] - a[2];
}

/** One sorted input, handed out in chunks of `chunkEntryCount` (one reused buffer, as tables do). */
async function* inputOf(entries: Entry[], chunkEntryCount: number): AsyncGenerator<Buffer> {
  const sorted = [...entries].sort(sortKey);
  const buf = allocEntryBuffer(chunkEntryCount);
  for (let first = 0; first < sorted.length; first += chunkEntryCount) {
    const n = Math.min(chunkEntryCount, sorted.length - first);
    for (let i = 0; i < n; i += 1) {
      const [hash, eventNumber, logPosition] = sorted[first + i]!;
      encodeEntry(buf.words, i, splitHash(hash), eventNumber, logPosition);
    }
    yield buf.bytes.subarray(0, n * ENTRY_SIZE_BYTES);
  }
}

async function mergeAll(inputs: Entry[][], inputChunk: number, outChunk: number, keep?: (e: Entry) => boolean): Promise<Entry[]> {
  const out: Entry[] = [];
  const filter = keep && ((words: Uint32Array, i: number) => {
    const e = decodeEntry(words, i);
    return keep([e.streamHash, e.eventNumber, e.logPosition]);
  });
  for await (const chunk of mergeSortedChunks(inputs.map((entries) => inputOf(entries, inputChunk)), outChunk, filter)) {
    const words = new Uint32Array(chunk.buffer, chunk.byteOffset, chunk.length / 4);
    for (let i = 0; i < chunk.length / ENTRY_SIZE_BYTES; i += 1) {
      if (out.length > 0) {
        // Strictly sorted: no exact duplicate survives.
        const prev = allocEntryBuffer(1);
        const [h, n, p] = out[out.length - 1]!;
        encodeEntry(prev.words, 0, splitHash(h), n, p);
        expect(compareEntries(prev.words, 0, words, i)).toBeLessThan(0);
      }
      const e = decodeEntry(words, i);
      expect(readUint53(words, i * ENTRY_SIZE_WORDS + 4)).toBe(e.logPosition);
      out.push([e.streamHash, e.eventNumber, e.logPosition]);
    }
  }
  return out;
}

describe('mergeSortedChunks', () => {
  it('equals sort + dedupe + filter of all inputs (randomised: runs, duplicates, collisions)', async () => {
    for (let seed = 1; seed <= 40; seed += 1) {
      const random = prng(seed);
      const inputCount = 1 + Math.floor(random() * 6);
      const inputs: Entry[][] = [];
      const all: Entry[] = [];
      for (let k = 0; k < inputCount; k += 1) {
        const entries: Entry[] = [];
        const n = Math.floor(random() * 120);
        for (let i = 0; i < n; i += 1) {
          // Runs of one hash (a stream's events), some entries repeated in other inputs.
          const e: Entry = random() < 0.15 && all.length > 0
            ? all[Math.floor(random() * all.length)]!
            : [BigInt(Math.floor(random() * 12)) * 0x9e3779b97f4a7c15n % (1n << 64n), Math.floor(random() * 20), Math.floor(random() * 500)];
          entries.push(e);
          all.push(e);
        }
        inputs.push(entries);
      }
      const keep = seed % 2 === 0 ? (e: Entry) => e[2] % 3 !== 0 : undefined;
      const expected: Entry[] = [];
      for (const e of [...all].sort(sortKey)) {
        const prev = expected.at(-1);
        if (prev && prev[0] === e[0] && prev[1] === e[1] && prev[2] === e[2]) continue;
        if (keep && !keep(e)) continue;
        expected.push(e);
      }
      // Filtered-out entries are not "last written": a duplicate of one is filtered too.
      const got = await mergeAll(inputs, 1 + Math.floor(random() * 9), 1 + Math.floor(random() * 7), keep);
      expect(got).toEqual(expected);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { crc32Combine } from './crc32-combine.js';

describe('crc32Combine', () => {
  it('equals the crc32 of the concatenation, for any split', () => {
    const data = randomBytes(300_000);
    for (const cut of [0, 1, 2, 3, 7, 8, 255, 4096, 65_537, 150_000, 299_999, 300_000]) {
      const a = data.subarray(0, cut);
      const b = data.subarray(cut);
      expect(crc32Combine(crc32(a), crc32(b), b.length), `cut ${cut}`).toBe(crc32(data));
    }
  });

  it('chains over many pieces, as a chunk rewrite does', () => {
    const data = randomBytes(2 * 1024 * 1024 + 13);
    let crc = 0;
    let at = 0;
    for (let i = 1; at < data.length; i++) {
      const piece = data.subarray(at, Math.min(data.length, at + i * 977));
      crc = crc32Combine(crc, crc32(piece), piece.length);
      at += piece.length;
    }
    expect(crc).toBe(crc32(data));
  });
});

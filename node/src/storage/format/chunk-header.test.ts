import { describe, expect, it } from 'vitest';
import { chunkFileName, decodeChunkFooter, decodeChunkHeader, encodeChunkFooter, encodeChunkHeader, parseChunkFileName } from './chunk-header.js';

const header = { chunkSizeBytes: 268435456, chunkStartNumber: 3, chunkEndNumber: 7, isScavenged: true, chunkId: '6ba7b810-9dad-11d1-80b4-00c04fd430c8' };
const footer = { isCompleted: true, physicalDataSizeBytes: 1000, logicalDataSizeBytes: 2 ** 33, mapCount: 12, dataCrc32: 0xdeadbeef };

describe('chunk header and footer', () => {
  it('round-trip', () => {
    expect(decodeChunkHeader(encodeChunkHeader(header))).toEqual(header);
    expect(decodeChunkFooter(encodeChunkFooter(footer))).toEqual(footer);
  });

  it('catch a flipped byte anywhere', () => {
    for (const [encoded, decode] of [[encodeChunkHeader(header), decodeChunkHeader], [encodeChunkFooter(footer), decodeChunkFooter]] as const) {
      for (let i = 0; i < encoded.length; i++) {
        const copy = Buffer.from(encoded);
        copy[i] = copy[i]! ^ 0x01;
        expect(() => decode(copy), `byte ${i}`).toThrow();
      }
    }
  });

  it('names chunk files chunk-XXXXXX.YYYYYY', () => {
    expect(chunkFileName(12, 3)).toBe('chunk-000012.000003');
    expect(parseChunkFileName('chunk-000012.000003')).toEqual({ chunkNumber: 12, version: 3 });
    expect(parseChunkFileName('chunk-12.3')).toBeUndefined();
    expect(parseChunkFileName('chunk-000012.000003.tmp')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { MemoryBlockFile } from '../../platform/block-file.js';
import { writeInt64 } from '../format/binary.js';
import { POSMAP_ENTRY_BYTES, PositionMap } from './position-map.js';

/** A map of `count` entries after `offset` bytes of other data; physical 10*i, logical 17*i + 3. */
function mapFile(count: number, offset: number): MemoryBlockFile {
  const bytes = Buffer.alloc(offset + count * POSMAP_ENTRY_BYTES);
  for (let i = 0; i < count; i++) {
    bytes.writeUInt32LE(10 * i, offset + i * POSMAP_ENTRY_BYTES);
    writeInt64(bytes, 17 * i + 3 + (i > count / 2 ? 2 ** 33 : 0), offset + i * POSMAP_ENTRY_BYTES + 4);
  }
  return new MemoryBlockFile('m', bytes);
}

const logicalOf = (i: number, count: number): number => 17 * i + 3 + (i > count / 2 ? 2 ** 33 : 0);

describe('PositionMap (searched in the file)', () => {
  for (const count of [0, 1, 127, 128, 129, 1000]) {
    it(`finds every entry and every gap, ${count} entries`, () => {
      const map = new PositionMap(mapFile(count, 100), 100, count);
      expect(map.count).toBe(count);
      for (let i = 0; i < count; i++) {
        expect(map.physicalAt(i)).toBe(10 * i);
        expect(map.logicalAt(i)).toBe(logicalOf(i, count));
        expect(map.lowerBoundPhysical(10 * i)).toBe(i);
        expect(map.lowerBoundPhysical(10 * i - 5)).toBe(i);
        expect(map.lowerBoundLogical(logicalOf(i, count))).toBe(i);
        expect(map.lowerBoundLogical(logicalOf(i, count) - 1)).toBe(i);
      }
      expect(map.lowerBoundPhysical(10 * count)).toBe(count);
      expect(map.lowerBoundLogical(2 ** 40)).toBe(count);
      expect(map.lowerBoundLogical(-1)).toBe(0);
    });
  }

  it('samples a map bigger than one sampling read (128 pages)', () => {
    const count = 128 * 128 * 2 + 300;
    const map = new PositionMap(mapFile(count, 7), 7, count);
    for (let i = 0; i < count; i += 61) {
      expect(map.lowerBoundLogical(logicalOf(i, count))).toBe(i);
      expect(map.lowerBoundPhysical(10 * i - 1)).toBe(i);
    }
    expect(map.lowerBoundLogical(logicalOf(count - 1, count))).toBe(count - 1);
    expect(map.lowerBoundPhysical(10 * count)).toBe(count);
  });

  it('answers random lookups in any order (page reloads)', () => {
    const count = 5000;
    const map = new PositionMap(mapFile(count, 0), 0, count);
    for (let k = 0; k < 2000; k++) {
      const i = (k * 7919) % count;
      expect(map.lowerBoundLogical(logicalOf(i, count))).toBe(i);
      expect(map.physicalAt(count - 1 - i)).toBe(10 * (count - 1 - i));
    }
  });
});

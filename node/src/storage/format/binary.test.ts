import { describe, expect, it } from 'vitest';
import { isUuid, readInt64, readUuid, utf8LengthBytes, writeInt64, writeUtf8, writeUuid } from './binary.js';

describe('binary helpers', () => {
  it('round-trip UUIDs in either case and reject malformed ones', () => {
    for (let i = 0; i < 200; i++) {
      const id = crypto.randomUUID();
      const buf = Buffer.alloc(20);
      writeUuid(buf, id.toUpperCase(), 2);
      expect(readUuid(buf, 2)).toBe(id);
      expect(buf.toString('hex', 2, 18)).toBe(id.replace(/-/g, ''));
      expect(isUuid(id) && isUuid(id.toUpperCase())).toBe(true);
    }
    for (const bad of ['', 'nope', '0f8fad5b-d9cb-469f-a165-70867728950', '0f8fad5b-d9cb-469f-a165-70867728950g',
      '0f8fad5bd-9cb-469f-a165-70867728950e', '0f8fad5b-d9cb-469f-a165-70867728950e0', '{0f8fad5b-d9cb-469f-a165-70867728950e}']) {
      expect(isUuid(bad), bad).toBe(false);
    }
  });

  it('round-trip 53-bit and negative int64 values', () => {
    const buf = Buffer.alloc(8);
    for (const v of [0, 1, -1, 2 ** 32, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER, -(2 ** 40) - 3]) {
      writeInt64(buf, v, 0);
      expect(readInt64(buf, 0)).toBe(v);
    }
  });

  it('write UTF-8 exactly as Buffer does: ASCII, multi-byte, surrogate pairs, lone surrogates, long strings', () => {
    for (const text of ['', 'orders-1', 'commande-é', '注文', 'emoji-😀', 'lone-\ud800-x', 'x'.repeat(65), `é${'y'.repeat(80)}`]) {
      expect(utf8LengthBytes(text)).toBe(Buffer.byteLength(text, 'utf8'));
      const out = Buffer.alloc(utf8LengthBytes(text) + 2, 0xee);
      const n = writeUtf8(out, text, 1);
      expect(n).toBe(Buffer.byteLength(text, 'utf8'));
      expect(out.subarray(1, 1 + n)).toEqual(Buffer.from(text, 'utf8'));
      expect(out[0]).toBe(0xee);
      expect(out[1 + n]).toBe(0xee);
    }
  });
});


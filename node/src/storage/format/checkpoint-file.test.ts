import { describe, expect, it } from 'vitest';
import { CHECKPOINT_FILE_SIZE_BYTES, checkpointSlotOffset, decodeCheckpointFile, encodeCheckpointSlot } from './checkpoint-file.js';

function fileWith(...slots: { sequence: number; value: number }[]): Buffer {
  const buf = Buffer.alloc(CHECKPOINT_FILE_SIZE_BYTES);
  for (const s of slots) encodeCheckpointSlot(s).copy(buf, checkpointSlotOffset(s.sequence));
  return buf;
}

describe('checkpoint file', () => {
  it('returns the slot with the newer sequence', () => {
    expect(decodeCheckpointFile(fileWith({ sequence: 4, value: 100 }, { sequence: 5, value: 200 }))).toEqual({ sequence: 5, value: 200 });
    expect(decodeCheckpointFile(fileWith({ sequence: 7, value: -1 }, { sequence: 6, value: 2 ** 45 }))).toEqual({ sequence: 7, value: -1 });
  });

  it('falls back to the older slot when the newer one is torn', () => {
    const buf = fileWith({ sequence: 4, value: 100 }, { sequence: 5, value: 200 });
    buf.writeUInt8(buf.readUInt8(checkpointSlotOffset(5) + 9) ^ 0xff, checkpointSlotOffset(5) + 9); // a torn write of the newer slot
    expect(decodeCheckpointFile(buf)).toEqual({ sequence: 4, value: 100 });
  });

  it('handles sequence wrap-around', () => {
    expect(decodeCheckpointFile(fileWith({ sequence: 0xffffffff, value: 1 }, { sequence: 0, value: 2 }))?.value).toBe(2);
  });

  it('reports a file with no valid slot', () => {
    expect(decodeCheckpointFile(Buffer.alloc(CHECKPOINT_FILE_SIZE_BYTES))).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { PrepareFlags, RecordType, commitFramedSizeBytes, decodeFrame, encodeCommit, encodePrepare, encodeSystem, sealFrames, systemFramedSizeBytes } from './record.js';

function samplePrepare(logPosition: number) {
  return {
    logPosition, flags: PrepareFlags.Data | PrepareFlags.IsJson, transactionPosition: logPosition, transactionOffset: 0,
    eventNumber: 41, eventId: '0f8fad5b-d9cb-469f-a165-70867728950e', timestampMs: 1_700_000_000_123,
    stream: 'order-ünïcode', eventType: 'OrderPlaced', data: Buffer.from('{"a":1}'), metadata: Buffer.from('{"m":true}'),
  };
}

describe('record codec', () => {
  it('round-trips a prepare record', () => {
    const buf = Buffer.alloc(1024);
    const size = encodePrepare(buf, 0, samplePrepare(12345));
    const frame = decodeFrame(buf, 0, size, 12345);
    expect(frame.kind).toBe('record');
    if (frame.kind !== 'record') return;
    expect(frame.frameSizeBytes).toBe(size);
    expect(frame.record).toMatchObject({ ...samplePrepare(12345), type: RecordType.Prepare });
  });

  it('round-trips commit and system records, including 53-bit numbers', () => {
    const buf = Buffer.alloc(1024);
    const big = Number.MAX_SAFE_INTEGER;
    const c = encodeCommit(buf, 0, { logPosition: 2 ** 40, transactionPosition: 2 ** 40 - 100, firstEventNumber: big, eventCount: 3, timestampMs: 5 });
    expect(c).toBe(commitFramedSizeBytes());
    const f1 = decodeFrame(buf, 0, c, 2 ** 40);
    expect(f1.kind === 'record' && f1.record).toMatchObject({ type: RecordType.Commit, firstEventNumber: big, eventCount: 3 });
    const s = encodeSystem(buf, c, { logPosition: 7, timestampMs: 9, systemRecordType: 1, data: Buffer.from('{"epochNumber":2}') });
    expect(s).toBe(systemFramedSizeBytes(17));
    const f2 = decodeFrame(buf, c, c + s, 7);
    expect(f2.kind === 'record' && f2.record.type).toBe(RecordType.System);
  });

  it('detects every single flipped byte in a frame', () => {
    const buf = Buffer.alloc(512);
    const size = encodePrepare(buf, 0, samplePrepare(0));
    for (let i = 0; i < size; i++) {
      const copy = Buffer.from(buf.subarray(0, size));
      copy[i] = copy[i]! ^ 0x5a;
      const frame = decodeFrame(copy, 0, size, 0);
      expect(frame.kind, `byte ${i}`).not.toBe('record');
    }
  });

  it('reports a torn tail (frame cut short) as torn, and zeros as the end', () => {
    const buf = Buffer.alloc(512);
    const size = encodePrepare(buf, 0, samplePrepare(0));
    for (const cut of [5, 20, size - 1]) {
      expect(decodeFrame(buf, 0, cut, 0).kind).not.toBe('record');
    }
    expect(decodeFrame(Buffer.alloc(64), 0, 64, 0).kind).toBe('end');
  });

  it('sealFrames fills the checksums of unsealed frames: the batch equals one encoded sealed, and decodes', () => {
    const encodeAll = (out: Buffer, seal: boolean): number => {
      let p = 0;
      p += encodePrepare(out, p, samplePrepare(p), seal);
      p += encodePrepare(out, p, samplePrepare(p), seal);
      p += encodeCommit(out, p, { logPosition: p, transactionPosition: 0, firstEventNumber: 41, eventCount: 2, timestampMs: 5 }, seal);
      p += encodeSystem(out, p, { logPosition: p, timestampMs: 9, systemRecordType: 1, data: Buffer.from('{}') }, seal);
      return p;
    };
    const sealed = Buffer.alloc(1024);
    const unsealed = Buffer.alloc(1024);
    const size = encodeAll(sealed, true);
    expect(encodeAll(unsealed, false)).toBe(size);
    // Unsealed frames do not decode: a writer that forgot to seal would be caught on read.
    expect(decodeFrame(unsealed, 0, size, 0)).toMatchObject({ kind: 'torn', reason: 'checksum mismatch' });
    expect(sealFrames(unsealed, 0, size)).toBe(4);
    expect(unsealed.subarray(0, size).equals(sealed.subarray(0, size))).toBe(true);
  });

  it('sealFrames refuses bytes that are not whole frames', () => {
    const buf = Buffer.alloc(1024);
    const size = encodePrepare(buf, 0, samplePrepare(0), false);
    expect(() => sealFrames(buf, 0, size - 1)).toThrow(/no frame at offset 0/);
    expect(() => sealFrames(buf, 0, size + 5)).toThrow(/stray bytes/);
    const damaged = Buffer.from(buf.subarray(0, size));
    damaged.writeUInt32LE(7, size - 4); // trailing length disagrees
    expect(() => sealFrames(damaged, 0, size)).toThrow(/no frame/);
    expect(() => sealFrames(Buffer.alloc(64), 0, 64)).toThrow(/no frame/);
  });

  it('rejects a valid record found at the wrong position', () => {
    const buf = Buffer.alloc(512);
    const size = encodePrepare(buf, 0, samplePrepare(100));
    expect(decodeFrame(buf, 0, size, 200)).toMatchObject({ kind: 'torn' });
  });
});

import { describe, expect, it } from 'vitest';
import { PrepareFlags, RecordType, encodeCommit, encodePrepare } from '../format/record.js';
import {
  StreamNameMemo, commitTransactionPositionAt, frameRecordType, prepareEventNumber, prepareFlags, prepareTimestampMs, prepareTransactionPosition,
} from './record-fields.js';

function prepare(stream: string, eventNumber: number) {
  return {
    logPosition: 2 ** 41 + 3, flags: PrepareFlags.Data | PrepareFlags.StreamDelete, transactionPosition: 2 ** 40 + 7, transactionOffset: 2,
    eventNumber, eventId: '0f8fad5b-d9cb-469f-a165-70867728950e', timestampMs: 1_700_000_000_123,
    stream, eventType: 'T', data: Buffer.from('{"a":1}'), metadata: Buffer.alloc(0),
  };
}

describe('record fields read in place', () => {
  it('agree with the record encoder for prepares and commits (offsets follow format/record.ts)', () => {
    const block = Buffer.alloc(1024);
    const at = 5;
    const size = encodePrepare(block, at, prepare('stream-ü', 2 ** 53 - 1));
    expect(frameRecordType(block, at)).toBe(RecordType.Prepare);
    expect(prepareFlags(block, at)).toBe(PrepareFlags.Data | PrepareFlags.StreamDelete);
    expect(prepareTransactionPosition(block, at)).toBe(2 ** 40 + 7);
    expect(prepareEventNumber(block, at)).toBe(2 ** 53 - 1);
    expect(prepareTimestampMs(block, at)).toBe(1_700_000_000_123);
    expect(new StreamNameMemo().remember(block, at)).toBe('stream-ü');
    encodeCommit(block, at + size, { logPosition: 9, transactionPosition: 2 ** 45 + 1, firstEventNumber: 0, eventCount: 1, timestampMs: 1 });
    expect(frameRecordType(block, at + size)).toBe(RecordType.Commit);
    expect(commitTransactionPositionAt(block, at + size)).toBe(2 ** 45 + 1);
  });

  it('StreamNameMemo recognises the same stream by its bytes, and only the same stream', () => {
    const block = Buffer.alloc(4096);
    let at = 0;
    const frames: number[] = [];
    for (const s of ['a-1', 'a-1', 'a-2', 'a-10', 'x'.repeat(300), 'x'.repeat(300)]) {
      frames.push(at);
      at += encodePrepare(block, at, prepare(s, 1));
    }
    const memo = new StreamNameMemo();
    expect(memo.same(block, frames[0]!)).toBe(false);
    expect(memo.remember(block, frames[0]!)).toBe('a-1');
    expect(memo.same(block, frames[1]!)).toBe(true);
    expect(memo.same(block, frames[2]!)).toBe(false);
    memo.remember(block, frames[2]!);
    expect(memo.same(block, frames[3]!)).toBe(false);
    expect(memo.remember(block, frames[4]!)).toBe('x'.repeat(300));
    expect(memo.same(block, frames[5]!)).toBe(true);
  });
});

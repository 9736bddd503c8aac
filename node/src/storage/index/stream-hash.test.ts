import { describe, expect, it } from 'vitest';
import { murmur3, murmur3Utf16, streamHash, xxHash32, xxHash32Utf16 } from './stream-hash.js';

const ascii = (text: string): Uint8Array => Buffer.from(text, 'latin1');
const utf16 = (text: string): Uint8Array => Buffer.from(text, 'utf16le');

describe('xxHash32', () => {
  it('matches the published vectors', () => {
    expect(xxHash32(ascii(''), 0)).toBe(0x02cc5d05);
    expect(xxHash32(ascii('abc'), 0)).toBe(0x32d153ff);
    expect(xxHash32(ascii('Nobody inspects the spammish repetition'), 0)).toBe(0xe2293b2f);
  });
});

describe('murmur3', () => {
  it('matches the published vectors', () => {
    expect(murmur3(ascii(''), 0)).toBe(0);
    expect(murmur3(ascii(''), 1)).toBe(0x514e28b7);
    expect(murmur3(ascii(''), 0xffffffff)).toBe(0x81f16f39);
    expect(murmur3(new Uint8Array(4), 0)).toBe(0x2362f9de);
    expect(murmur3(ascii('abc'), 0)).toBe(0xb3dd93fa);
    expect(murmur3(ascii('aaaa'), 0x9747b28c)).toBe(0x5a97808a);
    expect(murmur3(ascii('Hello, world!'), 0x9747b28c)).toBe(0x24884cba);
    const fox = 'The quick brown fox jumps over the lazy dog';
    expect(murmur3(ascii(fox), 0x9747b28c)).toBe(0x2fa826cd);
  });
});

describe('UTF-16 string hashes', () => {
  it('agree with the byte hashes over the UTF-16LE bytes for every length', () => {
    let text = '';
    for (let length = 0; length < 70; length += 1) {
      for (const seed of [0, 0xc58f1a7b]) {
        expect(xxHash32Utf16(text, seed)).toBe(xxHash32(utf16(text), seed));
        expect(murmur3Utf16(text, seed)).toBe(murmur3(utf16(text), seed));
      }
      text += String.fromCharCode((length * 7919 + 33) % 0xd7ff);
    }
  });

  it('composes (xxHash32 << 32) | murmur3 with the EventStoreDB seed', () => {
    const name = 'order-42';
    const expected = (BigInt(xxHash32(utf16(name), 0xc58f1a7b)) << 32n) |
      BigInt(murmur3(utf16(name), 0xc58f1a7b));
    expect(streamHash(name)).toBe(expected);
    expect(streamHash(name)).toBeLessThan(1n << 64n);
    expect(streamHash('a')).not.toBe(streamHash('b'));
  });
});

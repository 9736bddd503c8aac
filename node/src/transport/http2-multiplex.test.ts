import { describe, expect, it } from 'vitest';
import { classifyPreface } from './http2-multiplex.js';

describe('classifyPreface', () => {
  const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

  it('decides HTTP/2 only on the whole preface, and waits while the bytes still match it', () => {
    expect(classifyPreface(preface)).toBe('h2');
    expect(classifyPreface(Buffer.concat([preface, Buffer.from([0, 0, 0, 4])]))).toBe('h2');
    expect(classifyPreface(preface.subarray(0, 3))).toBe('undecided');
    expect(classifyPreface(preface.subarray(0, 23))).toBe('undecided');
  });

  it('sends anything else to HTTP/1.1 as soon as a byte differs', () => {
    expect(classifyPreface(Buffer.from('GET /health/live HTTP/1.1\r\n'))).toBe('http1');
    expect(classifyPreface(Buffer.from('POST'))).toBe('http1');
    expect(classifyPreface(Buffer.from('PRI * HTTP/1.1'))).toBe('http1');
  });
});

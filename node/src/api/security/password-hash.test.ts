import { describe, expect, it } from 'vitest';

import { hashPassword, parsePasswordHash, verifyPassword } from './password-hash.js';
import { parseBasicCredentials } from './http-auth.js';

describe('password-hash', () => {
  it('verifies the right password only, with a fresh salt per hash', async () => {
    const first = await hashPassword('s3cret');
    const second = await hashPassword('s3cret');
    expect(first.salt).not.toBe(second.salt);
    expect(first.hash).not.toBe(second.hash);
    expect(await verifyPassword('s3cret', first)).toBe(true);
    expect(await verifyPassword('s3cret ', first)).toBe(false);
    expect(await verifyPassword('', first)).toBe(false);
    expect(JSON.stringify(first)).not.toContain('s3cret');
  });

  it('round-trips through JSON and rejects malformed or too costly stored hashes', async () => {
    const stored = await hashPassword('pw');
    expect(parsePasswordHash(JSON.parse(JSON.stringify(stored)))).toEqual(stored);
    expect(parsePasswordHash({ ...stored, algorithm: 'md5' })).toBeUndefined();
    expect(
      parsePasswordHash({ ...stored, params: { ...stored.params, cost: 1 << 30 } }),
    ).toBeUndefined();
    expect(
      parsePasswordHash({ ...stored, params: { ...stored.params, cost: -1 } }),
    ).toBeUndefined();
    expect(await verifyPassword('pw', { ...stored, hash: '' })).toBe(false);
  });
});

describe('parseBasicCredentials', () => {
  const encode = (s: string): string => `Basic ${Buffer.from(s).toString('base64')}`;
  it('splits at the first colon and keeps colons in the password', () => {
    expect(parseBasicCredentials(encode('admin:change:it'))).toEqual({
      login: 'admin',
      password: 'change:it',
    });
    expect(parseBasicCredentials(`basic  ${Buffer.from('a:b').toString('base64')} `)).toEqual({
      login: 'a',
      password: 'b',
    });
  });
  it('treats other schemes as absent and broken Basic headers as malformed', () => {
    expect(parseBasicCredentials(undefined)).toBeUndefined();
    expect(parseBasicCredentials('Bearer x')).toBeUndefined();
    expect(parseBasicCredentials('Basic !!!')).toBe('malformed');
    expect(parseBasicCredentials(encode('nocolon'))).toBe('malformed');
    expect(parseBasicCredentials(encode(':pw'))).toBe('malformed');
  });
});

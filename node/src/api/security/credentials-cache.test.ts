import { describe, expect, it } from 'vitest';

import { CredentialsCache } from './credentials-cache.js';

const alice = { login: 'alice', groups: [] };

describe('CredentialsCache', () => {
  it('verifies once per credentials until cleared or expired', async () => {
    let nowMs = 0;
    const cache = new CredentialsCache({ nowMs: () => nowMs, entryTtlMs: 1000 });
    let calls = 0;
    const verify = async () => {
      calls += 1;
      return alice;
    };
    await Promise.all([cache.lookup('alice', 'pw', verify), cache.lookup('alice', 'pw', verify)]);
    expect(await cache.lookup('alice', 'pw', verify)).toEqual(alice);
    expect(calls).toBe(1);
    await cache.lookup('alice', 'other', verify);
    expect(calls).toBe(2);
    cache.clear();
    await cache.lookup('alice', 'pw', verify);
    expect(calls).toBe(3);
    nowMs = 1001;
    await cache.lookup('alice', 'pw', verify);
    expect(calls).toBe(4);
  });

  it('remembers failures briefly and apart from valid entries', async () => {
    let nowMs = 0;
    const cache = new CredentialsCache({ nowMs: () => nowMs, failureTtlMs: 100, entryCountMax: 2 });
    let calls = 0;
    const fail = async () => {
      calls += 1;
      return undefined;
    };
    await cache.lookup('alice', 'good', async () => alice);
    for (let guess = 0; guess < 5; guess++)
      expect(await cache.lookup('alice', `bad${guess}`, fail)).toBeUndefined();
    expect(await cache.lookup('alice', 'bad4', fail)).toBeUndefined();
    expect(calls).toBe(5);
    expect(await cache.lookup('alice', 'good', fail)).toEqual(alice);
    nowMs = 101;
    await cache.lookup('alice', 'bad4', fail);
    expect(calls).toBe(6);
  });

  it('does not cache a verification that raced with a change', async () => {
    const cache = new CredentialsCache({ nowMs: () => 0 });
    let release: () => void = () => undefined;
    const slow = cache.lookup('alice', 'pw', () => new Promise((r) => (release = () => r(alice))));
    cache.clear();
    release();
    expect(await slow).toEqual(alice);
    expect(cache.size).toBe(0);
  });
});

describe('CredentialsCache keys', () => {
  it('keeps logins and passwords apart even when their concatenations are equal', async () => {
    const cache = new CredentialsCache({ nowMs: () => 0 });
    let calls = 0;
    const verify = async () => {
      calls += 1;
      return alice;
    };
    await cache.lookup('a\0b', 'c', verify);
    await cache.lookup('a', 'b\0c', verify);
    await cache.lookup('a\0', 'bc', verify);
    expect(calls).toBe(3);
    await cache.lookup('a', 'b\0c', verify);
    expect(calls).toBe(3);
  });
});

/**
 * A small cache of recently verified Basic credentials, so that scrypt does not run on every
 * request of a keep-alive client.
 *
 * Keys are a SHA-256 of a random per-process secret, the login (length-prefixed) and the password:
 * the cache never holds a password or anything from which one could be checked offline after the
 * process ends. One-shot `crypto.hash` costs a fraction of an HMAC object per request. Entries
 * expire after a fixed time and the whole cache is cleared whenever any user changes, so a
 * disabled, deleted or re-passworded user stops authenticating at once. Concurrent checks of the
 * same credentials share one verification. A failed verification is remembered briefly, so a
 * misconfigured client retrying the same wrong password does not cost a hash per request.
 */
import { hash, randomBytes } from 'node:crypto';

import type { Principal } from '../auth-types.js';

export interface CredentialsCacheOptions {
  /** Entries kept at most; the oldest is evicted first. Default 1024. */
  readonly entryCountMax?: number;
  /** Lifetime of a verified entry in ms. Default 5 minutes. */
  readonly entryTtlMs?: number;
  /** Lifetime of a failed entry in ms. Default 2 seconds. */
  readonly failureTtlMs?: number;
  readonly nowMs: () => number;
}

interface Entry {
  /** Undefined for credentials that failed verification. */
  readonly principal: Principal | undefined;
  readonly expiresAtMs: number;
}

export class CredentialsCache {
  private readonly secret = randomBytes(32).toString('base64');
  private readonly entries = new Map<string, Entry>();
  /** Failures live apart, so a stream of wrong guesses cannot evict valid entries. */
  private readonly failures = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<Principal | undefined>>();
  private readonly entryCountMax: number;
  private readonly entryTtlMs: number;
  private readonly failureTtlMs: number;
  private readonly nowMs: () => number;
  /** Bumped on every clear, so a verification that started before a change is not cached. */
  private generation = 0;

  constructor(options: CredentialsCacheOptions) {
    this.entryCountMax = options.entryCountMax ?? 1024;
    this.entryTtlMs = options.entryTtlMs ?? 5 * 60_000;
    this.failureTtlMs = options.failureTtlMs ?? 2000;
    this.nowMs = options.nowMs;
  }

  /**
   * Returns the principal for the credentials, using `verify` on a miss. A successful
   * verification is cached for `entryTtlMs`, a failed one for `failureTtlMs` (a guesser trying
   * different passwords still pays one hash per guess).
   */
  async lookup(
    login: string,
    password: string,
    verify: () => Promise<Principal | undefined>,
  ): Promise<Principal | undefined> {
    const cacheKey = this.keyOf(login, password);
    const hit = this.entries.get(cacheKey) ?? this.failures.get(cacheKey);
    if (hit !== undefined && hit.expiresAtMs > this.nowMs()) return hit.principal;
    const pending = this.inFlight.get(cacheKey);
    if (pending !== undefined) return pending;
    const generation = this.generation;
    const verifying = verify().finally(() => this.inFlight.delete(cacheKey));
    this.inFlight.set(cacheKey, verifying);
    const principal = await verifying;
    if (generation === this.generation) this.store(cacheKey, principal);
    return principal;
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
    this.failures.clear();
    this.inFlight.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private store(cacheKey: string, principal: Principal | undefined): void {
    const map = principal === undefined ? this.failures : this.entries;
    const ttlMs = principal === undefined ? this.failureTtlMs : this.entryTtlMs;
    map.delete(cacheKey);
    if (map.size >= this.entryCountMax) {
      const oldest = map.keys().next();
      if (oldest.done !== true) map.delete(oldest.value);
    }
    map.set(cacheKey, { principal, expiresAtMs: this.nowMs() + ttlMs });
  }

  private keyOf(login: string, password: string): string {
    return hash('sha256', `${this.secret}\0${login.length}:${login}\0${password}`, 'base64');
  }
}

/**
 * A small cache of recently verified Basic credentials, so that scrypt does not run on every
 * request of a keep-alive client.
 *
 * Keys are an HMAC of (login, password) under a random per-process key: the cache never holds a
 * password or anything from which one could be checked offline after the process ends. Entries
 * expire after a fixed time and the whole cache is cleared whenever any user changes, so a
 * disabled, deleted or re-passworded user stops authenticating at once. Concurrent checks of the
 * same credentials share one verification.
 */
import { createHmac, randomBytes } from 'node:crypto';

import type { Principal } from '../auth-types.js';

export interface CredentialsCacheOptions {
  /** Entries kept at most; the oldest is evicted first. Default 1024. */
  readonly entryCountMax?: number;
  /** Lifetime of a verified entry in ms. Default 5 minutes. */
  readonly entryTtlMs?: number;
  readonly nowMs: () => number;
}

interface Entry {
  readonly principal: Principal;
  readonly expiresAtMs: number;
}

export class CredentialsCache {
  private readonly key = randomBytes(32);
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<Principal | undefined>>();
  private readonly entryCountMax: number;
  private readonly entryTtlMs: number;
  private readonly nowMs: () => number;
  /** Bumped on every clear, so a verification that started before a change is not cached. */
  private generation = 0;

  constructor(options: CredentialsCacheOptions) {
    this.entryCountMax = options.entryCountMax ?? 1024;
    this.entryTtlMs = options.entryTtlMs ?? 5 * 60_000;
    this.nowMs = options.nowMs;
  }

  /**
   * Returns the principal for the credentials, using `verify` on a miss. A successful
   * verification is cached; failures are not (they must stay expensive for a guesser).
   */
  async lookup(
    login: string,
    password: string,
    verify: () => Promise<Principal | undefined>,
  ): Promise<Principal | undefined> {
    const cacheKey = this.keyOf(login, password);
    const hit = this.entries.get(cacheKey);
    if (hit !== undefined && hit.expiresAtMs > this.nowMs()) return hit.principal;
    const pending = this.inFlight.get(cacheKey);
    if (pending !== undefined) return pending;
    const generation = this.generation;
    const verifying = verify().finally(() => this.inFlight.delete(cacheKey));
    this.inFlight.set(cacheKey, verifying);
    const principal = await verifying;
    if (principal !== undefined && generation === this.generation) this.store(cacheKey, principal);
    return principal;
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
    this.inFlight.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private store(cacheKey: string, principal: Principal): void {
    this.entries.delete(cacheKey);
    if (this.entries.size >= this.entryCountMax) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(cacheKey, { principal, expiresAtMs: this.nowMs() + this.entryTtlMs });
  }

  private keyOf(login: string, password: string): string {
    return createHmac('sha256', this.key)
      .update(login)
      .update('\0')
      .update(password)
      .digest('base64');
  }
}

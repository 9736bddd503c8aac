/**
 * Password hashing for internal users: scrypt (node:crypto) with a random per-user salt.
 *
 * The stored form carries its own parameters so that they can be raised later without
 * invalidating existing users. Verification recomputes the hash with the stored parameters and
 * compares in constant time. Plain passwords never leave this module except as scrypt input.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt cost parameters. N=2^14, r=8, p=1 costs ~16 MiB and tens of milliseconds per hash. */
export interface ScryptParams {
  readonly cost: number;
  readonly blockSize: number;
  readonly parallelization: number;
  readonly keyLengthBytes: number;
}

export interface PasswordHash {
  readonly algorithm: 'scrypt';
  /** Base64 of the derived key. */
  readonly hash: string;
  /** Base64 of the per-user random salt. */
  readonly salt: string;
  readonly params: ScryptParams;
}

export const SCRYPT_PARAMS_DEFAULT: ScryptParams = {
  cost: 16_384,
  blockSize: 8,
  parallelization: 1,
  keyLengthBytes: 32,
};

const SALT_SIZE_BYTES = 16;
const SCRYPT_COST_MAX = 131_072;
/** Headroom over 128 * N * r, which scrypt needs; node's default maxmem is only 32 MiB. */
const SCRYPT_MAXMEM_BYTES = 64 * 1024 * 1024;

export async function hashPassword(
  password: string,
  params: ScryptParams = SCRYPT_PARAMS_DEFAULT,
): Promise<PasswordHash> {
  const salt = randomBytes(SALT_SIZE_BYTES);
  const key = await deriveKey(password, salt, params);
  return {
    algorithm: 'scrypt',
    hash: key.toString('base64'),
    salt: salt.toString('base64'),
    params,
  };
}

/** True when `password` matches `stored`. Malformed stored hashes never match. */
export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  if (stored.algorithm !== 'scrypt') return false;
  const expected = Buffer.from(stored.hash, 'base64');
  if (expected.length === 0 || expected.length !== stored.params.keyLengthBytes) return false;
  const actual = await deriveKey(password, Buffer.from(stored.salt, 'base64'), stored.params);
  return timingSafeEqual(actual, expected);
}

/**
 * scrypt runs on libuv's thread pool, which the storage engine also needs for its fdatasync
 * calls: at most this many derivations run at once, so a burst of logins (or of wrong
 * passwords) cannot starve durable writes.
 */
const SCRYPT_CONCURRENCY_MAX = 2;
let scryptRunning = 0;
const scryptWaiting: Array<() => void> = [];

async function deriveKey(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  if (scryptRunning >= SCRYPT_CONCURRENCY_MAX) {
    await new Promise<void>((resolve) => scryptWaiting.push(resolve));
  }
  scryptRunning += 1;
  try {
    return await deriveKeyNow(password, salt, params);
  } finally {
    scryptRunning -= 1;
    scryptWaiting.shift()?.();
  }
}

function deriveKeyNow(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFC'),
      salt,
      params.keyLengthBytes,
      {
        N: params.cost,
        r: params.blockSize,
        p: params.parallelization,
        maxmem: SCRYPT_MAXMEM_BYTES,
      },
      (err, key) => (err === null ? resolve(key) : reject(err)),
    );
  });
}

/** Parses a stored hash read back from an event; undefined when the shape is not recognised. */
export function parsePasswordHash(value: unknown): PasswordHash | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const p = v['params'] as Record<string, unknown> | undefined;
  if (
    v['algorithm'] !== 'scrypt' ||
    typeof v['hash'] !== 'string' ||
    typeof v['salt'] !== 'string'
  ) {
    return undefined;
  }
  if (typeof p !== 'object' || p === null) return undefined;
  const params = {
    cost: p['cost'],
    blockSize: p['blockSize'],
    parallelization: p['parallelization'],
    keyLengthBytes: p['keyLengthBytes'],
  };
  if (!Object.values(params).every((n) => Number.isSafeInteger(n) && (n as number) > 0)) {
    return undefined;
  }
  // A user stream can be written by an admin through the streams API: bound the work a stored
  // hash can ask for, so a crafted record cannot make every login attempt exhaust memory.
  if ((params.cost as number) > SCRYPT_COST_MAX || (params.keyLengthBytes as number) > 256) {
    return undefined;
  }
  return { algorithm: 'scrypt', hash: v['hash'], salt: v['salt'], params: params as ScryptParams };
}

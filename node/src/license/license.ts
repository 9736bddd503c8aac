/**
 * Licence keys, verified offline. A key is a signed token:
 *
 *     edb1.<base64url(JSON payload)>.<base64url(Ed25519 signature of the payload bytes)>
 *
 * The payload names the licensee, the entitlements (`AUTO_SCAVENGE`, ...) and when the licence
 * was issued and expires (ISO 8601). The node ships the vendor's public key
 * (`SHIPPED_LICENSE_PUBLIC_KEY`); `--license-public-key` replaces it, for self-hosters who issue
 * their own keys and for tests. Pure apart from node:crypto: no file, clock or network access
 * (the caller passes the time).
 */
import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { z } from 'zod';

/** The entitlement that licenses auto-scavenge. */
export const AUTO_SCAVENGE_ENTITLEMENT = 'AUTO_SCAVENGE';

const TOKEN_PREFIX = 'edb1';

/**
 * The vendor's licence-signing public key (Ed25519, SubjectPublicKeyInfo DER, base64). Its
 * private half is held by whoever issues licences, never by the node.
 */
export const SHIPPED_LICENSE_PUBLIC_KEY = 'MCowBQYDK2VwAyEAX1bXn8F9pDFRNFlbBBg2M2NcqJyA1l7TRm8PBb5xRLo=';

export const LicensePayloadSchema = z.object({
  licensee: z.string().min(1),
  entitlements: z.array(z.string().min(1)),
  issuedAt: z.string().datetime({ offset: true }),
  expiresAt: z.string().datetime({ offset: true }),
});
export type LicensePayload = z.infer<typeof LicensePayloadSchema>;

export interface License extends LicensePayload {
  readonly expiresAtMs: number;
}

export type LicenseCheck =
  | { readonly kind: 'valid'; readonly license: License }
  /** Not a key, a key signed by someone else, or a payload that does not parse. */
  | { readonly kind: 'invalid'; readonly reason: string }
  | { readonly kind: 'expired'; readonly license: License };

/** Thrown by `parseLicensePublicKey` for a key that is not an Ed25519 public key. */
export class LicensePublicKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LicensePublicKeyError';
  }
}

/** A public key given as PEM (`-----BEGIN PUBLIC KEY-----`) or as base64 of its SPKI DER. */
export function parseLicensePublicKey(text: string): KeyObject {
  let key: KeyObject;
  try {
    key = text.includes('-----BEGIN')
      ? createPublicKey({ key: text, format: 'pem' })
      : createPublicKey({ key: Buffer.from(text.trim(), 'base64'), format: 'der', type: 'spki' });
  } catch (err: unknown) {
    throw new LicensePublicKeyError(`not a public key: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new LicensePublicKeyError(`an Ed25519 key is required, this one is ${String(key.asymmetricKeyType)}`);
  }
  return key;
}

/** Checks `token` against `publicKey` at `nowMs`. Never throws. */
export function verifyLicenseKey(token: string, publicKey: KeyObject, nowMs: number): LicenseCheck {
  const parts = token.trim().split('.');
  if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX) {
    return { kind: 'invalid', reason: `not a licence key (expected ${TOKEN_PREFIX}.<payload>.<signature>)` };
  }
  const payloadBytes = Buffer.from(parts[1]!, 'base64url');
  const signature = Buffer.from(parts[2]!, 'base64url');
  let signed: boolean;
  try {
    signed = verify(null, payloadBytes, publicKey, signature);
  } catch {
    signed = false;
  }
  if (!signed) return { kind: 'invalid', reason: 'the signature does not match the licence public key' };
  let json: unknown;
  try {
    json = JSON.parse(payloadBytes.toString('utf8'));
  } catch {
    return { kind: 'invalid', reason: 'the payload is not JSON' };
  }
  const parsed = LicensePayloadSchema.safeParse(json);
  if (!parsed.success) {
    return { kind: 'invalid', reason: `the payload is not a licence: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
  }
  const license: License = { ...parsed.data, expiresAtMs: Date.parse(parsed.data.expiresAt) };
  if (license.expiresAtMs <= nowMs) return { kind: 'expired', license };
  return { kind: 'valid', license };
}

/** Signs a licence payload: what a licence issuer (and the tests) do with the private key. */
export function issueLicenseKey(payload: LicensePayload, privateKey: KeyObject): string {
  const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
  const signature = sign(null, bytes, privateKey);
  return `${TOKEN_PREFIX}.${bytes.toString('base64url')}.${signature.toString('base64url')}`;
}

export function hasEntitlement(license: License, entitlement: string): boolean {
  return license.entitlements.includes(entitlement);
}

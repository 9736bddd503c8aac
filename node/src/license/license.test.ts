import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  AUTO_SCAVENGE_ENTITLEMENT,
  hasEntitlement,
  issueLicenseKey,
  LicensePublicKeyError,
  parseLicensePublicKey,
  SHIPPED_LICENSE_PUBLIC_KEY,
  verifyLicenseKey,
} from './license.js';

const NOW_MS = Date.parse('2026-06-01T00:00:00Z');
const keys = generateKeyPairSync('ed25519');
const payload = {
  licensee: 'ACME', entitlements: [AUTO_SCAVENGE_ENTITLEMENT],
  issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2027-01-01T00:00:00Z',
};

describe('licence keys', () => {
  it('a key signed by the matching private key is valid and carries its entitlements', () => {
    const check = verifyLicenseKey(issueLicenseKey(payload, keys.privateKey), keys.publicKey, NOW_MS);
    expect(check.kind).toBe('valid');
    if (check.kind !== 'valid') return;
    expect(check.license.licensee).toBe('ACME');
    expect(hasEntitlement(check.license, AUTO_SCAVENGE_ENTITLEMENT)).toBe(true);
    expect(hasEntitlement(check.license, 'OTHER')).toBe(false);
  });

  it('an expired key is reported as expired, with its date', () => {
    const token = issueLicenseKey({ ...payload, expiresAt: '2026-05-31T23:59:59Z' }, keys.privateKey);
    const check = verifyLicenseKey(token, keys.publicKey, NOW_MS);
    expect(check).toMatchObject({ kind: 'expired', license: { expiresAt: '2026-05-31T23:59:59Z' } });
  });

  it('a key signed by another key, a tampered payload and garbage are invalid with a reason', () => {
    const other = generateKeyPairSync('ed25519');
    const foreign = issueLicenseKey(payload, other.privateKey);
    expect(verifyLicenseKey(foreign, keys.publicKey, NOW_MS)).toEqual({
      kind: 'invalid', reason: 'the signature does not match the licence public key',
    });
    const [prefix, , signature] = issueLicenseKey(payload, keys.privateKey).split('.');
    const tampered = Buffer.from(JSON.stringify({ ...payload, expiresAt: '2099-01-01T00:00:00Z' })).toString('base64url');
    expect(verifyLicenseKey(`${prefix}.${tampered}.${signature}`, keys.publicKey, NOW_MS).kind).toBe('invalid');
    expect(verifyLicenseKey('hello', keys.publicKey, NOW_MS)).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('not a licence key') });
  });

  it('a signed payload that is not a licence is invalid', () => {
    const token = issueLicenseKey({ licensee: 'x' } as never, keys.privateKey);
    expect(verifyLicenseKey(token, keys.publicKey, NOW_MS)).toMatchObject({ kind: 'invalid', reason: expect.stringContaining('not a licence') });
  });

  it('public keys are read as PEM or base64 DER; other key types are refused', () => {
    const pem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const der = keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    const token = issueLicenseKey(payload, keys.privateKey);
    expect(verifyLicenseKey(token, parseLicensePublicKey(pem), NOW_MS).kind).toBe('valid');
    expect(verifyLicenseKey(token, parseLicensePublicKey(der), NOW_MS).kind).toBe('valid');
    expect(parseLicensePublicKey(SHIPPED_LICENSE_PUBLIC_KEY).asymmetricKeyType).toBe('ed25519');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(() => parseLicensePublicKey(rsa)).toThrow(LicensePublicKeyError);
    expect(() => parseLicensePublicKey('not a key')).toThrow(/not a public key/);
  });
});

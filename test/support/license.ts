/**
 * Test licences: a key pair made for the test run, keys signed with it, and the node options
 * that make a node trust it (`--license-public-key`) instead of the key it ships.
 */
import { generateKeyPairSync } from 'node:crypto';
import { AUTO_SCAVENGE_ENTITLEMENT, issueLicenseKey, type LicensePayload } from '../../node/src/license/license.js';

export interface TestLicensing {
  /** Base64 SPKI DER of the test public key. */
  readonly publicKey: string;
  /** A key valid for a year with AUTO_SCAVENGE, unless `overrides` say otherwise. */
  key(overrides?: Partial<LicensePayload>): string;
  /** `--license-key <key> --license-public-key <public key>`. */
  args(key?: string): string[];
}

export function testLicensing(): TestLicensing {
  const pair = generateKeyPairSync('ed25519');
  const publicKey = pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const key = (overrides: Partial<LicensePayload> = {}): string => issueLicenseKey({
    licensee: 'EventDB tests',
    entitlements: [AUTO_SCAVENGE_ENTITLEMENT],
    issuedAt: new Date(Date.now() - 60_000).toISOString(),
    expiresAt: new Date(Date.now() + 365 * 86_400_000).toISOString(),
    ...overrides,
  }, pair.privateKey);
  return { publicKey, key, args: (k = key()) => ['--license-key', k, '--license-public-key', publicKey] };
}

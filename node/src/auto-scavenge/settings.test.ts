import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AUTO_SCAVENGE_ENTITLEMENT, issueLicenseKey } from '../license/license.js';
import { resolveAutoScavengeSettings, type AutoScavengeSettingsInput } from './settings.js';

const NOW_MS = Date.parse('2026-06-01T00:00:00Z');
const keys = generateKeyPairSync('ed25519');
const publicKey = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const license = (over: Partial<{ entitlements: string[]; expiresAt: string }> = {}): string => issueLicenseKey({
  licensee: 'ACME', entitlements: [AUTO_SCAVENGE_ENTITLEMENT], issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2027-01-01T00:00:00Z', ...over,
}, keys.privateKey);
const input = (over: Partial<AutoScavengeSettingsInput> = {}): AutoScavengeSettingsInput => ({
  autoScavengeEnabled: true, licenseKey: license(), licensePublicKey: publicKey, dev: false, memDb: false, nowMs: NOW_MS, ...over,
});

describe('auto-scavenge settings', () => {
  it('a valid licence enables it by default', () => {
    expect(resolveAutoScavengeSettings(input()).kind).toBe('enabled');
  });

  it('off without a licence, with a refused or expired one, or without the entitlement', () => {
    expect(resolveAutoScavengeSettings(input({ licenseKey: '' }))).toMatchObject({ kind: 'disabled', reason: expect.stringContaining('no licence key') });
    expect(resolveAutoScavengeSettings(input({ licenseKey: 'edb1.x.y' }))).toMatchObject({ kind: 'disabled', level: 'error', reason: expect.stringContaining('licence key refused') });
    expect(resolveAutoScavengeSettings(input({ licenseKey: license({ expiresAt: '2026-05-01T00:00:00Z' }) })))
      .toMatchObject({ kind: 'disabled', level: 'error', reason: 'licence key expired on 2026-05-01T00:00:00Z; auto-scavenge is not enabled' });
    expect(resolveAutoScavengeSettings(input({ licenseKey: license({ entitlements: ['OTHER'] }) }))).toMatchObject({ kind: 'disabled', level: 'warn' });
  });

  it('a licence signed for another public key (the shipped one) is refused', () => {
    expect(resolveAutoScavengeSettings(input({ licensePublicKey: '' }))).toMatchObject({ kind: 'disabled', level: 'error' });
  });

  it('turned off by configuration', () => {
    expect(resolveAutoScavengeSettings(input({ autoScavengeEnabled: false }))).toMatchObject({ kind: 'disabled', reason: expect.stringContaining('disabled by configuration') });
  });

  it('licensed together with --dev or --mem-db: refused, unless turned off', () => {
    expect(resolveAutoScavengeSettings(input({ memDb: true }))).toMatchObject({ kind: 'refused', message: expect.stringContaining('cannot run with --mem-db') });
    expect(resolveAutoScavengeSettings(input({ dev: true }))).toMatchObject({ kind: 'refused', message: expect.stringContaining('cannot run with --dev') });
    expect(resolveAutoScavengeSettings(input({ memDb: true, autoScavengeEnabled: false })).kind).toBe('disabled');
    expect(resolveAutoScavengeSettings(input({ memDb: true, licenseKey: '' })).kind).toBe('disabled');
  });

  it('a public key option that is not an Ed25519 key is a startup error', () => {
    expect(resolveAutoScavengeSettings(input({ licensePublicKey: 'nope' }))).toMatchObject({ kind: 'refused', message: expect.stringContaining('--license-public-key') });
  });
});

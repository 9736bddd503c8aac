// Which CAs the operator trusts when it speaks https to the nodes, and what tls.mode Secret needs,
// against the in-memory KubeApi.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeKubeApi } from '../../runtime/fake-kube-api.js';
import type { KubeObject } from '../../runtime/kube-api.js';
import { SECRETS } from '../../runtime/resource-types.js';
import { effectiveSpec, type EffectiveSpec } from '../../resources/effective-spec.js';
import { createCertificateAuthority, createSignedCertificate } from '../../resources/tls/certificate.js';
import { ensureTlsSecrets, nodeTrustCertificates } from './children.js';

const cluster = { name: 'orders', namespace: 'shop', uid: 'u' };
const nowMs = Date.parse('2026-03-04T10:00:00Z');
const log = pino({ level: 'silent' });
const oldCa = createCertificateAuthority({ commonName: 'old CA', validityDays: 30, nowMs }).certificatePem;
const newCa = createCertificateAuthority({ commonName: 'new CA', validityDays: 30, nowMs });
const nodeCertificate = createSignedCertificate({ commonName: 'eventdb-node', validityDays: 30, nowMs }, newCa);

function spec(tls: unknown): EffectiveSpec {
  const check = effectiveSpec('orders', { replicas: 1, tls }, { nodeImage: 'eventdb:dev', dataSize: '1Gi' });
  if (!check.ok) throw new Error(check.issues.join('; '));
  return check.spec;
}

function secret(name: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'shop' },
    data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  };
}

describe('nodeTrustCertificates', () => {
  it('SelfSigned: the CA the operator made', async () => {
    const api = new FakeKubeApi();
    const selfSigned = spec({ mode: 'SelfSigned' });
    expect(await nodeTrustCertificates(api, cluster, selfSigned)).toEqual({ problem: 'no CA certificate to verify the nodes with in Secret orders-ca' });
    await ensureTlsSecrets(api, cluster, selfSigned, nowMs, log);
    const trust = await nodeTrustCertificates(api, cluster, selfSigned);
    expect('ca' in trust ? trust.ca : []).toHaveLength(1);
    expect('ca' in trust ? trust.ca[0] : '').toContain('BEGIN CERTIFICATE');
  });

  it('Secret with tls.caSecret: every key ending in .crt (old and new CA during a migration), nothing else', async () => {
    const api = new FakeKubeApi();
    api.seed(SECRETS, secret('orders-ca-bundle', { 'old.crt': oldCa, 'new.crt': newCa.certificatePem, 'ca.key': 'not trusted', 'notes.txt': 'no' }));
    const trust = await nodeTrustCertificates(api, cluster, spec({ mode: 'Secret', certificateSecret: { name: 'orders-tls' }, caSecret: { name: 'orders-ca-bundle' } }));
    expect(trust).toEqual({ ca: [newCa.certificatePem, oldCa] });
  });

  it('Secret without tls.caSecret: ca.crt beside the certificate, and SecretMissing without it', async () => {
    const api = new FakeKubeApi();
    const withoutCa = spec({ mode: 'Secret', certificateSecret: { name: 'orders-tls' } });
    api.seed(SECRETS, secret('orders-tls', { 'tls.crt': nodeCertificate.certificatePem, 'tls.key': nodeCertificate.privateKeyPem }));
    expect(await nodeTrustCertificates(api, cluster, withoutCa)).toEqual({ problem: 'no CA certificate to verify the nodes with in Secret orders-tls' });
    const missing = await ensureTlsSecrets(api, cluster, withoutCa, nowMs, log);
    expect(missing.missing).toEqual(['orders-tls (ca.crt, or name the CA\'s Secret in spec.tls.caSecret)']);

    const complete = new FakeKubeApi();
    complete.seed(SECRETS, secret('orders-tls', { 'tls.crt': nodeCertificate.certificatePem, 'tls.key': nodeCertificate.privateKeyPem, 'ca.crt': newCa.certificatePem }));
    expect(await nodeTrustCertificates(complete, cluster, withoutCa)).toEqual({ ca: [newCa.certificatePem] });
    const outcome = await ensureTlsSecrets(complete, cluster, withoutCa, nowMs, log);
    expect(outcome.missing).toEqual([]);
    expect(outcome.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

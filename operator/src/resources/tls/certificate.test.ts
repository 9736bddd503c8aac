import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { certificateFingerprint, createCertificateAuthority, createSignedCertificate } from './certificate.js';
import { integer, time } from './der.js';

const NOW_MS = Date.parse('2026-03-01T12:00:00Z');

describe('der', () => {
  it('encodes integers minimally, with a leading zero when the high bit is set', () => {
    expect(integer(2).toString('hex')).toBe('020102');
    expect(integer(128).toString('hex')).toBe('02020080');
    expect(integer(Buffer.from([0, 0, 0x7f])).toString('hex')).toBe('02017f');
    expect(integer(Buffer.from([0xff])).toString('hex')).toBe('020200ff');
  });

  it('writes UTCTime before 2050 and GeneralizedTime after', () => {
    expect(time(new Date('2026-03-01T12:00:00Z')).subarray(2).toString()).toBe('260301120000Z');
    expect(time(new Date('2051-01-02T03:04:05Z')).subarray(2).toString()).toBe('20510102030405Z');
  });
});

describe('certificates', () => {
  const ca = createCertificateAuthority({ commonName: 'orders CA', organization: 'eventdb', validityDays: 3650, nowMs: NOW_MS });
  const node = createSignedCertificate(
    {
      commonName: 'eventdb-node',
      subjectAltNames: ['*.orders-headless.shop.svc', 'orders-leader.shop.svc', '127.0.0.1', 'localhost'],
      validityDays: 365,
      nowMs: NOW_MS,
    },
    ca,
  );

  it('makes a CA that Node reads as a CA, valid for the years asked', () => {
    const certificate = new X509Certificate(ca.certificatePem);
    expect(certificate.ca).toBe(true);
    expect(certificate.subject).toBe('O=eventdb\nCN=orders CA');
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(Date.parse(certificate.validTo) - NOW_MS).toBe(3650 * 86_400_000);
  });

  it('makes a node certificate signed by the CA, with its names', () => {
    const certificate = new X509Certificate(node.certificatePem);
    const authority = new X509Certificate(ca.certificatePem);
    expect(certificate.ca).toBe(false);
    expect(certificate.subject).toBe('CN=eventdb-node');
    expect(certificate.issuer).toBe(authority.subject);
    expect(certificate.checkIssued(authority)).toBe(true);
    expect(certificate.verify(authority.publicKey)).toBe(true);
    expect(certificate.checkHost('orders-1.orders-headless.shop.svc')).toBe('*.orders-headless.shop.svc');
    expect(certificate.checkHost('orders-1.other-headless.shop.svc')).toBeUndefined();
    expect(certificate.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(certificate.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  });

  it('serves a real TLS connection that a client trusting only the CA accepts', async () => {
    const server = tls.createServer({ cert: node.certificatePem, key: node.privateKeyPem }, (socket) => socket.end('hello'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.certificatePem, servername: 'localhost' });
      const [data] = (await once(socket, 'data')) as [Buffer];
      expect(data.toString()).toBe('hello');
      expect(socket.authorized).toBe(true);
      socket.destroy();
      const stranger = createCertificateAuthority({ commonName: 'other', validityDays: 1, nowMs: Date.now() });
      const refused = tls.connect({ host: '127.0.0.1', port, ca: stranger.certificatePem, servername: 'localhost' });
      const [err] = (await once(refused, 'error')) as [Error & { code?: string }];
      expect(err.code).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    } finally {
      server.close();
    }
  });

  it('fingerprints a certificate by the SHA-256 of its DER bytes', () => {
    expect(certificateFingerprint(node.certificatePem)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(certificateFingerprint(node.certificatePem)).not.toBe(certificateFingerprint(ca.certificatePem));
  });
});

import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCa, issueCertificate, issueNodeCertificate, type CertificateFiles } from '../../../test/support/certificates.js';
import { loadTlsMaterial, missingTlsOptions, TlsMaterialError, type TlsSources } from './material.js';
import { describeMaterial } from './tls-state.js';

let dir: string;
let caA: CertificateFiles;
let caB: CertificateFiles;
let nodeA: CertificateFiles;
let rootsA: string;
let rootsAB: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edb-tls-material-'));
  caA = createCa(join(dir, 'ca'), 'ca-a', 'CA A');
  caB = createCa(join(dir, 'ca'), 'ca-b', 'CA B');
  nodeA = issueNodeCertificate(join(dir, 'node'), 'node-a', caA, 'eventdb-node');
  rootsA = join(dir, 'roots-a');
  mkdirSync(rootsA);
  copyFileSync(caA.certPath, join(rootsA, 'ca.crt'));
  rootsAB = join(dir, 'roots-ab');
  mkdirSync(rootsAB);
  copyFileSync(caA.certPath, join(rootsAB, 'old.pem'));
  copyFileSync(caB.certPath, join(rootsAB, 'new.crt'));
  writeFileSync(join(rootsAB, 'README.txt'), 'not a certificate, ignored by its extension');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sources(overrides: Partial<TlsSources> = {}): TlsSources {
  return {
    certificateFile: nodeA.certPath,
    certificatePrivateKeyFile: nodeA.keyPath,
    trustedRootCertificatesPath: rootsA,
    certificateReservedNodeCommonName: '',
    ...overrides,
  };
}

function failure(overrides: Partial<TlsSources>, nowMs?: number): string {
  try {
    loadTlsMaterial(sources(overrides), nowMs === undefined ? {} : { nowMs });
  } catch (err: unknown) {
    expect(err).toBeInstanceOf(TlsMaterialError);
    expect((err as TlsMaterialError).code).toBe('EDB_CERTIFICATE_INVALID');
    return (err as Error).message;
  }
  throw new Error('expected the material to be refused');
}

describe('loadTlsMaterial', () => {
  it('loads a node certificate, its key and the trusted roots; the reserved CN defaults to the certificate CN', () => {
    const material = loadTlsMaterial(sources(), { nowMs: Date.now() });
    expect(material.leaf.fingerprint256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(material.roots.map((r) => r.certificate.subject)).toEqual(['CN=CA A']);
    expect(material.reservedNodeCommonName).toBe('eventdb-node');
    expect(material.reservedNodeCommonNameSource).toBe('certificate');
    expect(material.warnings).toEqual([]);
    const info = describeMaterial(material, 600_000);
    expect(info).toMatchObject({
      subject: 'CN=eventdb-node',
      commonName: 'eventdb-node',
      issuer: 'CN=CA A',
      subjectAltNames: ['DNS:localhost', 'IP:127.0.0.1'],
      reservedNodeCommonName: 'eventdb-node',
      connectionResetIntervalSec: 600,
      trustedRoots: [{ fingerprintSha256: caFingerprint(caA), subject: 'CN=CA A' }],
    });
    expect(Date.parse(info.notAfter)).toBeGreaterThan(Date.now());
  });

  it('trusts every CA of the folder side by side and skips hidden entries and other files', () => {
    const roots = join(dir, 'k8s-like');
    mkdirSync(join(roots, '..2026_01_01'), { recursive: true });
    copyFileSync(caA.certPath, join(roots, '..2026_01_01', 'ca.crt'));
    copyFileSync(caB.certPath, join(roots, '..2026_01_01', 'next.crt'));
    symlinkSync('..2026_01_01', join(roots, '..data'));
    symlinkSync(join('..data', 'ca.crt'), join(roots, 'ca.crt'));
    symlinkSync(join('..data', 'next.crt'), join(roots, 'next.crt'));
    const material = loadTlsMaterial(sources({ trustedRootCertificatesPath: roots }));
    expect(material.roots.map((r) => r.certificate.subject).sort()).toEqual(['CN=CA A', 'CN=CA B']);
    const both = loadTlsMaterial(sources({ trustedRootCertificatesPath: rootsAB }));
    expect(both.roots).toHaveLength(2);
  });

  it('takes intermediates bundled after the node certificate, and names a partial chain without them', () => {
    const intermediate = issueCertificate(join(dir, 'int'), 'intermediate', caA, { commonName: 'Intermediate A', ca: true });
    const leaf = issueNodeCertificate(join(dir, 'int'), 'leaf', intermediate, 'eventdb-node');
    const bundle = join(dir, 'int', 'bundle.pem');
    writeFileSync(bundle, leaf.certPem + intermediate.certPem);
    const material = loadTlsMaterial(sources({ certificateFile: bundle, certificatePrivateKeyFile: leaf.keyPath }));
    expect(material.intermediates).toHaveLength(1);
    expect(material.certificateChainPem.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    const message = failure({ certificateFile: leaf.certPath, certificatePrivateKeyFile: leaf.keyPath });
    expect(message).toContain('does not chain to a trusted root');
    expect(message).toContain('partial chain');
    expect(message).toContain('Intermediate A');
  });

  it('refuses missing and unreadable files, naming the file and the option', () => {
    expect(failure({ certificateFile: join(dir, 'nope.crt') })).toBe(
      `certificate file ${join(dir, 'nope.crt')} (--certificate-file) does not exist`,
    );
    expect(failure({ certificatePrivateKeyFile: join(dir, 'nope.key') })).toBe(
      `private key file ${join(dir, 'nope.key')} (--certificate-private-key-file) does not exist`,
    );
    expect(failure({ trustedRootCertificatesPath: join(dir, 'nope') })).toContain('(--trusted-root-certificates-path) does not exist');
    expect(failure({ certificateFile: dir })).toContain('is a directory');
    const garbage = join(dir, 'garbage.pem');
    writeFileSync(garbage, 'hello');
    expect(failure({ certificateFile: garbage })).toContain('is not a PEM or DER certificate');
    expect(failure({ certificatePrivateKeyFile: garbage })).toContain('is not a PEM or DER (PKCS#8) private key');
    const empty = join(dir, 'empty-roots');
    mkdirSync(empty);
    expect(failure({ trustedRootCertificatesPath: empty })).toContain('no trusted root certificate');
  });

  it('refuses a key that does not match the certificate', () => {
    const other = issueNodeCertificate(join(dir, 'node'), 'other', caA);
    expect(failure({ certificatePrivateKeyFile: other.keyPath })).toMatch(
      /the private key in .*other\.key \(--certificate-private-key-file\) does not match the certificate 'CN=eventdb-node'/,
    );
  });

  it('refuses a certificate of an untrusted CA, an expired one, and a non-root in the roots folder', () => {
    const foreign = issueNodeCertificate(join(dir, 'node'), 'foreign', caB);
    expect(failure({ certificateFile: foreign.certPath, certificatePrivateKeyFile: foreign.keyPath })).toContain(
      "partial chain: no trusted root issued 'CN=eventdb-node'",
    );
    const expired = issueNodeCertificate(join(dir, 'node'), 'expired', caA, 'eventdb-node', { days: -1 });
    expect(failure({ certificateFile: expired.certPath, certificatePrivateKeyFile: expired.keyPath })).toMatch(/expired on \d{4}-/);
    expect(failure({}, Date.now() + 400 * 86_400_000)).toMatch(/expired on/);
    const badRoots = join(dir, 'bad-roots');
    mkdirSync(badRoots);
    copyFileSync(nodeA.certPath, join(badRoots, 'node.crt'));
    expect(failure({ trustedRootCertificatesPath: badRoots })).toContain('is not a root certificate');
  });

  it('honours the reserved node common name, wildcards included, and refuses a certificate without it', () => {
    const wildcardNode = issueNodeCertificate(join(dir, 'node'), 'n1', caA, 'node-1.cluster.test');
    const ok = loadTlsMaterial(
      sources({ certificateFile: wildcardNode.certPath, certificatePrivateKeyFile: wildcardNode.keyPath, certificateReservedNodeCommonName: '*.cluster.test' }),
    );
    expect(ok.reservedNodeCommonName).toBe('*.cluster.test');
    expect(ok.reservedNodeCommonNameSource).toBe('option');
    expect(failure({ certificateReservedNodeCommonName: 'other-node' })).toBe(
      "the certificate's common name 'eventdb-node' does not carry the reserved node common name 'other-node' " +
        '(--certificate-reserved-node-common-name): other nodes would refuse it',
    );
  });

  it('warns about certificates other nodes would refuse (no IP/DNS SAN, no clientAuth)', () => {
    const noSan = issueCertificate(join(dir, 'node'), 'nosan', caA, { commonName: 'eventdb-node' });
    const serverOnly = issueNodeCertificate(join(dir, 'node'), 'serveronly', caA, 'eventdb-node', { extendedKeyUsage: 'serverAuth' });
    expect(loadTlsMaterial(sources({ certificateFile: noSan.certPath, certificatePrivateKeyFile: noSan.keyPath })).warnings.join()).toContain(
      'names no DNS name or IP address',
    );
    expect(
      loadTlsMaterial(sources({ certificateFile: serverOnly.certPath, certificatePrivateKeyFile: serverOnly.keyPath })).warnings.join(),
    ).toContain('lacks clientAuth');
  });

  it('says which options a secure node is missing', () => {
    const none = { certificateFile: '', certificatePrivateKeyFile: '', trustedRootCertificatesPath: '', certificateReservedNodeCommonName: '' };
    expect(missingTlsOptions(none)).toEqual(['certificateFile', 'certificatePrivateKeyFile', 'trustedRootCertificatesPath']);
    expect(() => loadTlsMaterial(none)).toThrow(/--certificate-file, --certificate-private-key-file, --trusted-root-certificates-path[\s\S]*or --insecure/);
  });
});

function caFingerprint(ca: CertificateFiles): string {
  return new X509Certificate(ca.certPem).fingerprint256;
}

/**
 * TLS on a real node process: secure by default (no certificates and no --insecure: exit 2 with
 * what to pass), refused certificate material at startup (exit 2, the file named), --insecure as
 * a logged warning with no certificate in /info, and a node serving HTTPS with options given as
 * flags, YAML keys or SERVICE_* variables: /info reports the certificate it serves, clients need
 * no certificate, plain HTTP to the port gets no answer, appends and reads work.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { createCa, issueNodeCertificate } from '../support/certificates.js';
import { httpsRequest } from '../support/https-client.js';
import { newEvent } from '../support/http-client.js';
import { runNode, startNode, tempDir } from '../support/node-process.js';

const dir = tempDir('eventdb-tls-');
afterAll(() => dir.remove());

const ca = createCa(join(dir.path, 'ca'), 'ca', 'EventDB Test CA');
const otherCa = createCa(join(dir.path, 'ca'), 'other', 'Other CA');
const node = issueNodeCertificate(join(dir.path, 'node'), 'node', ca, 'eventdb-node');
const roots = join(dir.path, 'roots');
mkdirSync(roots);
copyFileSync(ca.certPath, join(roots, 'ca.crt'));
const flags = [
  '--certificate-file', node.certPath,
  '--certificate-private-key-file', node.keyPath,
  '--trusted-root-certificates-path', roots,
];

describe('secure by default', () => {
  it('refuses to start without certificates and without --insecure, saying what to pass (exit 2)', async () => {
    const run = await runNode(['--mem-db', '--http-port', '0']);
    expect(run.code).toBe(2);
    expect(run.output).toContain('the node serves TLS by default and is missing --certificate-file, --certificate-private-key-file, --trusted-root-certificates-path');
    expect(run.output).toContain('or --insecure to serve plain HTTP without TLS');
    const partial = await runNode(['--mem-db', '--http-port', '0', '--certificate-file', node.certPath]);
    expect(partial.code).toBe(2);
    expect(partial.output).toContain('is missing --certificate-private-key-file, --trusted-root-certificates-path:');
  });

  it('refuses certificates it cannot use, naming the file (exit 2)', async () => {
    const mismatched = await runNode(['--mem-db', '--http-port', '0', ...flags.slice(0, 2), '--certificate-private-key-file', ca.keyPath, ...flags.slice(4)]);
    expect(mismatched.code).toBe(2);
    expect(mismatched.output).toContain(`certificates refused: the private key in ${ca.keyPath} (--certificate-private-key-file) does not match the certificate`);
    const missing = await runNode(['--mem-db', '--http-port', '0', '--certificate-file', join(dir.path, 'gone.crt'), ...flags.slice(2)]);
    expect(missing.code).toBe(2);
    expect(missing.output).toContain(`certificates refused: certificate file ${join(dir.path, 'gone.crt')} (--certificate-file) does not exist`);
    const otherRoots = join(dir.path, 'other-roots');
    mkdirSync(otherRoots);
    copyFileSync(otherCa.certPath, join(otherRoots, 'other.pem'));
    const untrusted = await runNode(['--mem-db', '--http-port', '0', ...flags.slice(0, 4), '--trusted-root-certificates-path', otherRoots]);
    expect(untrusted.code).toBe(2);
    expect(untrusted.output).toContain('does not chain to a trusted root');
    expect(untrusted.output).toContain('partial chain');
  });

  it('runs --insecure as an explicit choice, logged as a warning, without a certificate in /info', async () => {
    const insecure = await startNode();
    try {
      const warning = insecure.output.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l['msg']).startsWith('running insecure'));
      expect(warning).toMatchObject({ level: 40 });
      expect(insecure.baseUrl.startsWith('http://')).toBe(true);
      const info = (await (await fetch(`${insecure.baseUrl}/info`)).json()) as Record<string, unknown>;
      expect(info['certificate']).toBeUndefined();
    } finally {
      expect(await insecure.stop()).toBe(0);
    }
  });
});

describe('a node serving HTTPS', () => {
  for (const form of ['flags', 'YAML', 'SERVICE_ variables'] as const) {
    it(`takes its certificates from ${form} and serves HTTPS to clients without a certificate`, async () => {
      const yaml = join(dir.path, `node-${form.length}.yaml`);
      writeFileSync(
        yaml,
        `CertificateFile: ${node.certPath}\nCertificatePrivateKeyFile: ${node.keyPath}\nTrustedRootCertificatesPath: ${roots}\n`,
      );
      const env = {
        SERVICE_CERTIFICATE_FILE: node.certPath,
        SERVICE_CERTIFICATE_PRIVATE_KEY_FILE: node.keyPath,
        SERVICE_TRUSTED_ROOT_CERTIFICATES_PATH: roots,
      };
      const secure = await startNode({
        insecure: false,
        ...(form === 'flags' ? { args: flags } : form === 'YAML' ? { args: ['--config', yaml] } : { env }),
      });
      try {
        expect(secure.baseUrl).toBe(`https://127.0.0.1:${secure.port}`);
        const info = await httpsRequest(`${secure.baseUrl}/info`, { ca: ca.certPem, auth: false });
        expect(info.status).toBe(200);
        const certificate = info.json().certificate;
        expect(certificate.fingerprintSha256).toBe(info.fingerprint);
        expect(certificate).toMatchObject({
          subject: 'CN=eventdb-node',
          issuer: 'CN=EventDB Test CA',
          subjectAltNames: ['DNS:localhost', 'IP:127.0.0.1'],
          reservedNodeCommonName: 'eventdb-node',
          connectionResetIntervalSec: 600,
          nodeLinks: [],
        });
        expect(certificate.trustedRoots).toHaveLength(1);
        expect(Date.parse(certificate.notAfter)).toBeGreaterThan(Date.now());
        expect(Date.parse(certificate.loadedAt)).toBeLessThanOrEqual(Date.now());
        expect(certificate.trustedRootsLoadedAt).toBe(certificate.loadedAt);

        const append = await httpsRequest(`${secure.baseUrl}/streams/tls-${form.length}`, {
          ca: ca.certPem,
          method: 'POST',
          headers: { 'content-type': 'application/vnd.eventstore.events+json' },
          body: JSON.stringify([newEvent('over-tls', { form })]),
        });
        expect(append.status).toBe(201);
        const read = await httpsRequest(`${secure.baseUrl}/streams/tls-${form.length}/0`, {
          ca: ca.certPem,
          headers: { accept: 'application/json' },
        });
        expect(read.status).toBe(200);
        expect(read.json()).toEqual({ form });

        // A client that does not trust the CA cannot talk to it; nor can plain HTTP.
        await expect(httpsRequest(`${secure.baseUrl}/info`, { ca: otherCa.certPem })).rejects.toThrow(/self-signed certificate in certificate chain|unable to get local issuer/);
        await expect(fetch(`http://127.0.0.1:${secure.port}/info`, { signal: AbortSignal.timeout(5_000) })).rejects.toThrow();
      } finally {
        expect(await secure.stop()).toBe(0);
      }
    });
  }
});

/**
 * Certificate renewal on a real node process, by a real SIGHUP and by POST /admin/reloadconfig,
 * while a client keeps appending over HTTPS:
 * - the endpoint answers 401 without ops/admin credentials;
 * - a failed reload (missing file by the endpoint: 400 with the reason; a key that does not match
 *   by SIGHUP and by the endpoint; a certificate of a CA the node does not trust) is logged as an
 *   error and changes nothing: the old certificate is still served to new connections, and the
 *   log level asked for in the same reload is not applied;
 * - a good reload (new CA replacing the old one in the trusted-roots folder, a certificate with
 *   another common name, a reserved node common name covering it) is served to the very next
 *   connection and shown by GET /info; a later reload by the endpoint works too;
 * - every append was acknowledged and every acknowledged event reads back.
 */
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { basic } from '../support/credentials.js';
import { createCa, issueNodeCertificate } from '../support/certificates.js';
import { httpsRequest, type HttpsResponse } from '../support/https-client.js';
import { newEvent } from '../support/http-client.js';
import { logLines, waitForLogLine } from '../support/node-log.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const dir = tempDir('eventdb-reload-tls-');
afterAll(() => dir.remove());

const ca1 = createCa(join(dir.path, 'ca'), 'ca1', 'CA One');
const ca2 = createCa(join(dir.path, 'ca'), 'ca2', 'CA Two');
const v1 = issueNodeCertificate(join(dir.path, 'issued'), 'v1', ca1, 'eventdb-node');
const v2 = issueNodeCertificate(join(dir.path, 'issued'), 'v2', ca2, 'node-v2.cluster.test');
const v3 = issueNodeCertificate(join(dir.path, 'issued'), 'v3', ca2, 'node-v3.cluster.test');
const ca3 = createCa(join(dir.path, 'ca'), 'ca3', 'CA Three (never trusted)');
const foreign = issueNodeCertificate(join(dir.path, 'issued'), 'foreign', ca3, 'eventdb-node');
const live = join(dir.path, 'live');
const roots = join(dir.path, 'roots');
mkdirSync(live);
mkdirSync(roots);
const certFile = join(live, 'node.crt');
const keyFile = join(live, 'node.key');
const configFile = join(dir.path, 'eventdb.yaml');
const TRUST = [ca1.certPem, ca2.certPem];

function configure(extra = ''): void {
  writeFileSync(
    configFile,
    `CertificateFile: ${certFile}\nCertificatePrivateKeyFile: ${keyFile}\nTrustedRootCertificatesPath: ${roots}\nLogLevel: info\n${extra}`,
  );
}

/** The node's log line whose `msg` matches, within 20 s. */
function waitForLine(node: NodeProcess, from: number, msg: RegExp): Promise<Record<string, unknown>> {
  return waitForLogLine(node, from, msg, 20_000);
}

function fingerprintOf(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

/** Appends one event per request over fresh HTTPS connections until stopped. */
function startWriter(node: NodeProcess, stream: string) {
  const acknowledged: string[] = [];
  const failures: string[] = [];
  let stopped = false;
  const done = (async () => {
    for (let i = 0; !stopped && i < 100_000; i++) {
      const event = newEvent('tick', { i });
      try {
        const res = await httpsRequest(`${node.baseUrl}/streams/${stream}`, {
          ca: TRUST,
          method: 'POST',
          headers: { 'content-type': 'application/vnd.eventstore.events+json' },
          body: JSON.stringify([event]),
        });
        if (res.status === 201) acknowledged.push(event.eventId);
        else failures.push(`HTTP ${res.status} ${res.text}`);
      } catch (err: unknown) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    acknowledged,
    failures,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

describe('certificate reload without a restart', () => {
  it('SIGHUP and POST /admin/reloadconfig replace the certificates; failed reloads change nothing', async () => {
    copyFileSync(v1.certPath, certFile);
    copyFileSync(v1.keyPath, keyFile);
    copyFileSync(ca1.certPath, join(roots, 'ca.crt'));
    configure();
    const node = await startNode({ insecure: false, args: ['--config', configFile] });
    const writer = startWriter(node, 'reload-tls-writes');
    const get = (path: string, ca: string | string[] = TRUST): Promise<HttpsResponse> => httpsRequest(`${node.baseUrl}${path}`, { ca, auth: false });
    const reload = (authorization?: string): Promise<HttpsResponse> =>
      httpsRequest(`${node.baseUrl}/admin/reloadconfig`, {
        ca: TRUST,
        method: 'POST',
        ...(authorization === undefined ? { auth: false } : { headers: { authorization } }),
      });
    try {
      const first = await get('/info');
      expect(first.fingerprint).toBe(fingerprintOf(v1.certPem));
      const firstLoadedAt = first.json().certificate.loadedAt as string;

      // Only ops and admins may reload.
      expect((await reload()).status).toBe(401);
      expect((await reload(basic('admin', 'wrong'))).status).toBe(401);
      const created = await httpsRequest(`${node.baseUrl}/users/`, {
        ca: TRUST,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ LoginName: 'plain', Password: 'plain-pw' }),
      });
      expect(created.status).toBe(201);
      expect((await reload(basic('plain', 'plain-pw'))).status).toBe(401);

      // A missing certificate file, by the endpoint: 400 with the reason; nothing changes, not
      // even the log level asked for in the same reload.
      writeFileSync(
        configFile,
        `CertificateFile: ${join(live, 'missing.crt')}\nCertificatePrivateKeyFile: ${keyFile}\nTrustedRootCertificatesPath: ${roots}\nLogLevel: debug\n`,
      );
      let mark = node.output.length;
      const missing = await reload(basic('ops', 'changeit'));
      expect(missing.status).toBe(400);
      expect(missing.text).toBe(
        `Configuration reload failed (certificates refused); nothing changed: certificate file ${join(live, 'missing.crt')} (--certificate-file) does not exist`,
      );
      expect(await waitForLine(node, mark, /^configuration reload failed, nothing changed: certificate file/)).toMatchObject({ level: 50 });
      expect((await get('/info')).fingerprint).toBe(fingerprintOf(v1.certPem));
      mark = node.output.length;
      await get('/info');
      await new Promise((r) => setTimeout(r, 300));
      expect(logLines(node, mark).some((l) => l['msg'] === 'request completed')).toBe(false);

      // A key that does not match the new certificate, by SIGHUP: logged, nothing changes.
      configure();
      copyFileSync(v2.certPath, certFile);
      mark = node.output.length;
      node.child.kill('SIGHUP');
      const mismatch = await waitForLine(node, mark, /^configuration reload failed, nothing changed: the private key in .* does not match the certificate/);
      expect(mismatch).toMatchObject({ level: 50, step: 'certificates', code: 'EDB_CERTIFICATE_INVALID' });
      const still = await get('/info');
      expect(still.fingerprint).toBe(fingerprintOf(v1.certPem));
      expect(still.json().certificate.fingerprintSha256).toBe(fingerprintOf(v1.certPem));
      // /info tells a signal's sender what happened: the file on disk is the new certificate,
      // the one served the old, and the last reload was refused, with the reason.
      expect(still.json().certificateOnDisk).toEqual({ fingerprintSha256: fingerprintOf(v2.certPem) });
      expect(still.json().lastReload).toMatchObject({ result: 'Refused', message: expect.stringMatching(/private key in .* does not match the certificate/) });
      // The same by the endpoint: 400 naming the files.
      mark = node.output.length;
      const mismatched = await reload(basic('admin', 'changeit'));
      expect(mismatched.status).toBe(400);
      expect(mismatched.text).toMatch(/^Configuration reload failed \(certificates refused\); nothing changed: the private key in /);
      expect(mismatched.text).toContain(`${keyFile} (--certificate-private-key-file) does not match the certificate`);
      expect(mismatched.text).toContain(`in ${certFile} (--certificate-file)`);
      expect(await waitForLine(node, mark, /^configuration reload failed, nothing changed: the private key/)).toMatchObject({ level: 50 });
      // A certificate not valid for this node (its CA is not among the trusted roots): refused too.
      copyFileSync(foreign.certPath, certFile);
      copyFileSync(foreign.keyPath, keyFile);
      const untrusted = await reload(basic('admin', 'changeit'));
      expect(untrusted.status).toBe(400);
      expect(untrusted.text).toContain("partial chain: no trusted root issued 'CN=eventdb-node'");
      expect((await get('/info')).fingerprint).toBe(fingerprintOf(v1.certPem));
      copyFileSync(v2.certPath, certFile);

      // The good reload by SIGHUP: new CA instead of the old one, a new common name covered by a
      // reserved node common name; the next connection gets the new certificate.
      copyFileSync(v2.keyPath, keyFile);
      copyFileSync(ca2.certPath, join(roots, 'ca.crt'));
      configure('CertificateReservedNodeCommonName: "*.cluster.test"\n');
      mark = node.output.length;
      node.child.kill('SIGHUP');
      const reloaded = await waitForLine(node, mark, /^configuration reloaded$/);
      expect(reloaded['changed']).toEqual({ CertificateReservedNodeCommonName: { from: '', to: '*.cluster.test' } });
      expect(await waitForLine(node, mark, /^certificates reloaded/)).toMatchObject({
        fingerprintSha256: fingerprintOf(v2.certPem),
        previousFingerprintSha256: fingerprintOf(v1.certPem),
        reservedNodeCommonName: '*.cluster.test',
      });
      const renewed = await get('/info');
      expect(renewed.fingerprint).toBe(fingerprintOf(v2.certPem));
      expect(renewed.json().lastReload).toMatchObject({ result: 'Applied' });
      expect(renewed.json().lastReload.message).toBeUndefined();
      expect(renewed.json().certificateOnDisk).toEqual({ fingerprintSha256: fingerprintOf(v2.certPem) });
      const certificate = renewed.json().certificate;
      expect(certificate).toMatchObject({
        fingerprintSha256: fingerprintOf(v2.certPem),
        commonName: 'node-v2.cluster.test',
        issuer: 'CN=CA Two',
        reservedNodeCommonName: '*.cluster.test',
        trustedRoots: [{ fingerprintSha256: fingerprintOf(ca2.certPem), subject: 'CN=CA Two' }],
      });
      expect(Date.parse(certificate.loadedAt)).toBeGreaterThan(Date.parse(firstLoadedAt));
      expect(certificate.trustedRootsLoadedAt).toBe(certificate.loadedAt);
      await expect(get('/info', ca1.certPem)).rejects.toThrow(/self-signed certificate in certificate chain|unable to get local issuer/);

      // A later reload by the endpoint works as well.
      copyFileSync(v3.certPath, certFile);
      copyFileSync(v3.keyPath, keyFile);
      const third = await reload(basic('admin', 'changeit'));
      expect(third.status).toBe(200);
      expect(third.json()).toEqual({ applied: [], needsRestart: [], certificateFingerprintSha256: fingerprintOf(v3.certPem) });
      expect((await get('/info')).fingerprint).toBe(fingerprintOf(v3.certPem));

      await writer.stop();
      expect(writer.failures).toEqual([]);
      expect(writer.acknowledged.length).toBeGreaterThan(5);
      const feed = await httpsRequest(`${node.baseUrl}/streams/reload-tls-writes/0/forward/${writer.acknowledged.length + 10}?embed=body`, {
        ca: TRUST,
        headers: { accept: 'application/vnd.eventstore.atom+json' },
      });
      expect(feed.status).toBe(200);
      const ids = (feed.json().entries as Array<{ eventId: string }>).map((e) => e.eventId);
      expect(new Set(ids)).toEqual(new Set(writer.acknowledged));
    } finally {
      await writer.stop();
      expect(await node.stop()).toBe(0);
    }
  });
});

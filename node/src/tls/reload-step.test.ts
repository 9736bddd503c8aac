import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCa, issueNodeCertificate, type CertificateFiles } from '../../../test/support/certificates.js';
import { loadConfig } from '../config/load.js';
import { createReloader } from '../reload/reload.js';
import { loadTlsMaterial } from './material.js';
import { createTlsReloadStep, TLS_LIVE_OPTIONS, tlsSourcesOf } from './reload-step.js';
import { createTlsState } from './tls-state.js';

let dir: string;
let ca: CertificateFiles;
let roots: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edb-tls-reload-'));
  ca = createCa(dir, 'ca');
  roots = join(dir, 'roots');
  mkdirSync(roots);
  copyFileSync(ca.certPath, join(roots, 'ca.crt'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the TLS reload step', () => {
  it('swaps the certificates only when the new ones are good, and honours a changed reserved common name', async () => {
    const one = issueNodeCertificate(dir, 'one', ca, 'node-v1.cluster.test');
    const two = issueNodeCertificate(dir, 'two', ca, 'node-v2.cluster.test');
    let yaml = `CertificateFile: ${one.certPath}\nCertificatePrivateKeyFile: ${one.keyPath}\nTrustedRootCertificatesPath: ${roots}\n`;
    const load = () => loadConfig({ argv: ['--config', 'c.yaml'], env: {}, readFile: () => yaml });
    const log = pino({ level: 'silent' });
    const state = createTlsState({ material: loadTlsMaterial(tlsSourcesOf(load().config)), connectionResetIntervalMs: 600_000, log });
    const reloader = createReloader({ load, initial: load().config, log });
    reloader.addStep('certificates', createTlsReloadStep(state), { liveOptions: TLS_LIVE_OPTIONS });
    const firstFingerprint = state.material().leaf.fingerprint256;

    // a key of another certificate: refused, nothing changes
    yaml = `CertificateFile: ${two.certPath}\nCertificatePrivateKeyFile: ${one.keyPath}\nTrustedRootCertificatesPath: ${roots}\nLogLevel: debug\n`;
    const refused = await reloader.reload();
    expect(refused).toMatchObject({ ok: false, failedAt: { step: 'certificates' }, error: { code: 'EDB_CERTIFICATE_INVALID' } });
    expect(state.material().leaf.fingerprint256).toBe(firstFingerprint);
    expect(reloader.current().certificateFile).toBe(one.certPath);

    // the new certificate with another common name, and a reserved name covering it
    yaml = `CertificateFile: ${two.certPath}\nCertificatePrivateKeyFile: ${two.keyPath}\nTrustedRootCertificatesPath: ${roots}\nCertificateReservedNodeCommonName: "*.cluster.test"\n`;
    const done = await reloader.reload();
    if (!done.ok) throw done.error;
    expect(done.applied.map((c) => c.option)).toEqual(['certificateFile', 'certificatePrivateKeyFile', 'certificateReservedNodeCommonName']);
    expect(done.needsRestart).toEqual([]);
    expect(state.material().leaf.fingerprint256).not.toBe(firstFingerprint);
    expect(state.describe()).toMatchObject({ commonName: 'node-v2.cluster.test', reservedNodeCommonName: '*.cluster.test' });
  });
});

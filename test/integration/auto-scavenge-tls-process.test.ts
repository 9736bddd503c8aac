/**
 * Auto-scavenge over TLS on a real licensed node: the scavenge admin routes accept a request
 * that presents a node certificate of the cluster in place of credentials (and refuse one
 * without either), and a scheduled cycle runs through the node's own peer agent even after the
 * admin password was changed, so the credentials the node holds no longer work: the node
 * authenticates by certificate.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCa, issueNodeCertificate } from '../support/certificates.js';
import { basic } from '../support/credentials.js';
import { httpsRequest } from '../support/https-client.js';
import { testLicensing } from '../support/license.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const dir = tempDir('eventdb-autoscavenge-tls-');
const ca = createCa(join(dir.path, 'ca'), 'ca', 'EventDB Test CA');
const cert = issueNodeCertificate(join(dir.path, 'node'), 'node', ca, 'eventdb-node');
const roots = join(dir.path, 'roots');
mkdirSync(roots);
copyFileSync(ca.certPath, join(roots, 'ca.crt'));
const NEW_PASSWORD = 'not-the-one-the-node-holds';

describe('auto-scavenge over TLS', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({
      insecure: false, memDb: false,
      args: [
        '--db', join(dir.path, 'db'), '--index', join(dir.path, 'index'),
        '--certificate-file', cert.certPath, '--certificate-private-key-file', cert.keyPath, '--trusted-root-certificates-path', roots,
        ...testLicensing().args(),
      ],
    });
  }, 90_000);
  afterAll(async () => {
    await node?.stop();
    dir.remove();
  });

  it('a node certificate stands for the system on the scavenge admin routes; nothing else does', async () => {
    const anonymous = await httpsRequest(`${node.baseUrl}/admin/scavenge/current`, { ca: ca.certPem, auth: false });
    expect(anonymous.status).toBe(401);
    const byCertificate = await httpsRequest(`${node.baseUrl}/admin/scavenge/current`, {
      ca: ca.certPem, auth: false, headers: { accept: 'application/json' }, clientCertificate: { cert: cert.certPem, key: cert.keyPem },
    });
    expect(byCertificate.status).toBe(200);
    // Other admin routes still want credentials.
    const users = await httpsRequest(`${node.baseUrl}/users/admin`, {
      ca: ca.certPem, auth: false, headers: { accept: 'application/json' }, clientCertificate: { cert: cert.certPem, key: cert.keyPem },
    });
    expect(users.status).toBe(401);
  });

  it('a cycle runs over HTTPS after the admin password changed', async () => {
    const reset = await httpsRequest(`${node.baseUrl}/users/admin/command/reset-password`, {
      ca: ca.certPem, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ newPassword: NEW_PASSWORD }),
    });
    expect(reset.status).toBe(200);
    const admin = basic('admin', NEW_PASSWORD);
    const configured = await httpsRequest(`${node.baseUrl}/auto-scavenge/configure`, {
      ca: ca.certPem, method: 'POST', headers: { authorization: admin, 'content-type': 'application/json' }, body: JSON.stringify({ schedule: '* * * * *' }),
    });
    expect(configured.status).toBe(200);
    const deadline = Date.now() + 100_000;
    let events: { eventType: string; data: string }[] = [];
    while (Date.now() < deadline) {
      const page = await httpsRequest(`${node.baseUrl}/streams/%24auto-scavenges/0/forward/50?embed=body`, {
        ca: ca.certPem, headers: { authorization: admin, accept: 'application/vnd.eventstore.atom+json' },
      });
      events = page.status === 200 ? page.json().entries.reverse() : [];
      if (events.some((e) => e.eventType === '$cluster-scavenge-completed')) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const completed = events.filter((e) => e.eventType === '$node-scavenge-completed').map((e) => JSON.parse(e.data));
    expect(completed, node.output.filter((l) => l.includes('auto-scavenge')).join('\n')).toHaveLength(1);
    expect(completed[0].result).toBe('Success');
    expect(events.at(-1)!.eventType).toBe('$cluster-scavenge-completed');
  }, 150_000);
});

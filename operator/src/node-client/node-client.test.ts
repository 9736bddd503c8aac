// The node client's TLS: the options it connects with (pure), and the transport against a real
// HTTPS server on loopback whose certificate names the pod's DNS name, not 127.0.0.1 — as a
// node behind a pod IP or a port-forward is. The client against real nodes: test/operator/.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificateFingerprint, createCertificateAuthority, createSignedCertificate } from '../resources/tls/certificate.js';
import { nodeCertificateNames } from '../resources/secrets.js';
import { NodeClient, NodeClientError, nodeTlsOptions } from './node-client.js';

const nowMs = Date.now();
const cluster = { name: 'orders', namespace: 'shop', uid: 'u' };
const ca = createCertificateAuthority({ commonName: 'orders CA', validityDays: 30, nowMs });
const otherCa = createCertificateAuthority({ commonName: 'other CA', validityDays: 30, nowMs });
// The operator's own node certificate names, without the loopback ones: the pod DNS names only.
const names = nodeCertificateNames(cluster).filter((name) => name !== 'localhost' && name !== '127.0.0.1');
const node = createSignedCertificate({ commonName: 'eventdb-node', subjectAltNames: names, validityDays: 30, nowMs }, ca);
const POD_NAME = 'orders-0.orders-headless.shop.svc';

describe('nodeTlsOptions', () => {
  it('trusts only the given CAs, verifies, and checks the node DNS name whatever address is dialled', () => {
    const options = nodeTlsOptions({ ca: [ca.certificatePem], serverName: POD_NAME });
    expect(options).toMatchObject({ ca: [ca.certificatePem], rejectUnauthorized: true, servername: POD_NAME });
    const certificate = { subject: { CN: 'eventdb-node' }, subjectaltname: `DNS:*.orders-headless.shop.svc` } as never;
    expect(options.checkServerIdentity?.('127.0.0.1', certificate)).toBeUndefined();
    const wrong = nodeTlsOptions({ ca: [ca.certificatePem], serverName: 'orders-0.billing-headless.shop.svc' });
    expect(wrong.checkServerIdentity?.('127.0.0.1', certificate)).toBeInstanceOf(Error);
  });
});

describe('NodeClient over https (a real TLS server on loopback)', () => {
  let server: Server;
  let baseUrl: string;
  const client = new NodeClient({ timeoutMs: 5000 });
  const gossip = { members: [{ instanceId: 'a', state: 'Leader', isAlive: true, httpEndPointIp: POD_NAME, httpEndPointPort: 2113 }] };

  beforeAll(async () => {
    server = createServer({ cert: node.certificatePem, key: node.privateKeyPem }, (req, res) => {
      if (req.url === '/gossip') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(gossip));
        return;
      }
      res.statusCode = req.headers.authorization === `Basic ${Buffer.from('ops:secret').toString('base64')}` ? 200 : 401;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('reads gossip from a node whose certificate chains to the cluster CA and names the pod, and reports that certificate', async () => {
    const observed = await client.observe({ baseUrl, tls: { ca: [ca.certificatePem], serverName: POD_NAME } });
    expect(observed.gossip.members[0]?.state).toBe('Leader');
    expect(observed.certificateFingerprint).toBe(certificateFingerprint(node.certificatePem));
    expect(await client.resign({ baseUrl, tls: { ca: [ca.certificatePem], serverName: POD_NAME } }, { username: 'ops', password: 'secret' })).toEqual({ kind: 'done' });
  });

  it('refuses a node signed by another CA, a node without the pod name, and https without a CA', async () => {
    const untrusted = client.gossip({ baseUrl, tls: { ca: [otherCa.certificatePem], serverName: POD_NAME } });
    await expect(untrusted).rejects.toBeInstanceOf(NodeClientError);
    await expect(untrusted).rejects.toMatchObject({ code: 'EDBOP_NODE_TLS_REFUSED' });
    // Dialled at 127.0.0.1, which the certificate does not name: only the pod name counts.
    await expect(client.gossip({ baseUrl, tls: { ca: [ca.certificatePem], serverName: '127.0.0.1' } })).rejects.toMatchObject({ code: 'EDBOP_NODE_TLS_REFUSED' });
    await expect(client.gossip({ baseUrl, tls: { ca: [ca.certificatePem], serverName: 'orders-0.billing-headless.shop.svc' } })).rejects.toMatchObject({
      code: 'EDBOP_NODE_TLS_REFUSED',
    });
    await expect(client.gossip(baseUrl)).rejects.toMatchObject({ code: 'EDBOP_NODE_UNREACHABLE' });
    expect(await client.live({ baseUrl, tls: { ca: [otherCa.certificatePem], serverName: POD_NAME } })).toBe(false);
  });
});

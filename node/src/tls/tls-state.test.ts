/**
 * TlsState over real TLS sockets on loopback, with certificates made by openssl: the https
 * server's certificate replaced for new connections at once; peer channels that authenticate
 * both sides; a CA migration in which only one node has reloaded (partial chain, logged on both
 * sides, while the established link keeps working) and which heals once both have, the old link
 * being reset after the connection-reset interval.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type tls from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCa, issueNodeCertificate, type CertificateFiles } from '../../../test/support/certificates.js';
import { loadTlsMaterial, type TlsMaterial } from './material.js';
import { createTlsState, type TlsState } from './tls-state.js';

let dir: string;
let ca1: CertificateFiles;
let ca2: CertificateFiles;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edb-tls-state-'));
  ca1 = createCa(join(dir, 'ca'), 'ca1', 'CA One');
  ca2 = createCa(join(dir, 'ca'), 'ca2', 'CA Two');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rootsFolder(name: string, cas: readonly CertificateFiles[]): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  cas.forEach((ca, i) => copyFileSync(ca.certPath, join(folder, `ca-${i}.crt`)));
  return folder;
}

function material(name: string, ca: CertificateFiles, roots: string, commonName = 'eventdb-node', reserved = ''): TlsMaterial {
  const cert = issueNodeCertificate(join(dir, 'nodes'), name, ca, commonName);
  return loadTlsMaterial({
    certificateFile: cert.certPath,
    certificatePrivateKeyFile: cert.keyPath,
    trustedRootCertificatesPath: roots,
    certificateReservedNodeCommonName: reserved,
  });
}

function memoryLog(): { log: pino.Logger; lines: Array<Record<string, unknown>>; text: () => string } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines, text: () => lines.map((l) => String(l['msg'])).join('\n') };
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 100_000; i++) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function listen(server: tls.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function close(server: tls.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** GET over a fresh connection trusting `caPem`; the certificate the server presented. */
function getOnce(port: number, caPem: string, agent: https.Agent | false = false): Promise<{ status: number; fingerprint: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/', ca: caPem, agent }, (res) => {
      let body = '';
      const fingerprint = (res.socket as tls.TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('TlsState: the https server', () => {
  it('serves the new certificate to new connections at once; an open keep-alive connection keeps working', async () => {
    const roots = rootsFolder('https-roots', [ca1, ca2]);
    const first = material('https-1', ca1, roots);
    const { log } = memoryLog();
    const state = createTlsState({ material: first, connectionResetIntervalMs: 60_000, log });
    const server = https.createServer(state.httpsServerOptions(), (req, res) => {
      const verdict = state.verifyPeer(req.socket as tls.TLSSocket);
      // The certificate this connection was set up with, as the server sees it.
      const served = (req.socket as tls.TLSSocket).getX509Certificate()?.fingerprint256;
      res.end(`${served}: ${verdict.ok ? `peer ${verdict.commonName}` : `client (${verdict.rejection})`}`);
    });
    state.attachServer(server);
    const port = await listen(server);
    const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await getOnce(port, ca1.certPem + ca2.certPem, keepAlive);
      expect(before).toEqual({
        status: 200,
        fingerprint: first.leaf.fingerprint256,
        body: `${first.leaf.fingerprint256}: client (no-certificate)`,
      });

      const second = material('https-2', ca2, roots);
      state.replace(second);
      const fresh = await getOnce(port, ca1.certPem + ca2.certPem);
      expect(fresh.fingerprint).toBe(second.leaf.fingerprint256);
      expect(fresh.body).toBe(`${second.leaf.fingerprint256}: client (no-certificate)`);
      // A client that trusts only the old CA can no longer connect anew.
      await expect(getOnce(port, ca1.certPem)).rejects.toThrow(/self-signed certificate in certificate chain|unable to get local issuer certificate/);
      // The keep-alive connection opened before the reload is still the old certificate's.
      const reused = await getOnce(port, ca1.certPem + ca2.certPem, keepAlive);
      expect(reused.body).toBe(`${first.leaf.fingerprint256}: client (no-certificate)`);
      expect(state.describe().fingerprintSha256).toBe(second.leaf.fingerprint256);
    } finally {
      keepAlive.destroy();
      server.closeAllConnections();
      await close(server);
    }
  });
});

describe('TlsState: node-to-node channels', () => {
  it('authenticates both sides: links carry each side certificate; a wrong CN or an untrusted CA is refused and logged', async () => {
    const roots = rootsFolder('peer-roots', [ca1]);
    const serverLog = memoryLog();
    const clientLog = memoryLog();
    const serverState = createTlsState({ material: material('peer-a', ca1, roots), connectionResetIntervalMs: 60_000, log: serverLog.log });
    const clientState = createTlsState({ material: material('peer-b', ca1, roots), connectionResetIntervalMs: 60_000, log: clientLog.log });
    const accepted: string[] = [];
    const server = serverState.createPeerServer((socket, peer) => {
      accepted.push(peer.fingerprintSha256);
      socket.end('hello');
    });
    const port = await listen(server);
    try {
      const socket = clientState.connectPeer({ host: '127.0.0.1', port });
      const received = await new Promise<string>((resolve, reject) => {
        let data = '';
        socket.on('data', (c: Buffer) => (data += c.toString()));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(received).toBe('hello');
      expect(accepted).toEqual([clientState.material().leaf.fingerprint256]);

      // A node whose certificate carries another common name: the TLS handshake succeeds (same CA)
      // but the server refuses it as a peer...
      const strangerCert = issueNodeCertificate(join(dir, 'nodes'), 'stranger', ca1, 'someone-else');
      const raw = tlsConnect({ host: '127.0.0.1', port, ca: ca1.certPem, cert: strangerCert.certPem, key: strangerCert.keyPem });
      raw.on('error', () => undefined);
      await new Promise<void>((resolve) => raw.on('close', () => resolve()));
      await waitFor('the refusal in the log', () =>
        serverLog.text().includes("node-to-node connection refused: the peer's common name 'someone-else' does not carry the reserved node common name 'eventdb-node'"),
      );
      expect(accepted).toHaveLength(1);
      // ...and such a node, connecting as a peer, refuses this server for the same reason.
      const strangerLog = memoryLog();
      const stranger = createTlsState({
        material: material('stranger-2', ca1, roots, 'someone-else'),
        connectionResetIntervalMs: 60_000,
        log: strangerLog.log,
      });
      const refused = stranger.connectPeer({ host: '127.0.0.1', port });
      const refusal = await new Promise<Error>((resolve) => refused.on('error', resolve));
      expect(refusal.message).toBe("the peer's common name 'eventdb-node' does not carry the reserved node common name 'someone-else'");
      expect(strangerLog.text()).toContain('node-to-node TLS connection failed');

      // A node of another CA: the handshake itself fails, logged as a partial chain by the client.
      const foreignRoots = rootsFolder('foreign-roots', [ca2]);
      const foreign = createTlsState({ material: material('foreign', ca2, foreignRoots), connectionResetIntervalMs: 60_000, log: clientLog.log });
      const failed = foreign.connectPeer({ host: '127.0.0.1', port });
      const error = await new Promise<Error>((resolve) => failed.on('error', resolve));
      // OpenSSL names it by what the server sent: its certificate alone, or with its (untrusted) root.
      expect((error as NodeJS.ErrnoException).code).toMatch(/^(UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN)$/);
      expect(clientLog.text()).toContain("node-to-node TLS connection failed: partial chain: the peer's certificate was not issued by a trusted root");
    } finally {
      await close(server);
    }
  });

  it('during a CA migration: the established link keeps working, new links fail with a logged partial chain, and all heal after the reset interval once both nodes reloaded', async () => {
    const resetMs = 800;
    const oldRoots = rootsFolder('migration-old', [ca1]);
    const newRoots = rootsFolder('migration-new', [ca2]);
    const logA = memoryLog();
    const logB = memoryLog();
    const a = createTlsState({ material: material('mig-a1', ca1, oldRoots), connectionResetIntervalMs: resetMs, log: logA.log });
    const b = createTlsState({ material: material('mig-b1', ca1, oldRoots), connectionResetIntervalMs: resetMs, log: logB.log });
    // A serves a replication-like channel; B keeps a link to it, reconnecting when it drops.
    const server = a.createPeerServer((socket) => {
      socket.on('data', (chunk: Buffer) => socket.write(chunk));
      socket.on('error', () => undefined);
    });
    const port = await listen(server);
    let link: tls.TLSSocket | undefined;
    let stopped = false;
    const connect = (): void => {
      if (stopped) return;
      const socket = b.connectPeer({ host: '127.0.0.1', port });
      socket.on('error', () => undefined);
      socket.on('secureConnect', () => (link = socket));
      socket.on('close', () => {
        if (link === socket) link = undefined;
        setTimeout(connect, 50);
      });
    };
    const echo = async (socket: tls.TLSSocket, text: string): Promise<string> =>
      new Promise((resolve) => {
        socket.once('data', (c: Buffer) => resolve(c.toString()));
        socket.write(text);
      });
    try {
      connect();
      const firstLink = await waitFor('the first link', () => link);
      expect(await echo(firstLink, 'one')).toBe('one');

      // Node A gets a certificate of the new CA, and trusts only the new CA.
      const a2 = material('mig-a2', ca2, newRoots, 'eventdb-node-v2');
      a.replace(a2);
      expect(link).toBe(firstLink);
      expect(await echo(firstLink, 'still')).toBe('still');
      // A new connection from B fails: B does not trust A's new issuer yet (and vice versa).
      const probe = b.connectPeer({ host: '127.0.0.1', port });
      await new Promise<void>((resolve) => {
        probe.on('error', () => resolve());
        probe.on('close', () => resolve());
      });
      expect(logB.text()).toContain('partial chain');

      // Node B reloads too (new CA, new CN): from then on new links work.
      const b2 = material('mig-b2', ca2, newRoots, 'eventdb-node-v2');
      b.replace(b2);
      // The old link is reset after the interval and the reconnect uses the new certificates.
      const renewed = await waitFor(
        'a link with the new certificates',
        () => (link !== undefined && link !== firstLink ? link : undefined),
        resetMs * 10,
      );
      expect(await echo(renewed, 'two')).toBe('two');
      expect(firstLink.destroyed).toBe(true);
      const [outgoing] = b.links();
      expect(outgoing).toMatchObject({
        direction: 'outgoing',
        localFingerprintSha256: b2.leaf.fingerprint256,
        peerFingerprintSha256: a2.leaf.fingerprint256,
        peerCommonName: 'eventdb-node-v2',
      });
      const incoming = await waitFor('the incoming link on A', () => a.links().find((l) => l.peerFingerprintSha256 === b2.leaf.fingerprint256));
      expect(incoming).toMatchObject({ direction: 'incoming', localFingerprintSha256: a2.leaf.fingerprint256 });
      expect(logA.text() + logB.text()).toContain('node-to-node connection reset');
      expect(logA.text()).toContain('node-to-node TLS handshake failed');
    } finally {
      stopped = true;
      link?.destroy();
      await close(server);
    }
  });

  it('peer HTTP through createPeerAgent: keep-alive until the reset interval, then a new connection with the new certificates', async () => {
    const roots = rootsFolder('agent-roots', [ca1, ca2]);
    const serverState = createTlsState({ material: material('agent-srv', ca1, roots), connectionResetIntervalMs: 60_000, log: memoryLog().log });
    const clientState = createTlsState({ material: material('agent-cli-1', ca1, roots), connectionResetIntervalMs: 500, log: memoryLog().log });
    const server = https.createServer(serverState.httpsServerOptions(), (req, res) => {
      const verdict = serverState.verifyPeer(req.socket as tls.TLSSocket);
      res.end(verdict.ok ? verdict.fingerprintSha256 : `refused: ${verdict.reason}`);
    });
    serverState.attachServer(server);
    const port = await listen(server);
    const agent = clientState.createPeerAgent({ maxSockets: 1 });
    const call = (): Promise<{ body: string; local: string }> =>
      new Promise((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port, path: '/gossip', agent }, (res) => {
          let body = '';
          const local = (res.socket as tls.TLSSocket).getX509Certificate()?.fingerprint256 ?? '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ body, local }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const first = await call();
      const firstMaterial = clientState.material();
      expect(first.body).toBe(firstMaterial.leaf.fingerprint256);
      expect(clientState.links()).toHaveLength(1);
      const renewed = material('agent-cli-2', ca2, roots);
      clientState.replace(renewed);
      // Reused connection: still the old certificate (the server saw it at the handshake).
      expect((await call()).body).toBe(firstMaterial.leaf.fingerprint256);
      await waitFor('the pooled connection to be reset', () => clientState.links().length === 0, 5_000);
      const after = await call();
      expect(after.body).toBe(renewed.leaf.fingerprint256);
      expect(after.local).toBe(renewed.leaf.fingerprint256);
    } finally {
      agent.destroy();
      server.closeAllConnections();
      await close(server);
    }
  });
});

// The exec signaller against a loopback HTTP server acting as the apiserver's exec endpoint: a
// refused upgrade is reported with the apiserver's answer (not [object Object]), a command's
// Failure status with its message, a Success resolves, and the request carries the kubeconfig's
// token and the channel.k8s.io protocols.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { createCertificateAuthority, createSignedCertificate } from '../resources/tls/certificate.js';
import { ExecNodeSignaller, NodeSignalError, upgradeRefusal } from './node-signal.js';

interface Fake {
  readonly port: number;
  readonly requests: { url: string; authorization: string | undefined; protocols: string | undefined }[];
  close(): Promise<void>;
}

async function fakeApiserver(onUpgrade: (request: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer, wss: WebSocketServer) => void): Promise<Fake> {
  const requests: Fake['requests'] = [];
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => (protocols.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : false) });
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (request, socket, head) => {
    requests.push({ url: request.url ?? '', authorization: request.headers.authorization, protocols: request.headers['sec-websocket-protocol'] });
    onUpgrade(request, socket, head, wss);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function kubeConfig(port: number): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'service-account-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return config;
}

function answerStatus(status: unknown): (request: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer, wss: WebSocketServer) => void {
  return (request, socket, head, wss) =>
    wss.handleUpgrade(request, socket, head, (ws: WebSocket) => {
      ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status))]));
      ws.close();
    });
}

let fake: Fake | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('ExecNodeSignaller', () => {
  it('sends the command to the node container with the token and resolves on a Success status', async () => {
    fake = await fakeApiserver(answerStatus({ metadata: {}, status: 'Success' }));
    await new ExecNodeSignaller(kubeConfig(fake.port), 5000).hangUp('db', 'hc-0');
    expect(fake.requests).toHaveLength(1);
    const url = new URL(fake.requests[0]?.url ?? '', 'http://x');
    expect(url.pathname).toBe('/api/v1/namespaces/db/pods/hc-0/exec');
    expect(url.searchParams.get('container')).toBe('eventdb');
    expect(url.searchParams.getAll('command')).toEqual(['sh', '-c', 'kill -HUP 1']);
    expect(fake.requests[0]?.authorization).toBe('Bearer service-account-token');
    expect(fake.requests[0]?.protocols).toContain('v5.channel.k8s.io');
  });

  it('rejects a refused upgrade with the apiserver Status in words and the code EDBOP_EXEC_DENIED', async () => {
    const message = 'pods "hc-0" is forbidden: User "system:serviceaccount:ops:op" cannot create resource "pods/exec" in API group "" in the namespace "db"';
    fake = await fakeApiserver((_request, socket) => {
      const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Forbidden', code: 403 });
      socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    const err = await new ExecNodeSignaller(kubeConfig(fake.port), 5000).hangUp('db', 'hc-0').catch((caught: unknown) => caught);
    expect(err).toBeInstanceOf(NodeSignalError);
    expect((err as NodeSignalError).code).toBe('EDBOP_EXEC_DENIED');
    expect((err as NodeSignalError).httpStatus).toBe(403);
    expect((err as Error).message).toBe(`the apiserver answered the exec upgrade with HTTP 403: ${message} (Forbidden, HTTP 403)`);
  });

  it('rejects a failed command with its status message', async () => {
    fake = await fakeApiserver(answerStatus({ metadata: {}, status: 'Failure', message: 'command terminated with non-zero exit code: exit status 127', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '127' }] } }));
    const err = (await new ExecNodeSignaller(kubeConfig(fake.port), 5000).hangUp('db', 'hc-1').catch((caught: unknown) => caught)) as NodeSignalError;
    expect(err.code).toBe('EDBOP_EXEC_COMMAND_FAILED');
    expect(err.message).toBe("'sh -c kill -HUP 1' in hc-1 failed: command terminated with non-zero exit code: exit status 127 (NonZeroExitCode): 127");
  });

  it('rejects a stream closed without a status, and one that never answers, in bounded time', async () => {
    fake = await fakeApiserver((request, socket, head, wss) => wss.handleUpgrade(request, socket, head, (ws: WebSocket) => ws.close(1011, 'container not found')));
    const closed = (await new ExecNodeSignaller(kubeConfig(fake.port), 5000).hangUp('db', 'hc-2').catch((caught: unknown) => caught)) as NodeSignalError;
    expect(closed.code).toBe('EDBOP_EXEC_CLOSED');
    expect(closed.message).toContain('code 1011: container not found');
    await fake.close();
    fake = await fakeApiserver((request, socket, head, wss) => wss.handleUpgrade(request, socket, head, () => undefined));
    const started = Date.now();
    const silent = (await new ExecNodeSignaller(kubeConfig(fake.port), 300).hangUp('db', 'hc-2').catch((caught: unknown) => caught)) as NodeSignalError;
    expect(silent.code).toBe('EDBOP_EXEC_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('names a connection that fails before any answer', async () => {
    fake = await fakeApiserver(() => undefined);
    const port = fake.port;
    await fake.close();
    fake = undefined;
    const err = (await new ExecNodeSignaller(kubeConfig(port), 2000).hangUp('db', 'hc-0').catch((caught: unknown) => caught)) as NodeSignalError;
    expect(err.code).toBe('EDBOP_EXEC_UPGRADE_FAILED');
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(err.message).not.toContain('[object');
  });

  it('in the cluster: the service account token file and CA of loadFromCluster reach the exec WebSocket over TLS', async () => {
    const ca = createCertificateAuthority({ commonName: 'apiserver test CA', validityDays: 1, nowMs: Date.now() });
    const serving = createSignedCertificate({ commonName: 'kubernetes', subjectAltNames: ['127.0.0.1'], validityDays: 1, nowMs: Date.now() }, ca);
    const requests: (string | undefined)[] = [];
    const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => (protocols.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : false) });
    const server = https.createServer({ key: serving.privateKeyPem, cert: serving.certificatePem }, (_req, res) => res.writeHead(404).end());
    server.on('upgrade', (request, socket, head) => {
      requests.push(request.headers.authorization);
      wss.handleUpgrade(request, socket, head, (ws: WebSocket) => {
        ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify({ metadata: {}, status: 'Success' }))]));
        ws.close();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'in-cluster-'));
    const saved = { host: process.env['KUBERNETES_SERVICE_HOST'], port: process.env['KUBERNETES_SERVICE_PORT'] };
    try {
      const accountDir = path.join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
      fs.mkdirSync(accountDir, { recursive: true });
      fs.writeFileSync(path.join(accountDir, 'token'), 'projected-token');
      fs.writeFileSync(path.join(accountDir, 'ca.crt'), ca.certificatePem);
      fs.writeFileSync(path.join(accountDir, 'namespace'), 'ops');
      process.env['KUBERNETES_SERVICE_HOST'] = '127.0.0.1';
      process.env['KUBERNETES_SERVICE_PORT'] = String((server.address() as AddressInfo).port);
      const config = new KubeConfig();
      config.loadFromCluster(root);
      await new ExecNodeSignaller(config, 5000).hangUp('db', 'hc-0');
      expect(requests).toEqual(['Bearer projected-token']);
    } finally {
      for (const [key, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      fs.rmSync(root, { recursive: true, force: true });
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('a refusal without a Status body keeps the text', () => {
    expect(upgradeRefusal(400, 'Bad Request').message).toBe('the apiserver answered the exec upgrade with HTTP 400: Bad Request');
    expect(upgradeRefusal(400, 'Bad Request').code).toBe('EDBOP_EXEC_UPGRADE_FAILED');
    expect(upgradeRefusal(401, '').code).toBe('EDBOP_EXEC_DENIED');
  });
});

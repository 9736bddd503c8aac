/**
 * NodeAccess through port-forwards (client-node's PortForward over the apiserver), for an
 * operator running outside the cluster: one loopback listener per pod incarnation, each
 * accepted connection a port-forward stream to the node's port. Listeners of pods that went
 * away are closed when the pod's uid changes or on close(). The forward carries bytes only: over
 * https the TLS session runs end to end between the operator and the node, and the client checks
 * the node certificate against the node's DNS name, not 127.0.0.1 (NodeTrust.serverName).
 */
import net from 'node:net';
import { PortForward, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { NODE_HTTP_PORT } from '../api/group.js';
import type { NodeAccess, NodePod, NodeScheme } from '../node-client/node-access.js';

interface Listener {
  readonly uid: string;
  readonly server: net.Server;
  readonly port: number;
}

export class PortForwardAccess implements NodeAccess {
  readonly #forward: PortForward;
  readonly #log: Logger;
  readonly #listeners = new Map<string, Listener>();

  constructor(config: KubeConfig, log: Logger) {
    this.#forward = new PortForward(config, true);
    this.#log = log;
  }

  async baseUrl(namespace: string, pod: NodePod, scheme: NodeScheme): Promise<string | undefined> {
    if (pod.ip === undefined) return undefined;
    const key = `${namespace}/${pod.name}`;
    const existing = this.#listeners.get(key);
    if (existing !== undefined && existing.uid === pod.uid) return `${scheme}://127.0.0.1:${existing.port}`;
    if (existing !== undefined) existing.server.close();
    const server = net.createServer((socket) => this.#forwardConnection(namespace, pod.name, socket));
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
    server.unref();
    this.#listeners.set(key, { uid: pod.uid, server, port });
    return `${scheme}://127.0.0.1:${port}`;
  }

  async close(): Promise<void> {
    for (const { server } of this.#listeners.values()) server.close();
    this.#listeners.clear();
  }

  #forwardConnection(namespace: string, pod: string, socket: net.Socket): void {
    socket.on('error', () => socket.destroy());
    this.#forward
      .portForward(namespace, pod, [NODE_HTTP_PORT], socket, null, socket)
      .then((result) => {
        const ws = typeof result === 'function' ? result() : result;
        ws?.on('close', () => socket.end());
        socket.on('close', () => ws?.close());
      })
      .catch((err: unknown) => {
        this.#log.debug({ err, pod }, 'port-forward failed');
        socket.destroy();
      });
  }
}

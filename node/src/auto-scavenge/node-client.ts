/**
 * The leader's client for other nodes' scavenge admin API (and its own, on a node alone):
 * `POST /admin/scavenge`, `GET /admin/scavenge/{id}`, `DELETE /admin/scavenge/{id}`.
 *
 * Authentication: with TLS the requests go through the peer agent, which presents this node's
 * certificate; the receiving node accepts a cluster node's certificate for the scavenge admin
 * routes (build-server.ts). They also carry the admin credentials this node holds
 * (--default-admin-password), which is what authenticates them with --insecure, where nodes
 * have no other way to know each other.
 */
import http from 'node:http';
import https from 'node:https';
import type { NodeRef, ObservedNodeScavenge } from './state.js';
import { peerLookup } from '../platform/peer-lookup.js';

export interface NodeScavengeClientOptions {
  readonly scheme: 'http' | 'https';
  /** TLS: the peer agent (trusted roots, this node's certificate). */
  readonly httpsAgent?: https.Agent;
  readonly adminLogin: string;
  readonly adminPassword: string;
  readonly timeoutMs: number;
}

export type StartOutcome =
  | { readonly kind: 'started'; readonly scavengeId: string }
  | { readonly kind: 'failed'; readonly reason: string };

interface Answer {
  readonly status: number;
  readonly text: string;
}

const RESULTS: ReadonlySet<string> = new Set(['InProgress', 'Success', 'Stopped', 'Errored', 'Interrupted', 'Unknown']);

export class NodeScavengeClient {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });

  constructor(private readonly options: NodeScavengeClientOptions) {}

  /** Starts a scavenge on `node`; one already running there is adopted. */
  async start(node: NodeRef): Promise<StartOutcome> {
    const answer = await this.request(node, 'POST', '/admin/scavenge');
    if (answer.status === 200) {
      const scavengeId = (JSON.parse(answer.text) as { scavengeId?: unknown }).scavengeId;
      if (typeof scavengeId === 'string' && scavengeId !== '') return { kind: 'started', scavengeId };
    }
    if (answer.status === 400 && answer.text.includes('already running')) {
      const current = await this.request(node, 'GET', '/admin/scavenge/current');
      const scavengeId = current.status === 200 ? (JSON.parse(current.text) as { scavengeId?: unknown }).scavengeId : undefined;
      if (typeof scavengeId === 'string' && scavengeId !== '') return { kind: 'started', scavengeId };
    }
    return { kind: 'failed', reason: `POST /admin/scavenge answered ${answer.status}: ${answer.text.slice(0, 200)}` };
  }

  /** The state of one run on `node`: InProgress, its recorded result, or NotFound. */
  async observe(node: NodeRef, scavengeId: string): Promise<ObservedNodeScavenge> {
    const answer = await this.request(node, 'GET', `/admin/scavenge/${encodeURIComponent(scavengeId)}`);
    if (answer.status === 404) return 'NotFound';
    if (answer.status !== 200) throw new Error(`GET /admin/scavenge/${scavengeId} answered ${answer.status}: ${answer.text.slice(0, 200)}`);
    const result = (JSON.parse(answer.text) as { scavengeResult?: unknown }).scavengeResult;
    return typeof result === 'string' && RESULTS.has(result) ? (result as ObservedNodeScavenge) : 'Unknown';
  }

  /** Stops the run; true once stopped (or when the node no longer has it). */
  async stop(node: NodeRef, scavengeId: string): Promise<boolean> {
    // The node answers once the run has stopped: give it longer than other requests.
    const answer = await this.request(node, 'DELETE', `/admin/scavenge/${encodeURIComponent(scavengeId)}`, this.options.timeoutMs * 12);
    if (answer.status === 200 || answer.status === 404) return true;
    throw new Error(`DELETE /admin/scavenge/${scavengeId} answered ${answer.status}: ${answer.text.slice(0, 200)}`);
  }

  close(): void {
    this.httpAgent.destroy();
  }

  private request(node: NodeRef, method: string, path: string, timeoutMs = this.options.timeoutMs): Promise<Answer> {
    const { options } = this;
    const authorization = `Basic ${Buffer.from(`${options.adminLogin}:${options.adminPassword}`).toString('base64')}`;
    const base = {
      host: node.address, port: node.port, path, method, timeout: timeoutMs, lookup: peerLookup().lookup,
      headers: { accept: 'application/json', authorization, 'content-length': 0 },
    };
    return new Promise<Answer>((resolve, reject) => {
      const onResponse = (res: http.IncomingMessage): void => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      };
      const req = options.scheme === 'https'
        ? https.request({ ...base, ...(options.httpsAgent === undefined ? {} : { agent: options.httpsAgent }) }, onResponse)
        : http.request({ ...base, agent: this.httpAgent }, onResponse);
      req.on('timeout', () => req.destroy(new Error(`${node.nodeId}${path} did not answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }
}

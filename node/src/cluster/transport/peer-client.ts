/**
 * JSON over HTTP to other nodes' HTTP APIs (gossip and election messages), with a timeout. Plain
 * HTTP with --insecure; with TLS, requests go through `httpsAgent` (TlsState.createPeerAgent():
 * the trusted roots, this node's certificate for mutual authentication, the peer's certificate
 * checked, connections made with the certificates in force and renewed after the
 * connection-reset interval).
 */
import http from 'node:http';
import https from 'node:https';
import { peerLookup } from '../../platform/peer-lookup.js';

export interface PeerClientOptions {
  /** The agent for TLS connections to peers; undefined: plain HTTP. */
  readonly httpsAgent?: https.Agent;
}

export class PeerClient {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  constructor(private readonly options: PeerClientOptions = {}) {}

  /** POSTs `body` as JSON to `http(s)://endpoint/path`; resolves with the parsed answer. */
  post(endpoint: string, path: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const { httpsAgent } = this.options;
    const payload = Buffer.from(JSON.stringify(body));
    const [host, portText] = splitEndpoint(endpoint);
    const base = {
      host, port: Number(portText), path, method: 'POST', lookup: peerLookup().lookup,
      headers: { 'content-type': 'application/json', 'content-length': payload.length, accept: 'application/json' },
      timeout: timeoutMs,
    };
    return new Promise((resolve, reject) => {
      const onResponse = (res: http.IncomingMessage): void => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) >= 300) { reject(new Error(`${endpoint}${path} answered ${res.statusCode}: ${text.slice(0, 200)}`)); return; }
          try { resolve(text === '' ? undefined : JSON.parse(text)); } catch (err: unknown) { reject(err); }
        });
        res.on('error', reject);
      };
      const req = httpsAgent === undefined
        ? http.request({ ...base, agent: this.httpAgent }, onResponse)
        : https.request({ ...base, agent: httpsAgent }, onResponse);
      req.on('timeout', () => req.destroy(new Error(`${endpoint}${path} did not answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.options.httpsAgent?.destroy();
  }
}

/** `host:port` (IPv6 hosts in brackets) -> [host, port]. */
export function splitEndpoint(endpoint: string): [string, string] {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(endpoint);
  if (!m) throw new Error(`not a host:port endpoint: '${endpoint}'`);
  return [m[1]!, m[2]!];
}

/**
 * JSON over HTTP to other nodes' HTTP APIs (gossip and election messages), with a timeout. Plain
 * HTTP with --insecure; with TLS, `tls()` gives the connection options (trusted roots, this
 * node's certificate for mutual authentication) and the URL scheme is https.
 */
import http from 'node:http';
import https from 'node:https';
import type { SecureContextOptions } from 'node:tls';

export interface PeerClientOptions {
  /** TLS options for connections to peers; undefined: plain HTTP. Asked on every request (reloads). */
  readonly tls?: () => (SecureContextOptions & { checkServerIdentity?: https.RequestOptions['checkServerIdentity'] }) | undefined;
}

export class PeerClient {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  private httpsAgent: https.Agent | undefined;
  private httpsAgentFor: unknown;

  constructor(private readonly options: PeerClientOptions = {}) {}

  /** POSTs `body` as JSON to `http(s)://endpoint/path`; resolves with the parsed answer. */
  post(endpoint: string, path: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const tls = this.options.tls?.();
    const payload = Buffer.from(JSON.stringify(body));
    const [host, portText] = splitEndpoint(endpoint);
    const base = {
      host, port: Number(portText), path, method: 'POST',
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
      const req = tls === undefined
        ? http.request({ ...base, agent: this.httpAgent }, onResponse)
        : https.request({ ...base, ...tls, agent: this.agentFor(tls) }, onResponse);
      req.on('timeout', () => req.destroy(new Error(`${endpoint}${path} did not answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** One keep-alive agent per TLS configuration (a reload gets fresh connections). */
  private agentFor(tls: object): https.Agent {
    if (this.httpsAgent === undefined || this.httpsAgentFor !== tls) {
      this.httpsAgent?.destroy();
      this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 4, ...tls });
      this.httpsAgentFor = tls;
    }
    return this.httpsAgent;
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent?.destroy();
  }
}

/** `host:port` (IPv6 hosts in brackets) -> [host, port]. */
export function splitEndpoint(endpoint: string): [string, string] {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(endpoint);
  if (!m) throw new Error(`not a host:port endpoint: '${endpoint}'`);
  return [m[1]!, m[2]!];
}

/**
 * The operator's HTTP endpoints for the kubelet and Prometheus: `/healthz` (liveness: the
 * watches are alive), `/readyz` (readiness: caches synced, or a standby replica waiting for the
 * Lease), `/metrics` (text exposition).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperatorMetrics } from './metrics.js';

export interface ProbeResult {
  readonly ok: boolean;
  readonly detail: string;
}

export interface ProbeServerOptions {
  readonly host: string;
  readonly port: number;
  /** The operator's metrics (`/metrics`: Prometheus text, or OpenMetrics by Accept). */
  readonly metrics: Pick<OperatorMetrics, 'render'>;
  readonly live: () => ProbeResult;
  readonly ready: () => ProbeResult;
}

export class ProbeServer {
  readonly #server: http.Server;
  readonly #options: ProbeServerOptions;

  constructor(options: ProbeServerOptions) {
    this.#options = options;
    this.#server = http.createServer((request, response) => this.#handle(request, response));
  }

  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#options.port, this.#options.host, () => resolve());
    });
    return this.#server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      const openMetrics = /application\/openmetrics-text/i.test(request.headers.accept ?? '');
      this.#options.metrics.render(openMetrics).then(
        ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(request.method === 'HEAD' ? undefined : body),
        (err: unknown) => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${err instanceof Error ? err.message : String(err)}\n`),
      );
      return;
    }
    const probe = path === '/healthz' || path === '/livez' ? this.#options.live : path === '/readyz' ? this.#options.ready : undefined;
    if (probe === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    const result = probe();
    response.writeHead(result.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' }).end(`${result.detail}\n`);
  }
}

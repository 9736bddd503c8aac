// Minimal Kubernetes REST client for the k8s tests: JSON requests with a bounded timeout.
// Built on KubeConfig.applyToHTTPSOptions so token and client-certificate kubeconfigs both work.
import https from 'node:https';
import http from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

export interface ApiResponse<T> {
  status: number;
  body: T | undefined;
  text: string;
}

export type PatchType = 'merge' | 'strategic' | 'json';

const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly text: string,
  ) {
    super(`${method} ${path}: HTTP ${status}: ${text.slice(0, 500)}`);
    this.name = 'ApiError';
  }
}

export class Api {
  private readonly server: URL;

  constructor(private readonly kc: KubeConfig) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
  }

  static fromFile(path: string): Api {
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    return new Api(kc);
  }

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    opts: { patch?: PatchType; timeoutMs?: number } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    let payload: string | undefined;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['Content-Type'] = opts.patch ? PATCH_CONTENT_TYPE[opts.patch] : 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const reqOpts: https.RequestOptions = {
      hostname: this.server.hostname,
      port: this.server.port || (this.server.protocol === 'https:' ? 443 : 80),
      path,
      method,
      headers,
    };
    await this.kc.applyToHTTPSOptions(reqOpts);
    const timeoutMs = opts.timeoutMs ?? 15_000;
    const mod = this.server.protocol === 'https:' ? https : http;
    return await new Promise<ApiResponse<T>>((resolve, reject) => {
      const req = mod.request(reqOpts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: T | undefined;
          try {
            parsed = text ? (JSON.parse(text) as T) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text });
        });
        res.on('error', reject);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: timed out after ${timeoutMs}ms`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** Like request, but throws ApiError unless the status is 2xx (or listed in `ok`). */
  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    opts: { patch?: PatchType; timeoutMs?: number; ok?: number[] } = {},
  ): Promise<ApiResponse<T>> {
    const res = await this.request<T>(method, path, body, opts);
    if ((res.status < 200 || res.status > 299) && !(opts.ok ?? []).includes(res.status)) {
      throw new ApiError(res.status, method, path, res.text);
    }
    return res;
  }

  async get<T>(path: string): Promise<T | undefined> {
    const res = await this.call<T>('GET', path, undefined, { ok: [404] });
    return res.status === 404 ? undefined : res.body;
  }
}

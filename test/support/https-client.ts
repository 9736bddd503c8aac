/**
 * HTTPS requests for TLS tests: each on a fresh connection (no pooling, no session reuse), trusting
 * the given CA certificates, reporting the certificate the server presented.
 */
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';

import { ADMIN_AUTHORIZATION } from './credentials.js';

export interface HttpsResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** SHA-256 fingerprint of the server's certificate on this connection. */
  readonly fingerprint: string;
  json<T = any>(): T;
}

export interface HttpsOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** Default true: admin credentials. */
  readonly auth?: boolean;
  /** Trusted CA certificates (PEM). */
  readonly ca: string | readonly string[];
  readonly timeoutMs?: number;
  /** A client certificate and its key (PEM) to present; default none. */
  readonly clientCertificate?: { readonly cert: string; readonly key: string };
}

export function httpsRequest(url: string, options: HttpsOptions): Promise<HttpsResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth !== false) headers['authorization'] ??= ADMIN_AUTHORIZATION;
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: options.method ?? 'GET',
        headers,
        ca: typeof options.ca === 'string' ? options.ca : [...options.ca],
        agent: false,
        ...(options.clientCertificate === undefined ? {} : { cert: options.clientCertificate.cert, key: options.clientCertificate.key }),
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerX509Certificate()?.fingerprint256 ?? '';
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, fingerprint, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within ${options.timeoutMs ?? 10_000} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

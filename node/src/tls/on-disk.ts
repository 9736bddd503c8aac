/**
 * The certificate in the certificate file now, which may not be the one served: files are
 * replaced in place (a Kubernetes Secret volume is updated by the kubelet after its sync delay)
 * and only a reload loads them. GET /info reports both, so whoever rotates certificates can
 * wait until a node sees the new file before asking it to reload, instead of waiting blindly.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

export type CertificateOnDisk = { readonly fingerprintSha256: string } | { readonly problem: string };

export function certificateOnDisk(path: string, read: (path: string) => string = (file) => readFileSync(file, 'utf8')): CertificateOnDisk {
  try {
    const text = read(path);
    const pem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(text)?.[0];
    if (pem === undefined) return { problem: `${path} holds no PEM certificate` };
    return { fingerprintSha256: new X509Certificate(pem).fingerprint256 };
  } catch (err: unknown) {
    return { problem: `${path}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

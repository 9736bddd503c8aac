/**
 * A node serving TLS for a test: a fresh test CA, a node certificate it signs (for localhost and
 * 127.0.0.1), the CA as the node's only trusted root, all under `dir` (the caller removes it).
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { createCa, issueNodeCertificate, type CertificateFiles } from './certificates.js';
import { startNode, type NodeProcess } from './node-process.js';

export interface TlsNode {
  readonly node: NodeProcess;
  readonly ca: CertificateFiles;
  /** The node's certificate files (a reload test may overwrite them). */
  readonly cert: CertificateFiles;
}

export async function startTlsNode(dir: string, options: { readonly args?: readonly string[]; readonly memDb?: boolean } = {}): Promise<TlsNode> {
  const ca = createCa(join(dir, 'ca'), 'ca', 'EventDB Test CA');
  const cert = issueNodeCertificate(join(dir, 'node'), 'node', ca);
  const roots = join(dir, 'roots');
  mkdirSync(roots);
  copyFileSync(ca.certPath, join(roots, 'ca.crt'));
  const node = await startNode({
    insecure: false,
    ...(options.memDb === undefined ? {} : { memDb: options.memDb }),
    args: ['--certificate-file', cert.certPath, '--certificate-private-key-file', cert.keyPath, '--trusted-root-certificates-path', roots, ...(options.args ?? [])],
  });
  return { node, ca, cert };
}

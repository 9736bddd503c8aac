/**
 * A node's TLS material: its certificate (with any intermediates bundled after it), the private
 * key, the trusted roots (every CA certificate in the trusted-roots folder, so an old and a new CA
 * can be trusted side by side during a CA migration) and the reserved node common name.
 *
 * `loadTlsMaterial` reads and checks everything before anything is used, so a reload that finds
 * a problem changes nothing: a missing or unreadable file, a key that does not match the
 * certificate, a certificate that has expired, is not yet valid, does not chain to a trusted
 * root, or whose common name does not carry the reserved node common name (as EventStoreDB).
 * Each problem is a `TlsMaterialError` naming the file and the option. Findings that do not stop
 * the node (no IP/DNS SAN, extended key usages peers would refuse) come back as warnings.
 */
import { createPrivateKey, type KeyObject, type X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

import { EventDbError, isErrno } from '../errors.js';
import {
  buildChain,
  commonNameOf,
  describe,
  distinguishedName,
  isSelfIssued,
  nodeUsageProblem,
  parseCertificates,
  subjectAltNamesOf,
  toPem,
  validityProblem,
} from './certificate.js';
import { certificateCoversHost, commonNameMatchesReserved } from './names.js';

/** The options the material comes from (a subset of NodeConfig). */
export interface TlsSources {
  readonly certificateFile: string;
  readonly certificatePrivateKeyFile: string;
  readonly trustedRootCertificatesPath: string;
  /** Empty: the node certificate's own common name. */
  readonly certificateReservedNodeCommonName: string;
}

export interface TrustedRoot {
  readonly certificate: X509Certificate;
  readonly file: string;
}

export interface TlsMaterial {
  readonly sources: TlsSources;
  readonly leaf: X509Certificate;
  readonly intermediates: readonly X509Certificate[];
  /** Leaf and intermediates, PEM, for `cert` in secure contexts. */
  readonly certificateChainPem: string;
  readonly privateKey: KeyObject;
  readonly roots: readonly TrustedRoot[];
  /** The roots, PEM each, for `ca` in secure contexts. */
  readonly rootsPem: readonly string[];
  readonly reservedNodeCommonName: string;
  readonly reservedNodeCommonNameSource: 'option' | 'certificate';
  readonly loadedAtMs: number;
  readonly warnings: readonly string[];
}

export class TlsMaterialError extends EventDbError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('EDB_CERTIFICATE_INVALID', message, { httpStatus: 400, details });
    this.name = 'TlsMaterialError';
  }
}

/** File access, injectable for tests. */
export interface TlsFiles {
  readFile(path: string): Buffer;
  /** Names in a directory. */
  list(path: string): string[];
  /** True for a regular file (symbolic links followed, as Kubernetes secret volumes use them). */
  isFile(path: string): boolean;
}

export const NODE_FILES: TlsFiles = {
  readFile: (path) => readFileSync(path),
  list: (path) => readdirSync(path),
  isFile: (path) => {
    try {
      return statSync(path).isFile();
    } catch {
      return false;
    }
  },
};

/** File extensions taken from the trusted-roots folder (as EventStoreDB). */
export const TRUSTED_ROOT_EXTENSIONS: readonly string[] = ['.crt', '.cert', '.cer', '.pem', '.der'];

const FLAG = {
  certificateFile: '--certificate-file',
  certificatePrivateKeyFile: '--certificate-private-key-file',
  trustedRootCertificatesPath: '--trusted-root-certificates-path',
  certificateReservedNodeCommonName: '--certificate-reserved-node-common-name',
} as const;

/** The message a secure node without certificate options stops with. */
export function missingTlsOptionsMessage(missing: readonly (keyof typeof FLAG)[]): string {
  return (
    `the node serves TLS by default and is missing ${missing.map((m) => FLAG[m]).join(', ')}: pass ` +
    `--certificate-file <node certificate, PEM>, --certificate-private-key-file <its private key, PEM> and ` +
    `--trusted-root-certificates-path <folder of trusted CA certificates> (or CertificateFile, ` +
    `CertificatePrivateKeyFile, TrustedRootCertificatesPath in the YAML file, or SERVICE_CERTIFICATE_FILE, ` +
    `SERVICE_CERTIFICATE_PRIVATE_KEY_FILE, SERVICE_TRUSTED_ROOT_CERTIFICATES_PATH), or --insecure to serve ` +
    `plain HTTP without TLS`
  );
}

/** The TLS options that are not set. */
export function missingTlsOptions(sources: TlsSources): (keyof typeof FLAG)[] {
  return (['certificateFile', 'certificatePrivateKeyFile', 'trustedRootCertificatesPath'] as const).filter(
    (name) => sources[name].trim() === '',
  );
}

function readProblem(err: unknown): string {
  if (isErrno(err, 'ENOENT')) return 'does not exist';
  if (isErrno(err, 'EACCES') || isErrno(err, 'EPERM')) return 'cannot be read (permission denied)';
  if (isErrno(err, 'EISDIR')) return 'is a directory, not a file';
  if (isErrno(err, 'ENOTDIR')) return 'is not a directory';
  return `cannot be read (${err instanceof Error ? err.message : String(err)})`;
}

function readOptionFile(files: TlsFiles, path: string, option: keyof typeof FLAG, what: string): Buffer {
  try {
    return files.readFile(path);
  } catch (err: unknown) {
    throw new TlsMaterialError(`${what} ${path} (${FLAG[option]}) ${readProblem(err)}`, { file: path, option: FLAG[option] });
  }
}

function loadCertificate(files: TlsFiles, path: string): X509Certificate[] {
  const bytes = readOptionFile(files, path, 'certificateFile', 'certificate file');
  let certificates: X509Certificate[];
  try {
    certificates = parseCertificates(bytes);
  } catch (err: unknown) {
    throw new TlsMaterialError(
      `certificate file ${path} (--certificate-file) is not a PEM or DER certificate: ${err instanceof Error ? err.message : String(err)}`,
      { file: path },
    );
  }
  if (certificates.length === 0)
    throw new TlsMaterialError(`certificate file ${path} (--certificate-file) contains no certificate`, { file: path });
  return certificates;
}

function loadPrivateKey(files: TlsFiles, path: string): KeyObject {
  const bytes = readOptionFile(files, path, 'certificatePrivateKeyFile', 'private key file');
  const text = bytes.toString('latin1');
  try {
    return text.includes('-----BEGIN') ? createPrivateKey(text) : createPrivateKey({ key: bytes, format: 'der', type: 'pkcs8' });
  } catch (err: unknown) {
    const encrypted = /ENCRYPTED/.test(text);
    throw new TlsMaterialError(
      `private key file ${path} (--certificate-private-key-file) ` +
        (encrypted
          ? 'holds an encrypted key; give an unencrypted PEM key'
          : `is not a PEM or DER (PKCS#8) private key: ${err instanceof Error ? err.message : String(err)}`),
      { file: path },
    );
  }
}

function loadTrustedRoots(files: TlsFiles, folder: string): TrustedRoot[] {
  let names: string[];
  try {
    names = files.list(folder);
  } catch (err: unknown) {
    throw new TlsMaterialError(`trusted root certificates folder ${folder} (--trusted-root-certificates-path) ${readProblem(err)}`, {
      folder,
    });
  }
  const roots: TrustedRoot[] = [];
  for (const name of [...names].sort()) {
    // Kubernetes secret volumes keep their data in hidden `..data` folders, reached by links.
    if (name.startsWith('.') || !TRUSTED_ROOT_EXTENSIONS.includes(extname(name).toLowerCase())) continue;
    const file = join(folder, name);
    if (!files.isFile(file)) continue;
    let bytes: Buffer;
    try {
      bytes = files.readFile(file);
    } catch (err: unknown) {
      throw new TlsMaterialError(`trusted root certificate ${file} ${readProblem(err)}`, { file });
    }
    let certificates: X509Certificate[];
    try {
      certificates = parseCertificates(bytes);
    } catch (err: unknown) {
      throw new TlsMaterialError(
        `trusted root certificate ${file} is not a PEM or DER certificate: ${err instanceof Error ? err.message : String(err)}`,
        { file },
      );
    }
    for (const certificate of certificates) {
      if (!isSelfIssued(certificate))
        throw new TlsMaterialError(
          `trusted root certificate ${file}: ${describe(certificate)} is not a root certificate (its issuer is ` +
            `'${distinguishedName(certificate.issuer)}'); bundle intermediate certificates with the node certificate instead`,
          { file },
        );
      if (!roots.some((root) => root.certificate.fingerprint256 === certificate.fingerprint256)) roots.push({ certificate, file });
    }
  }
  if (roots.length === 0)
    throw new TlsMaterialError(
      `no trusted root certificate (${TRUSTED_ROOT_EXTENSIONS.join(', ')} files) in ${folder} (--trusted-root-certificates-path)`,
      { folder },
    );
  return roots;
}

export interface LoadTlsMaterialOptions {
  readonly files?: TlsFiles;
  readonly nowMs?: number;
  /** The host name or address other nodes and clients reach this node by: warned about when the certificate does not name it. */
  readonly advertisedHost?: string;
}

/** Reads and checks the node's TLS material; throws TlsMaterialError naming the problem. */
export function loadTlsMaterial(sources: TlsSources, options: LoadTlsMaterialOptions = {}): TlsMaterial {
  const files = options.files ?? NODE_FILES;
  const nowMs = options.nowMs ?? Date.now();
  const missing = missingTlsOptions(sources);
  if (missing.length > 0) throw new TlsMaterialError(missingTlsOptionsMessage(missing), { missing });

  const [leaf, ...intermediates] = loadCertificate(files, sources.certificateFile);
  if (leaf === undefined) throw new TlsMaterialError(`certificate file ${sources.certificateFile} contains no certificate`);
  const privateKey = loadPrivateKey(files, sources.certificatePrivateKeyFile);
  if (!leaf.checkPrivateKey(privateKey))
    throw new TlsMaterialError(
      `the private key in ${sources.certificatePrivateKeyFile} (--certificate-private-key-file) does not match the ` +
        `certificate ${describe(leaf)} in ${sources.certificateFile} (--certificate-file)`,
      { file: sources.certificatePrivateKeyFile },
    );
  const roots = loadTrustedRoots(files, sources.trustedRootCertificatesPath);

  const problem = validityProblem(leaf, nowMs);
  if (problem !== undefined)
    throw new TlsMaterialError(`the certificate ${describe(leaf)} in ${sources.certificateFile} ${problem}`, {
      file: sources.certificateFile,
    });
  const chain = buildChain(
    leaf,
    intermediates,
    roots.map((root) => root.certificate),
    nowMs,
  );
  if (!chain.ok)
    throw new TlsMaterialError(
      `the certificate in ${sources.certificateFile} does not chain to a trusted root in ` +
        `${sources.trustedRootCertificatesPath}: ${chain.reason}`,
      { file: sources.certificateFile },
    );

  const commonName = commonNameOf(leaf);
  const configured = sources.certificateReservedNodeCommonName.trim();
  if (configured === '' && (commonName === undefined || commonName === ''))
    throw new TlsMaterialError(
      `the certificate ${describe(leaf)} has no common name: set --certificate-reserved-node-common-name or use a ` +
        `certificate whose common name other nodes can expect`,
    );
  if (configured !== '' && !commonNameMatchesReserved(commonName, configured))
    throw new TlsMaterialError(
      `the certificate's common name '${commonName ?? ''}' does not carry the reserved node common name ` +
        `'${configured}' (--certificate-reserved-node-common-name): other nodes would refuse it`,
      { file: sources.certificateFile },
    );

  const warnings: string[] = [];
  const sans = subjectAltNamesOf(leaf);
  if (sans.dns.length === 0 && sans.ip.length === 0)
    warnings.push(`the certificate ${describe(leaf)} names no DNS name or IP address (subjectAltName): other nodes refuse it`);
  const host = options.advertisedHost;
  if (host !== undefined && host !== '' && !certificateCoversHost({ ...sans, commonName }, host))
    warnings.push(`the certificate ${describe(leaf)} does not name ${host}, the host other nodes reach this node by: they will refuse it`);
  const usage = nodeUsageProblem(leaf);
  if (usage !== undefined) warnings.push(`the certificate ${describe(leaf)}: ${usage}; other nodes refuse it`);

  return {
    sources,
    leaf,
    intermediates,
    certificateChainPem: toPem([leaf, ...intermediates]),
    privateKey,
    roots,
    rootsPem: roots.map((root) => toPem([root.certificate])),
    reservedNodeCommonName: configured !== '' ? configured : (commonName ?? ''),
    reservedNodeCommonNameSource: configured !== '' ? 'option' : 'certificate',
    loadedAtMs: nowMs,
    warnings,
  };
}

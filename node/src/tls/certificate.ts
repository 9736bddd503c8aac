/**
 * X.509 certificates over Node's `crypto.X509Certificate`: parsing PEM bundles and DER files,
 * what a certificate says (fingerprint, subject, common name, SANs, validity, extended key
 * usages) and building a chain from a leaf through intermediates to one of the trusted roots.
 * No I/O: bytes in, facts out.
 */
import { X509Certificate } from 'node:crypto';

/** OIDs of the extended key usages a node certificate needs (it serves and it connects). */
export const EKU_SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
export const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Every certificate in `bytes`: PEM blocks (a bundle), or else one DER certificate. */
export function parseCertificates(bytes: Buffer): X509Certificate[] {
  const text = bytes.toString('latin1');
  const blocks = text.match(PEM_CERTIFICATE);
  if (blocks !== null) return blocks.map((block) => new X509Certificate(block));
  if (text.includes('-----BEGIN')) return [];
  return bytes.length === 0 ? [] : [new X509Certificate(bytes)];
}

/** The certificates as one PEM text (leaf first, as given). */
export function toPem(certificates: readonly X509Certificate[]): string {
  return certificates.map((cert) => cert.toString().trim()).join('\n') + '\n';
}

/** `CN=node-1\nO=Example` (Node's form) -> `CN=node-1, O=Example`. */
export function distinguishedName(multiline: string): string {
  return multiline.split('\n').filter((line) => line !== '').join(', ');
}

export function commonNameOf(cert: X509Certificate): string | undefined {
  for (const line of cert.subject.split('\n')) {
    if (line.startsWith('CN=')) return unquote(line.slice(3));
  }
  return undefined;
}

function unquote(value: string): string {
  if (value.startsWith('"') && value.endsWith('"')) {
    try {
      return JSON.parse(value) as string;
    } catch {
      return value;
    }
  }
  return value;
}

export interface SubjectAltNames {
  readonly dns: readonly string[];
  readonly ip: readonly string[];
  /** Every entry as `DNS:name` / `IP:address` / `<type>:<value>`, in certificate order. */
  readonly all: readonly string[];
}

/** Parses Node's `subjectAltName` text (`DNS:a, IP Address:1.2.3.4`; odd values JSON-quoted). */
export function subjectAltNamesOf(cert: X509Certificate): SubjectAltNames {
  const text = cert.subjectAltName ?? '';
  const dns: string[] = [];
  const ip: string[] = [];
  const all: string[] = [];
  const entry = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g;
  for (let match = entry.exec(text); match !== null && match[0] !== ''; match = entry.exec(text)) {
    const type = match[1] ?? '';
    const value = unquote(match[2] ?? '');
    if (type === 'DNS') {
      dns.push(value);
      all.push(`DNS:${value}`);
    } else if (type === 'IP Address') {
      ip.push(value);
      all.push(`IP:${value}`);
    } else {
      all.push(`${type}:${value}`);
    }
  }
  return { dns, ip, all };
}

export function notBeforeMs(cert: X509Certificate): number {
  return Date.parse(cert.validFrom);
}

export function notAfterMs(cert: X509Certificate): number {
  return Date.parse(cert.validTo);
}

/** Why the certificate is not valid at `nowMs`, or undefined when it is. */
export function validityProblem(cert: X509Certificate, nowMs: number): string | undefined {
  if (notAfterMs(cert) < nowMs) return `expired on ${new Date(notAfterMs(cert)).toISOString()}`;
  if (notBeforeMs(cert) > nowMs) return `not valid before ${new Date(notBeforeMs(cert)).toISOString()}`;
  return undefined;
}

/**
 * Why the certificate cannot serve as a node certificate by its extended key usages, or
 * undefined. As in EventStoreDB: without the extension any use is allowed; with it, a node needs
 * serverAuth (it serves) and clientAuth (it connects to other nodes with it).
 */
export function nodeUsageProblem(cert: X509Certificate): string | undefined {
  const usages = cert.keyUsage as string[] | undefined;
  if (usages === undefined) return undefined;
  const missing = [
    ...(usages.includes(EKU_SERVER_AUTH) ? [] : ['serverAuth']),
    ...(usages.includes(EKU_CLIENT_AUTH) ? [] : ['clientAuth']),
  ];
  return missing.length === 0 ? undefined : `its extended key usage lacks ${missing.join(' and ')}`;
}

export function isSelfIssued(cert: X509Certificate): boolean {
  return cert.subject === cert.issuer;
}

export type ChainResult =
  | { readonly ok: true; readonly chain: readonly X509Certificate[]; readonly root: X509Certificate }
  | {
      readonly ok: false;
      /** `partial-chain`: no trusted root issued the chain's last certificate. */
      readonly kind: 'partial-chain' | 'invalid';
      readonly reason: string;
    };

const CHAIN_DEPTH_MAX = 8;

function issuedBy(child: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return child.checkIssued(issuer) && child.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/**
 * Builds the chain leaf -> intermediates -> a trusted root, checking every signature and every
 * validity period at `nowMs`. Intermediates must be CA certificates. A chain that stops before a
 * trusted root is a `partial-chain` (the peer was issued by a CA this node does not trust yet).
 */
export function buildChain(
  leaf: X509Certificate,
  intermediates: readonly X509Certificate[],
  roots: readonly X509Certificate[],
  nowMs: number,
): ChainResult {
  const chain: X509Certificate[] = [leaf];
  const leafProblem = validityProblem(leaf, nowMs);
  if (leafProblem !== undefined) return { ok: false, kind: 'invalid', reason: `certificate ${describe(leaf)} ${leafProblem}` };
  let current = leaf;
  for (let depth = 0; depth < CHAIN_DEPTH_MAX; depth++) {
    const root = roots.find((candidate) => candidate.fingerprint256 === current.fingerprint256 || issuedBy(current, candidate));
    if (root !== undefined) {
      const rootProblem = validityProblem(root, nowMs);
      if (rootProblem !== undefined)
        return { ok: false, kind: 'invalid', reason: `trusted root ${describe(root)} ${rootProblem}` };
      if (root.fingerprint256 !== current.fingerprint256) chain.push(root);
      return { ok: true, chain, root };
    }
    const next = intermediates.find(
      (candidate) => candidate.ca && !chain.some((c) => c.fingerprint256 === candidate.fingerprint256) && issuedBy(current, candidate),
    );
    if (next === undefined) {
      return {
        ok: false,
        kind: 'partial-chain',
        reason:
          `partial chain: no trusted root issued ${describe(current)} (issuer ${distinguishedName(current.issuer)}); ` +
          `the trusted roots are ${roots.map(describe).join(', ') || 'none'}`,
      };
    }
    const problem = validityProblem(next, nowMs);
    if (problem !== undefined) return { ok: false, kind: 'invalid', reason: `intermediate ${describe(next)} ${problem}` };
    chain.push(next);
    current = next;
  }
  return { ok: false, kind: 'invalid', reason: `certificate chain longer than ${CHAIN_DEPTH_MAX}` };
}

/** `'CN=node-1' (SHA-256 AB:CD:...)`: for messages. */
export function describe(cert: X509Certificate): string {
  return `'${distinguishedName(cert.subject)}' (SHA-256 ${cert.fingerprint256})`;
}

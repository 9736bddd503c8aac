/**
 * Test certificates made with the openssl CLI (no network): CAs, intermediates and node
 * certificates (EC P-256, quick to make), written as PEM files into a directory the caller owns.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertificateFiles {
  readonly certPath: string;
  readonly keyPath: string;
  readonly certPem: string;
  readonly keyPem: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function files(certPath: string, keyPath: string): CertificateFiles {
  return { certPath, keyPath, certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
}

/** A self-signed root CA `<dir>/<name>.crt` and `<dir>/<name>.key`. */
export function createCa(dir: string, name: string, commonName = `${name} Root CA`): CertificateFiles {
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  openssl(
    [
      'req', '-x509', ...EC_KEY, '-keyout', keyPath, '-out', certPath, '-days', '30', '-subj', `/CN=${commonName}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  return files(certPath, keyPath);
}

export interface IssueOptions {
  readonly commonName: string;
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** Negative: already expired. Default 30. */
  readonly days?: number;
  /** Default serverAuth,clientAuth (a node certificate); empty: no extendedKeyUsage extension. */
  readonly extendedKeyUsage?: string;
  /** Makes an intermediate CA instead of a leaf. */
  readonly ca?: boolean;
}

/** A certificate for `name`, signed by `issuer`: `<dir>/<name>.crt` and `<dir>/<name>.key`. */
export function issueCertificate(dir: string, name: string, issuer: CertificateFiles, options: IssueOptions): CertificateFiles {
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  const csrPath = join(dir, `${name}.csr`);
  const extPath = join(dir, `${name}.ext`);
  const sans = [...(options.dnsNames ?? []).map((d) => `DNS:${d}`), ...(options.ipAddresses ?? []).map((ip) => `IP:${ip}`)];
  const eku = options.extendedKeyUsage ?? 'serverAuth,clientAuth';
  const ext = options.ca
    ? ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign']
    : [
        'basicConstraints=CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment,keyAgreement',
        ...(eku === '' ? [] : [`extendedKeyUsage=${eku}`]),
        ...(sans.length === 0 ? [] : [`subjectAltName=${sans.join(',')}`]),
      ];
  writeFileSync(extPath, `${ext.join('\n')}\n`);
  openssl(['req', '-new', ...EC_KEY, '-keyout', keyPath, '-out', csrPath, '-subj', `/CN=${options.commonName}`], dir);
  openssl(
    [
      'x509', '-req', '-in', csrPath, '-CA', issuer.certPath, '-CAkey', issuer.keyPath,
      '-set_serial', `0x${randomBytes(8).toString('hex')}`, '-days', String(options.days ?? 30),
      '-extfile', extPath, '-out', certPath,
    ],
    dir,
  );
  return files(certPath, keyPath);
}

/** A node certificate for loopback (localhost, 127.0.0.1 and any extra names). */
export function issueNodeCertificate(
  dir: string,
  name: string,
  issuer: CertificateFiles,
  commonName = 'eventdb-node',
  extra: Partial<IssueOptions> = {},
): CertificateFiles {
  return issueCertificate(dir, name, issuer, {
    commonName,
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    ...extra,
  });
}

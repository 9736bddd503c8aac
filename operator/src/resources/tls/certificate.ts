/**
 * X.509 v3 certificates for `tls.mode: SelfSigned`: a CA, and node certificates it signs (ECDSA
 * P-256, SHA-256). Node's crypto makes keys and signatures; this module lays out the
 * certificate (RFC 5280) around them. Verified in tests by Node's own X509Certificate and by a
 * real TLS handshake.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import {
  bitString,
  boolean,
  explicit,
  implicitPrimitive,
  integer,
  octetString,
  oid,
  sequence,
  set,
  time,
  utf8String,
} from './der.js';

const OID_ECDSA_SHA256 = '1.2.840.10045.4.3.2';
const OID_COMMON_NAME = '2.5.4.3';
const OID_ORGANIZATION = '2.5.4.10';
const OID_BASIC_CONSTRAINTS = '2.5.29.19';
const OID_KEY_USAGE = '2.5.29.15';
const OID_EXT_KEY_USAGE = '2.5.29.37';
const OID_SUBJECT_ALT_NAME = '2.5.29.17';
const OID_SUBJECT_KEY_ID = '2.5.29.14';
const OID_AUTHORITY_KEY_ID = '2.5.29.35';
const OID_SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const OID_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** Clock skew allowance: certificates are valid from a little before they were made. */
const NOT_BEFORE_SKEW_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

export interface KeyPairPem {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

export interface CertificateRequest {
  readonly commonName: string;
  readonly organization?: string;
  /** DNS names and IP addresses. */
  readonly subjectAltNames?: readonly string[];
  readonly validityDays: number;
  readonly nowMs: number;
}

function name(commonName: string, organization?: string): Buffer {
  const rdns = [set(sequence(oid(OID_COMMON_NAME), utf8String(commonName)))];
  if (organization !== undefined) rdns.unshift(set(sequence(oid(OID_ORGANIZATION), utf8String(organization))));
  return sequence(...rdns);
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

/** KeyUsage bits, numbered as in RFC 5280 (0 = digitalSignature). */
function keyUsage(bits: readonly number[]): Buffer {
  const byte = bits.reduce((value, bit) => value | (0x80 >> bit), 0);
  return bitString(Buffer.from([byte]));
}

function subjectAltNames(names: readonly string[]): Buffer {
  return sequence(
    ...names.map((entry) => {
      const family = isIP(entry);
      if (family === 4) return implicitPrimitive(7, Buffer.from(entry.split('.').map(Number)));
      if (family === 6) throw new Error(`IPv6 subject alternative names are not supported: ${entry}`);
      return implicitPrimitive(2, Buffer.from(entry, 'ascii'));
    }),
  );
}

function keyIdentifier(spkiDer: Buffer): Buffer {
  return createHash('sha1').update(spkiDer).digest();
}

function newKeyPair(): { privateKeyPem: string; spkiDer: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    spkiDer: publicKey.export({ type: 'spki', format: 'der' }),
  };
}

function toPem(der: Buffer): string {
  const base64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${base64}\n-----END CERTIFICATE-----\n`;
}

interface SignSpec {
  readonly subject: Buffer;
  readonly issuer: Buffer;
  readonly spkiDer: Buffer;
  readonly issuerSpkiDer: Buffer;
  readonly issuerKeyPem: string;
  readonly extensions: Buffer[];
  readonly validityDays: number;
  readonly nowMs: number;
}

function signCertificate(spec: SignSpec): Buffer {
  const algorithm = sequence(oid(OID_ECDSA_SHA256));
  const tbs = sequence(
    explicit(0, integer(2)),
    integer(Buffer.concat([Buffer.from([0x01]), randomBytes(15)])),
    algorithm,
    spec.issuer,
    sequence(time(new Date(spec.nowMs - NOT_BEFORE_SKEW_MS)), time(new Date(spec.nowMs + spec.validityDays * DAY_MS))),
    spec.subject,
    spec.spkiDer,
    explicit(
      3,
      sequence(
        ...spec.extensions,
        extension(OID_SUBJECT_KEY_ID, false, octetString(keyIdentifier(spec.spkiDer))),
        extension(OID_AUTHORITY_KEY_ID, false, sequence(implicitPrimitive(0, keyIdentifier(spec.issuerSpkiDer)))),
      ),
    ),
  );
  const signature = sign('sha256', tbs, createPrivateKey(spec.issuerKeyPem));
  return sequence(tbs, algorithm, bitString(signature));
}

/** A self-signed CA certificate and its key. */
export function createCertificateAuthority(request: CertificateRequest): KeyPairPem {
  const { privateKeyPem, spkiDer } = newKeyPair();
  const subject = name(request.commonName, request.organization);
  const der = signCertificate({
    subject,
    issuer: subject,
    spkiDer,
    issuerSpkiDer: spkiDer,
    issuerKeyPem: privateKeyPem,
    extensions: [
      extension(OID_BASIC_CONSTRAINTS, true, sequence(boolean(true))),
      extension(OID_KEY_USAGE, true, keyUsage([0, 5, 6])),
    ],
    validityDays: request.validityDays,
    nowMs: request.nowMs,
  });
  return { certificatePem: toPem(der), privateKeyPem };
}

/** A node certificate (server and client authentication) signed by `ca`. */
export function createSignedCertificate(request: CertificateRequest, ca: KeyPairPem): KeyPairPem {
  const { privateKeyPem, spkiDer } = newKeyPair();
  const caCertificate = new X509Certificate(ca.certificatePem);
  const issuerSpkiDer = caCertificate.publicKey.export({ type: 'spki', format: 'der' });
  const issuer = caSubject(caCertificate);
  const extensions = [
    extension(OID_BASIC_CONSTRAINTS, true, sequence()),
    extension(OID_KEY_USAGE, true, keyUsage([0, 2])),
    extension(OID_EXT_KEY_USAGE, false, sequence(oid(OID_SERVER_AUTH), oid(OID_CLIENT_AUTH))),
  ];
  if ((request.subjectAltNames ?? []).length > 0) {
    extensions.push(extension(OID_SUBJECT_ALT_NAME, false, subjectAltNames(request.subjectAltNames ?? [])));
  }
  const der = signCertificate({
    subject: name(request.commonName, request.organization),
    issuer,
    spkiDer,
    issuerSpkiDer,
    issuerKeyPem: ca.privateKeyPem,
    extensions,
    validityDays: request.validityDays,
    nowMs: request.nowMs,
  });
  return { certificatePem: toPem(der), privateKeyPem };
}

/** The issuer Name of a certificate we sign is the CA's subject, byte for byte. */
function caSubject(caCertificate: X509Certificate): Buffer {
  return extractSubject(caCertificate.raw);
}

/** Reads the subject Name (the sixth TBSCertificate field) out of a DER certificate. */
function extractSubject(der: Buffer): Buffer {
  const tbs = readElement(der, headerLength(der)).content;
  let offset = 0;
  const fields: Buffer[] = [];
  while (offset < tbs.length && fields.length < 6) {
    const element = readElement(tbs, offset);
    fields.push(element.whole);
    offset = element.end;
  }
  const subject = fields[5];
  if (subject === undefined) throw new Error('certificate without a subject');
  return subject;
}

function headerLength(der: Buffer): number {
  const first = der[1] ?? 0;
  return 2 + (first & 0x80 ? first & 0x7f : 0);
}

function readElement(buffer: Buffer, offset: number): { whole: Buffer; content: Buffer; end: number } {
  const lengthByte = buffer[offset + 1] ?? 0;
  let length = lengthByte;
  let header = 2;
  if (lengthByte & 0x80) {
    const count = lengthByte & 0x7f;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (buffer[offset + 2 + i] ?? 0);
    header += count;
  }
  const end = offset + header + length;
  return { whole: buffer.subarray(offset, end), content: buffer.subarray(offset + header, end), end };
}

/** `sha256:<hex>` of a PEM certificate's DER bytes, as status.members[].certificateFingerprint. */
export function certificateFingerprint(certificatePem: string): string {
  return `sha256:${createHash('sha256').update(new X509Certificate(certificatePem).raw).digest('hex')}`;
}

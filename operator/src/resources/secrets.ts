/**
 * Secrets the operator makes: generated admin and ops passwords (when spec.users names none),
 * and with `tls.mode: SelfSigned` a CA (`<cluster>-ca`, never mounted) and the node certificate
 * it signs (`<cluster>-node-tls`, with ca.crt), valid for every pod and Service name.
 */
import { randomBytes } from 'node:crypto';
import { X509Certificate } from 'node:crypto';
import type { KubeObject } from '../runtime/kube-api.js';
import { commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { caSecretName, clientServiceName, headlessServiceName, leaderServiceName, nodeTlsSecretName } from './names.js';
import { createCertificateAuthority, createSignedCertificate, type KeyPairPem } from './tls/certificate.js';

const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
const PASSWORD_LENGTH = 24;
const CA_VALIDITY_DAYS = 3650;
const NODE_CERT_VALIDITY_DAYS = 365;
/** A node certificate this close to expiry is renewed. */
export const NODE_CERT_RENEW_BEFORE_MS = 30 * 86_400_000;

/** 24 characters from a 56-letter alphabet without look-alikes: about 139 bits. */
export function generatePassword(random: (size: number) => Buffer = randomBytes): string {
  let password = '';
  while (password.length < PASSWORD_LENGTH) {
    for (const byte of random(PASSWORD_LENGTH * 2)) {
      // Rejection sampling keeps every letter equally likely.
      if (byte < 256 - (256 % PASSWORD_ALPHABET.length) && password.length < PASSWORD_LENGTH) {
        password += PASSWORD_ALPHABET[byte % PASSWORD_ALPHABET.length];
      }
    }
  }
  return password;
}

function secret(cluster: ClusterIdentity, name: string, type: string, stringData: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: cluster.namespace, labels: commonLabels(cluster), ownerReferences: [ownerReference(cluster)] },
    type,
    data: Object.fromEntries(Object.entries(stringData).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  };
}

/** `kubernetes.io/basic-auth` with `username` and `password`. */
export function buildUserSecret(cluster: ClusterIdentity, name: string, username: string, password: string): KubeObject {
  return secret(cluster, name, 'kubernetes.io/basic-auth', { username, password });
}

export function buildCaSecret(cluster: ClusterIdentity, ca: KeyPairPem): KubeObject {
  return secret(cluster, caSecretName(cluster.name), 'Opaque', { 'ca.crt': ca.certificatePem, 'ca.key': ca.privateKeyPem });
}

export function newCertificateAuthority(cluster: ClusterIdentity, nowMs: number): KeyPairPem {
  return createCertificateAuthority({
    commonName: `${cluster.name}.${cluster.namespace} EventDB CA`,
    organization: 'eventdb',
    validityDays: CA_VALIDITY_DAYS,
    nowMs,
  });
}

/** Every name a client or another node may reach a node by. */
export function nodeCertificateNames(cluster: ClusterIdentity): string[] {
  const { name, namespace } = cluster;
  const names: string[] = [];
  for (const suffix of ['svc', 'svc.cluster.local']) {
    names.push(`*.${headlessServiceName(name)}.${namespace}.${suffix}`);
    names.push(`${clientServiceName(name)}.${namespace}.${suffix}`);
    names.push(`${leaderServiceName(name)}.${namespace}.${suffix}`);
  }
  names.push(clientServiceName(name), leaderServiceName(name), 'localhost', '127.0.0.1');
  return names;
}

export function buildNodeTlsSecret(cluster: ClusterIdentity, ca: KeyPairPem, commonName: string, nowMs: number, validityMs = NODE_CERT_VALIDITY_DAYS * 86_400_000): KubeObject {
  const certificate = createSignedCertificate(
    { commonName, subjectAltNames: nodeCertificateNames(cluster), validityDays: validityMs / 86_400_000, nowMs },
    ca,
  );
  return secret(cluster, nodeTlsSecretName(cluster.name), 'kubernetes.io/tls', {
    'tls.crt': certificate.certificatePem,
    'tls.key': certificate.privateKeyPem,
    'ca.crt': ca.certificatePem,
  });
}

/**
 * Why an existing node certificate must be made again, or undefined if it is fine: it expires
 * soon, was not signed by this CA, or lacks a name or the common name asked for.
 */
export function nodeCertificateProblem(
  cluster: ClusterIdentity,
  certificatePem: string,
  caPem: string,
  commonName: string,
  nowMs: number,
  renewBeforeMs = NODE_CERT_RENEW_BEFORE_MS,
): string | undefined {
  try {
    const certificate = new X509Certificate(certificatePem);
    if (!certificate.checkIssued(new X509Certificate(caPem))) return 'not issued by the cluster CA';
    if (Date.parse(certificate.validTo) - nowMs < renewBeforeMs) {
      const margin = renewBeforeMs % 86_400_000 === 0 ? `${renewBeforeMs / 86_400_000} days` : `${Math.round(renewBeforeMs / 1000)} s`;
      return `expires within ${margin}`;
    }
    if (certificate.subject !== `CN=${commonName}`) return `common name is not ${commonName}`;
    const names = new Set((certificate.subjectAltName ?? '').split(', ').map((entry) => entry.replace(/^(DNS|IP Address):/, '')));
    const missing = nodeCertificateNames(cluster).find((entry) => !names.has(entry));
    return missing === undefined ? undefined : `lacks the name ${missing}`;
  } catch (err: unknown) {
    return `unreadable: ${(err as Error).message}`;
  }
}

export function decodeSecretValue(object: KubeObject | undefined, key: string): string | undefined {
  const data = object?.['data'] as Record<string, string> | undefined;
  const value = data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
}

/**
 * Keeping a cluster's children as the builders describe them. Services, the ConfigMap and the
 * PDB are server-side applied (one field manager, force) when they changed since the last
 * apply, or at least every ten minutes (so edits by hand are undone). Secrets are created once
 * and never overwritten: a password the nodes already use must not change under them.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../runtime/clock.js';
import { isAlreadyExists, type KubeApi, type KubeObject, type ResourceType } from '../../runtime/kube-api.js';
import { PVCS, SECRETS } from '../../runtime/resource-types.js';
import type { EffectiveSpec } from '../../resources/effective-spec.js';
import type { ClusterIdentity } from '../../resources/labels.js';
import { caSecretName, nodeTlsSecretName } from '../../resources/names.js';
import { trustedCaSecretName } from '../../resources/node-settings.js';
import { hashOf } from '../../resources/revision.js';
import {
  buildCaSecret,
  buildNodeTlsSecret,
  buildUserSecret,
  decodeSecretValue,
  generatePassword,
  newCertificateAuthority,
  nodeCertificateProblem,
} from '../../resources/secrets.js';
import { X509Certificate, createHash } from 'node:crypto';

const REAPPLY_AFTER_MS = 10 * 60_000;

/** Server-side apply that skips objects applied unchanged within the last ten minutes. */
export class ChildApplier {
  readonly #api: KubeApi;
  readonly #clock: Clock;
  readonly #applied = new Map<string, { hash: string; atMs: number }>();

  constructor(api: KubeApi, clock: Clock) {
    this.#api = api;
    this.#clock = clock;
  }

  async apply(type: ResourceType, object: KubeObject): Promise<boolean> {
    const key = `${type.plural}/${object.metadata.namespace}/${object.metadata.name}`;
    const hash = hashOf(object);
    const previous = this.#applied.get(key);
    const nowMs = this.#clock.nowMs();
    if (previous !== undefined && previous.hash === hash && nowMs - previous.atMs < REAPPLY_AFTER_MS) return false;
    await this.#api.apply(type, object, { force: true });
    this.#applied.set(key, { hash, atMs: nowMs });
    return true;
  }

  /** Forgets what was applied for a cluster (it was deleted: a new one of that name starts clean). */
  forget(namespace: string, cluster: string): void {
    for (const key of [...this.#applied.keys()]) if (key.includes(`/${namespace}/${cluster}`)) this.#applied.delete(key);
  }
}

/** Creates `object` unless an object of its name exists; true when it was created. */
export async function createIfMissing(api: KubeApi, type: ResourceType, object: KubeObject): Promise<boolean> {
  const existing = await api.get(type, object.metadata.namespace, object.metadata.name ?? '');
  if (existing !== undefined) return false;
  try {
    await api.create(type, object);
    return true;
  } catch (err: unknown) {
    if (isAlreadyExists(err)) return false;
    throw err;
  }
}

export interface SecretsOutcome {
  /** Secrets the spec names that do not exist (or lack the key): pods cannot start. */
  readonly missing: string[];
  readonly created: string[];
}

/** Generated admin/ops passwords, created once; user-provided Secrets checked. */
export async function ensureUserSecrets(
  api: KubeApi,
  cluster: ClusterIdentity,
  spec: EffectiveSpec,
  /** A restored cluster's users live in the restored database: their passwords, not new ones. */
  inherited?: { readonly admin: string; readonly ops: string },
): Promise<SecretsOutcome> {
  const missing: string[] = [];
  const created: string[] = [];
  for (const [username, reference] of [['admin', spec.users.admin], ['ops', spec.users.ops]] as const) {
    if (reference.generated) {
      const password = inherited?.[username] ?? generatePassword();
      if (await createIfMissing(api, SECRETS, buildUserSecret(cluster, reference.name, username, password))) created.push(reference.name);
      continue;
    }
    const secret = await api.get(SECRETS, cluster.namespace, reference.name);
    if (decodeSecretValue(secret, reference.key) === undefined) missing.push(`${reference.name} (key ${reference.key})`);
  }
  return { missing, created };
}

export interface TlsOutcome {
  readonly missing: string[];
  readonly events: { reason: string; note: string }[];
  readonly certificates?: { secretHash: string; notAfter: string };
  /** `sha256:<hex>` of the node certificate in the Secret: what every node should serve. */
  readonly fingerprint?: string;
}

/** With tls.mode SelfSigned: the CA (once) and a node certificate it signs, renewed when needed. */
export async function ensureTlsSecrets(
  api: KubeApi,
  cluster: ClusterIdentity,
  spec: EffectiveSpec,
  nowMs: number,
  log: Logger,
): Promise<TlsOutcome> {
  if (spec.tls.mode === 'Disabled') return { missing: [], events: [] };
  if (spec.tls.mode === 'Secret') {
    const name = spec.tls.certificateSecret ?? '';
    const secret = await api.get(SECRETS, cluster.namespace, name);
    const certificate = decodeSecretValue(secret, 'tls.crt');
    if (certificate === undefined || decodeSecretValue(secret, 'tls.key') === undefined) return { missing: [`${name} (tls.crt, tls.key)`], events: [] };
    const caMissing = await missingCa(api, cluster.namespace, spec);
    return { missing: caMissing === undefined ? [] : [caMissing], events: [], ...describeCertificate(certificate) };
  }
  const events: { reason: string; note: string }[] = [];
  let caSecret = await api.get(SECRETS, cluster.namespace, caSecretName(cluster.name));
  if (caSecret === undefined) {
    await createIfMissing(api, SECRETS, buildCaSecret(cluster, newCertificateAuthority(cluster, nowMs)));
    caSecret = await api.get(SECRETS, cluster.namespace, caSecretName(cluster.name));
    events.push({ reason: 'CertificateAuthorityCreated', note: `created the self-signed CA in Secret ${caSecretName(cluster.name)}` });
  }
  const ca = { certificatePem: decodeSecretValue(caSecret, 'ca.crt') ?? '', privateKeyPem: decodeSecretValue(caSecret, 'ca.key') ?? '' };
  const nodeSecret = await api.get(SECRETS, cluster.namespace, nodeTlsSecretName(cluster.name));
  const current = decodeSecretValue(nodeSecret, 'tls.crt');
  const problem = current === undefined ? 'missing' : nodeCertificateProblem(cluster, current, ca.certificatePem, spec.tls.reservedNodeCommonName, nowMs, spec.tls.renewBeforeMs);
  if (problem !== undefined) {
    const secret = buildNodeTlsSecret(cluster, ca, spec.tls.reservedNodeCommonName, nowMs, spec.tls.certificateValidityMs);
    await api.apply(SECRETS, secret, { force: true });
    log.info({ secret: nodeTlsSecretName(cluster.name), why: problem }, 'node certificate issued');
    events.push({ reason: 'NodeCertificateIssued', note: `issued the node certificate in Secret ${nodeTlsSecretName(cluster.name)} (${problem})` });
    return { missing: [], events, ...describeCertificate(decodeSecretValue(secret, 'tls.crt') ?? '') };
  }
  return { missing: [], events, ...describeCertificate(current ?? '') };
}

/** With tls.mode Secret: the trusted CA the nodes mount (tls.caSecret, or ca.crt beside the certificate). */
async function missingCa(api: KubeApi, namespace: string, spec: EffectiveSpec): Promise<string | undefined> {
  const name = trustedCaSecretName('', spec) ?? '';
  const secret = await api.get(SECRETS, namespace, name);
  // A named CA Secret: any .crt key will do (after a CA migration the new CA may have another key).
  if (spec.tls.caSecret !== undefined ? crtValues(secret).length > 0 : decodeSecretValue(secret, 'ca.crt') !== undefined) return undefined;
  return spec.tls.caSecret === undefined ? `${name} (ca.crt, or name the CA's Secret in spec.tls.caSecret)` : `${name} (a .crt key)`;
}

/** The CA certificates (PEM) of every `.crt` key of a Secret. */
function crtValues(secret: KubeObject | undefined): string[] {
  const data = (secret?.['data'] ?? {}) as Record<string, string>;
  return Object.keys(data)
    .filter((key) => key.endsWith('.crt'))
    .sort()
    .map((key) => decodeSecretValue(secret, key) ?? '')
    .filter((pem) => pem.includes('BEGIN CERTIFICATE'));
}

/**
 * The CAs the operator trusts when it speaks HTTPS to the nodes: with SelfSigned the CA it made
 * (`<cluster>-ca`), with Secret the CA Secret's certificates (every key ending in .crt, so an old
 * and a new CA during a migration) or `ca.crt` beside the node certificate; plus, with
 * SelfSigned, tls.caSecret's certificates when one is named. Undefined (and why) when there is
 * none to read: the nodes are then reported unreachable rather than trusted blindly.
 */
export async function nodeTrustCertificates(
  api: KubeApi,
  cluster: ClusterIdentity,
  spec: EffectiveSpec,
): Promise<{ ca: string[] } | { problem: string }> {
  const ca: string[] = [];
  if (spec.tls.mode === 'SelfSigned') {
    const pem = decodeSecretValue(await api.get(SECRETS, cluster.namespace, caSecretName(cluster.name)), 'ca.crt');
    if (pem !== undefined) ca.push(pem);
  }
  if (spec.tls.caSecret !== undefined) {
    ca.push(...crtValues(await api.get(SECRETS, cluster.namespace, spec.tls.caSecret)));
  } else if (spec.tls.mode === 'Secret') {
    const pem = decodeSecretValue(await api.get(SECRETS, cluster.namespace, spec.tls.certificateSecret ?? ''), 'ca.crt');
    if (pem !== undefined) ca.push(pem);
  }
  if (ca.length > 0) return { ca };
  const where = spec.tls.mode === 'SelfSigned' ? caSecretName(cluster.name) : (trustedCaSecretName(cluster.name, spec) ?? '');
  return { problem: `no CA certificate to verify the nodes with in Secret ${where}` };
}

function describeCertificate(pem: string): Pick<TlsOutcome, 'certificates' | 'fingerprint'> {
  const secretHash = `sha256:${createHash('sha256').update(pem).digest('hex').slice(0, 16)}`;
  try {
    const certificate = new X509Certificate(pem);
    return {
      certificates: { secretHash, notAfter: new Date(certificate.validTo).toISOString() },
      fingerprint: `sha256:${createHash('sha256').update(certificate.raw).digest('hex')}`,
    };
  } catch {
    return { certificates: { secretHash, notAfter: '' } };
  }
}

/** PVCs of a pod about to be created; existing ones (from before a restart or scale-down) are kept. */
export async function ensureClaims(api: KubeApi, claims: readonly KubeObject[]): Promise<string[]> {
  const created: string[] = [];
  for (const claim of claims) if (await createIfMissing(api, PVCS, claim)) created.push(claim.metadata.name ?? '');
  return created;
}

/** The ops user's credentials, for the node's admin endpoints (resign, reload). */
export async function opsCredentials(api: KubeApi, namespace: string, spec: EffectiveSpec): Promise<{ username: string; password: string } | undefined> {
  const secret = await api.get(SECRETS, namespace, spec.users.ops.name);
  const password = decodeSecretValue(secret, spec.users.ops.key);
  return password === undefined ? undefined : { username: 'ops', password };
}

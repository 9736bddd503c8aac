/**
 * The I/O of certificate rotation (step reload-certificates of reconcile-cluster.ts): read the
 * target from the Secrets, ask each node for its certificate report, nudge the kubelet, reload a
 * node (SIGHUP through pods/exec, or POST /admin/reloadconfig) and read the outcome. What to do
 * is decided by the pure certificate-rotation.ts.
 */
import type { Logger } from 'pino';
import { ANNOTATION_CERTIFICATE_HASH } from '../../api/group.js';
import type { NodeAccess } from '../../node-client/node-access.js';
import type { NodeClient } from '../../node-client/node-client.js';
import { NodeSignalError, type NodeSignaller } from '../../node-client/node-signal.js';
import { describeError } from '../../runtime/describe-error.js';
import type { KubeApi, KubeObject } from '../../runtime/kube-api.js';
import { PODS, SECRETS } from '../../runtime/resource-types.js';
import type { EffectiveSpec } from '../../resources/effective-spec.js';
import type { ClusterIdentity } from '../../resources/labels.js';
import { nodeTlsSecretName } from '../../resources/names.js';
import { decodeSecretValue } from '../../resources/secrets.js';
import { trustedCaSecretName } from '../../resources/node-settings.js';
import { nodeVerdict, reloadResult, rotationTarget, type NodeCertificateView, type ReloadResult, type RotationTarget } from './certificate-rotation.js';
import { nodeEndpoint, type PodView } from './observe.js';

/** The CA certificates (PEM) the nodes are given to trust: every .crt key of tls.caSecret, else ca.crt of the node Secret. */
function nodeRootPems(caSecret: KubeObject | undefined, named: boolean): string[] {
  if (!named) {
    const pem = decodeSecretValue(caSecret, 'ca.crt');
    return pem === undefined ? [] : [pem];
  }
  const data = (caSecret?.['data'] ?? {}) as Record<string, string>;
  return Object.keys(data)
    .filter((key) => key.endsWith('.crt'))
    .map((key) => decodeSecretValue(caSecret, key) ?? '')
    .filter((pem) => pem.includes('BEGIN CERTIFICATE'));
}

/** Latest write to a Secret (its managedFields' times): when it changed, to the second. */
function changedAtMs(secret: KubeObject | undefined): number | undefined {
  const fields = (secret?.metadata as { managedFields?: { time?: string }[] } | undefined)?.managedFields ?? [];
  const times = fields.map((entry) => (entry.time === undefined ? NaN : Date.parse(entry.time))).filter((ms) => !Number.isNaN(ms));
  return times.length === 0 ? undefined : Math.max(...times);
}

export interface TargetRead {
  readonly target: RotationTarget;
  /** When the Secrets last changed (the latest managedFields time of either). */
  readonly changedAtMs: number | undefined;
  /** Every CA certificate the operator may need to verify nodes during the change. */
  readonly caPems: readonly string[];
}

export async function readRotationTarget(api: KubeApi, cluster: ClusterIdentity, spec: EffectiveSpec): Promise<TargetRead | undefined> {
  const certificateSecret = spec.tls.mode === 'Secret' ? (spec.tls.certificateSecret ?? '') : nodeTlsSecretName(cluster.name);
  const secret = await api.get(SECRETS, cluster.namespace, certificateSecret);
  const caName = trustedCaSecretName(cluster.name, spec);
  const caSecret = caName === undefined ? undefined : caName === certificateSecret ? secret : await api.get(SECRETS, cluster.namespace, caName);
  const certificate = decodeSecretValue(secret, 'tls.crt');
  const key = decodeSecretValue(secret, 'tls.key');
  if (certificate === undefined || key === undefined) return undefined;
  const caPems = nodeRootPems(caSecret, spec.tls.caSecret !== undefined);
  const target = rotationTarget(certificate, key, caPems);
  if (target === undefined) return undefined;
  const times = [changedAtMs(secret), changedAtMs(caSecret)].filter((ms): ms is number => ms !== undefined);
  return { target, changedAtMs: times.length === 0 ? undefined : Math.max(...times), caPems };
}

export interface NodeRotationDeps {
  readonly api: KubeApi;
  readonly client: NodeClient;
  readonly access: NodeAccess;
  readonly signaller: NodeSignaller | undefined;
  readonly cluster: ClusterIdentity;
  readonly log: Logger;
  /** CAs to verify the node with: the Secret's now and those trusted before the change. */
  readonly trust: readonly string[];
  readonly credentials: { username: string; password: string } | undefined;
}

/** The node's certificate report, or why it could not be had. */
export async function viewNode(deps: NodeRotationDeps, pod: PodView): Promise<NodeCertificateView> {
  const endpoint = await nodeEndpoint({ cluster: deps.cluster.name, namespace: deps.cluster.namespace, pod, access: deps.access, trust: { ca: deps.trust } });
  if (endpoint === undefined) return { pod: pod.name, problem: 'the pod has no address' };
  if ('problem' in endpoint) return { pod: pod.name, problem: endpoint.problem };
  try {
    const { report, servedFingerprint } = await deps.client.certificateReport(endpoint);
    return {
      pod: pod.name,
      ...(servedFingerprint === undefined ? {} : { served: servedFingerprint }),
      ...(report.certificate === undefined ? {} : { loaded: report.certificate.fingerprintSha256, roots: (report.certificate.trustedRoots ?? []).map((root) => root.fingerprintSha256) }),
      ...(report.certificateOnDisk?.fingerprintSha256 === undefined ? {} : { onDisk: report.certificateOnDisk.fingerprintSha256 }),
      ...(report.certificateOnDisk?.problem === undefined ? {} : { onDiskProblem: report.certificateOnDisk.problem }),
      ...(report.lastReload === undefined ? {} : { lastReload: report.lastReload }),
    };
  } catch (err: unknown) {
    return { pod: pod.name, problem: describeError(err) };
  }
}

/**
 * Asks the kubelet to refresh the pod's Secret volumes now rather than at its next periodic
 * sync: an update of the pod (this annotation) makes it sync the pod, which re-projects them.
 */
export async function nudgeKubelet(api: KubeApi, cluster: ClusterIdentity, pod: PodView, hash: string): Promise<boolean> {
  const annotations = (pod.object.metadata.annotations ?? {}) as Record<string, string>;
  if (annotations[ANNOTATION_CERTIFICATE_HASH] === hash) return false;
  await api.patch(PODS, cluster.namespace, pod.name, { metadata: { annotations: { [ANNOTATION_CERTIFICATE_HASH]: hash } } });
  return true;
}

const OUTCOME_WAIT_MS = 10_000;
const OUTCOME_POLL_MS = 250;

/** Reloads one node (its files are the new ones) by `method` and waits up to 10 s for the outcome. */
export async function reloadNode(deps: NodeRotationDeps, pod: PodView, before: NodeCertificateView, target: RotationTarget, method: 'Signal' | 'Endpoint'): Promise<ReloadResult> {
  let refusal: string | undefined;
  if (method === 'Endpoint') {
    const endpoint = await nodeEndpoint({ cluster: deps.cluster.name, namespace: deps.cluster.namespace, pod, access: deps.access, trust: { ca: deps.trust } });
    if (endpoint === undefined || 'problem' in endpoint) return { kind: 'not-yet', why: `${pod.name} cannot be reached` };
    if (deps.credentials === undefined) return { kind: 'refused', message: 'the ops credentials cannot be read' };
    try {
      const outcome = await deps.client.reloadConfig(endpoint, deps.credentials);
      if (outcome.kind === 'refused') refusal = `POST /admin/reloadconfig answered ${outcome.statusCode}: ${outcome.message}`;
      if (outcome.kind === 'unsupported') refusal = 'the node has no POST /admin/reloadconfig';
    } catch (err: unknown) {
      return { kind: 'not-yet', why: `POST /admin/reloadconfig on ${pod.name}: ${describeError(err)}` };
    }
    if (refusal !== undefined) return { kind: 'refused', message: refusal };
  } else {
    if (deps.signaller === undefined) return { kind: 'signal-failed', message: 'the operator may not exec in pods (POD_EXEC=false)', denied: true };
    try {
      await deps.signaller.hangUp(deps.cluster.namespace, pod.name);
    } catch (err: unknown) {
      const denied = err instanceof NodeSignalError && err.code === 'EDBOP_EXEC_DENIED';
      const message = `SIGHUP through pods/exec failed: ${describeError(err)}`;
      deps.log.warn({ pod: pod.name, code: err instanceof NodeSignalError ? err.code : undefined, httpStatus: err instanceof NodeSignalError ? err.httpStatus : undefined, error: message }, 'SIGHUP through pods/exec failed');
      return { kind: 'signal-failed', message, denied };
    }
  }
  const deadline = Date.now() + OUTCOME_WAIT_MS;
  for (;;) {
    const after = await viewNode(deps, pod);
    const result = after.problem === undefined ? reloadResult({ before: before.lastReload, after, target }) : ({ kind: 'pending' } as const);
    if (result.kind !== 'pending' || Date.now() >= deadline) {
      return result.kind === 'pending' ? { kind: 'not-yet', why: `${pod.name} reported no reload within ${OUTCOME_WAIT_MS / 1000} s${after.problem === undefined ? '' : ` (${after.problem})`}` } : result;
    }
    await new Promise((resolve) => setTimeout(resolve, OUTCOME_POLL_MS));
  }
}

export { nodeVerdict };

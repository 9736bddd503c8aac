/**
 * PURE: certificate rotation (issue 22). When the certificate or CA Secret of a cluster changes,
 * every node is reloaded and each reload verified. This module decides, from what the nodes
 * report, what changed, where each node is, and when a failed reload is tried again; the
 * controller (reconcile-cluster.ts, step reload-certificates) does the I/O.
 *
 * A node is verified when its own report (GET /info) says it loaded the Secret's certificate and
 * trusts exactly the Secret's CAs, and the TLS handshake of that same request presented the
 * certificate. It is reloaded only once its certificate file on disk is the new one (the kubelet
 * updates Secret volumes after its sync delay; the controller nudges it by annotating the pod).
 */
import { createHash, X509Certificate } from 'node:crypto';
import type { CertificateRotationStatus } from '../../api/eventdb-cluster.js';

/** A fingerprint in one form: lower-case hex without separators (`sha256:ab..` and `AB:..` both map to it). */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint.replace(/^sha256:/i, '').replace(/:/g, '').toLowerCase();
}

export function fingerprintOfPem(pem: string): string | undefined {
  try {
    return normalizeFingerprint(new X509Certificate(pem).fingerprint256);
  } catch {
    return undefined;
  }
}

/** What every node should run: the Secret's certificate and the CAs to trust, and their content hash. */
export interface RotationTarget {
  readonly hash: string;
  readonly fingerprint: string;
  readonly roots: readonly string[];
}

/** The content hash of the certificate Secret (certificate and key) and the trusted CAs. */
export function rotationTarget(certificatePem: string, privateKeyPem: string, caPems: readonly string[]): RotationTarget | undefined {
  const fingerprint = fingerprintOfPem(certificatePem);
  if (fingerprint === undefined) return undefined;
  const roots = [...new Set(caPems.map(fingerprintOfPem).filter((entry): entry is string => entry !== undefined))].sort();
  const hash = createHash('sha256').update(certificatePem).update('\0').update(privateKeyPem).update('\0').update(roots.join(',')).digest('hex').slice(0, 16);
  return { hash: `sha256:${hash}`, fingerprint, roots };
}

/** What one node says about its certificates, and the certificate its TLS handshake showed. */
export interface NodeCertificateView {
  readonly pod: string;
  /** Why the node could not be asked (unreachable, not trusted). */
  readonly problem?: string;
  readonly served?: string;
  readonly loaded?: string;
  readonly onDisk?: string;
  readonly onDiskProblem?: string;
  readonly roots?: readonly string[];
  readonly lastReload?: { readonly at: string; readonly result: string; readonly message?: string };
}

export type NodeVerdict =
  | { readonly kind: 'verified' }
  | { readonly kind: 'unreachable'; readonly why: string }
  | { readonly kind: 'waiting-for-files'; readonly why: string }
  | { readonly kind: 'reload' };

function sameRoots(a: readonly string[] | undefined, b: readonly string[]): boolean {
  const left = [...new Set((a ?? []).map(normalizeFingerprint))].sort();
  return left.length === b.length && left.every((entry, index) => entry === b[index]);
}

/** Whether the node runs the target already, must wait for its files, or should reload now. */
export function nodeVerdict(view: NodeCertificateView, target: RotationTarget): NodeVerdict {
  if (view.problem !== undefined) return { kind: 'unreachable', why: view.problem };
  const served = view.served === undefined ? undefined : normalizeFingerprint(view.served);
  const loaded = view.loaded === undefined ? undefined : normalizeFingerprint(view.loaded);
  if (served === target.fingerprint && loaded === target.fingerprint && sameRoots(view.roots, target.roots)) return { kind: 'verified' };
  const onDisk = view.onDisk === undefined ? undefined : normalizeFingerprint(view.onDisk);
  if (onDisk !== target.fingerprint) {
    return { kind: 'waiting-for-files', why: view.onDiskProblem ?? `the certificate file in ${view.pod} is still ${onDisk === undefined ? 'unknown' : onDisk.slice(0, 16)}` };
  }
  return { kind: 'reload' };
}

export type ReloadResult =
  | { readonly kind: 'verified' }
  /** The node refused the new files: nothing changed on it. */
  | { readonly kind: 'refused'; readonly message: string }
  /** The node reloaded but does not run the target yet (a volume not updated yet, e.g. the CA's). */
  | { readonly kind: 'not-yet'; readonly why: string }
  /** A signal was sent and the node has not reported a reload since. */
  | { readonly kind: 'pending' }
  /** The SIGHUP could not be sent (the exec failed; the node was not asked). `denied`: the apiserver refused the exec (401/403). */
  | { readonly kind: 'signal-failed'; readonly message: string; readonly denied: boolean };

/**
 * The outcome of a reload from the node's report after it: `before` is the node's lastReload
 * before the signal (a reload is seen by its new `at`), `refusal` the endpoint's refusal if any.
 */
export function reloadResult(options: {
  readonly before: NodeCertificateView['lastReload'];
  readonly after: NodeCertificateView;
  readonly target: RotationTarget;
  readonly refusal?: string;
}): ReloadResult {
  const { before, after, target } = options;
  if (options.refusal !== undefined) return { kind: 'refused', message: options.refusal };
  if (nodeVerdict(after, target).kind === 'verified') return { kind: 'verified' };
  const last = after.lastReload;
  if (last === undefined || (before !== undefined && last.at === before.at)) return { kind: 'pending' };
  if (last.result === 'Refused') return { kind: 'refused', message: last.message ?? 'the node refused the reload' };
  const loaded = after.loaded === undefined ? undefined : normalizeFingerprint(after.loaded);
  if (loaded !== target.fingerprint) return { kind: 'not-yet', why: `${after.pod} reloaded but still serves ${loaded?.slice(0, 16) ?? 'an unknown certificate'}` };
  if (!sameRoots(after.roots, target.roots)) return { kind: 'not-yet', why: `${after.pod} reloaded but does not trust the Secret's CAs yet (CA volume not updated)` };
  return { kind: 'not-yet', why: `${after.pod} reloaded; the handshake still showed another certificate` };
}

/** Failed reloads of a node are tried again after 5, 10, 20, then every 30 s (a fixed Secret goes through). */
export function retryDelayMs(failures: number): number {
  return Math.min(30_000, 5000 * 2 ** Math.max(0, failures - 1));
}

/** After this many refusals a node's failure is reported (condition False, Warning Event). */
export const FAILURES_BEFORE_REPORT = 2;

/** A node that keeps the old files longer than this after the change is reported as failing. */
export const FILES_WAIT_LIMIT_MS = 3 * 60_000;

/**
 * Whether the nodes must be brought to `target`: the Secrets changed since the hash the nodes
 * were last verified with, or a node serves another certificate. Without a recorded hash (a new
 * cluster), nodes serving the certificate simply adopt it.
 */
export function rotationNeeded(input: {
  readonly verifiedHash: string | undefined;
  readonly target: RotationTarget;
  /** Certificates the running nodes served at the last observation (sha256 forms). */
  readonly served: readonly string[];
}): boolean {
  const stale = input.served.some((fingerprint) => normalizeFingerprint(fingerprint) !== input.target.fingerprint);
  if (stale) return true;
  return input.verifiedHash !== undefined && input.verifiedHash !== input.target.hash;
}

/** The nodes still to do, in order (followers before the leader: the leader last, as for restarts). */
export function remainingNodes(pods: readonly string[], completed: readonly string[], leader: string | undefined): string[] {
  const done = new Set(completed);
  return pods.filter((pod) => !done.has(pod)).sort((a, b) => Number(a === leader) - Number(b === leader) || a.localeCompare(b));
}

/** When a self-signed node certificate is renewed: `renewBeforeMs` before it expires. */
export function renewalDue(notAfterMs: number, nowMs: number, renewBeforeMs: number): boolean {
  return notAfterMs - nowMs < renewBeforeMs;
}

/**
 * Where a rotation runs. A reload restarts nothing, so it never waits for another operation:
 * - `own-operation`: nothing else holds the cluster; the rotation is status.operation
 *   (kind CertificateReload) and a rolling update or scale waits for it;
 * - `alongside`: a Backup, Scavenge, RollingUpdate, Scale or Restore holds the cluster (or a
 *   Backup or ScavengeSchedule asks for it by its hold annotation): status.operation stays that
 *   operation, and the rotation goes on next to it (status.certificates.rotation and the
 *   CertificatesReloaded condition show it). A rolling update restarts pods with the Secret's
 *   current files, so those verify at once; the others are reloaded like any node.
 */
export type RotationPlacement =
  | { readonly kind: 'own-operation' }
  /** `holder`: "<kind> <id>" of the operation that holds the cluster, e.g. "Scavenge 5f0c...". */
  | { readonly kind: 'alongside'; readonly holder: string; readonly releaseOperation: boolean };

export function rotationPlacement(input: {
  readonly operation: { readonly kind: string; readonly id: string } | undefined;
  /** A Backup or ScavengeSchedule asks for the cluster (annotation eventdb.io/backup-hold or eventdb.io/scavenge-hold). */
  readonly holdRequested: 'Backup' | 'Scavenge' | undefined;
}): RotationPlacement {
  const { operation, holdRequested } = input;
  if (operation !== undefined && operation.kind !== 'CertificateReload') return { kind: 'alongside', holder: `${operation.kind} ${operation.id}`, releaseOperation: false };
  // The hold takes status.operation from the rotation, which goes on next to it.
  if (holdRequested !== undefined) return { kind: 'alongside', holder: `${holdRequested} (requested)`, releaseOperation: operation !== undefined };
  return { kind: 'own-operation' };
}

/**
 * The rotation to carry on for `target`: the one in the status when it aims at the same hash and
 * is not finished (an operator restarted in the middle continues its counts), else a new one.
 * `changedAtMs` is the Secrets' latest write; the seconds of a new rotation count from there.
 */
export function beginRotation(input: {
  readonly previous: CertificateRotationStatus | undefined;
  readonly target: RotationTarget;
  readonly method: 'Signal' | 'Endpoint';
  readonly changedAtMs: number | undefined;
  readonly nowMs: number;
  /** The CA certificates trusted before the change (nodes not yet reloaded present certificates they sign). */
  readonly previousCas: readonly string[];
}): { readonly rotation: CertificateRotationStatus; readonly started: boolean } {
  const { previous, target, nowMs } = input;
  if (previous !== undefined && previous.secretHash === target.hash && previous.finishedAt === undefined) return { rotation: previous, started: false };
  // The same hash as the last rotation: no Secret change (e.g. a node came back with old files).
  const sameSecrets = previous?.secretHash === target.hash;
  const changedAtMs = !sameSecrets && input.changedAtMs !== undefined && input.changedAtMs <= nowMs ? input.changedAtMs : nowMs;
  const cas = [...new Set(input.previousCas)].slice(0, 16);
  return {
    started: true,
    rotation: {
      secretHash: target.hash,
      method: input.method,
      secretChangedAt: new Date(changedAtMs).toISOString(),
      startedAt: new Date(nowMs).toISOString(),
      verified: [],
      ...(cas.length === 0 ? {} : { previousCaCertificates: cas }),
    },
  };
}

/** The failures so far of a node in this rotation, if any. */
export function failureOf(rotation: CertificateRotationStatus, pod: string): { readonly count: number; readonly lastError: string; readonly nextAttemptAtMs: number } | undefined {
  const entry = rotation.nodes?.find((node) => node.pod === pod);
  if (entry === undefined) return undefined;
  const nextAttemptAtMs = entry.nextAttemptAt === undefined ? 0 : Date.parse(entry.nextAttemptAt);
  return { count: entry.failures, lastError: entry.lastError ?? '', nextAttemptAtMs: Number.isNaN(nextAttemptAtMs) ? 0 : nextAttemptAtMs };
}

/** One more failed reload of `pod`: counted, and not tried again before the back-off. */
export function recordFailure(rotation: CertificateRotationStatus, pod: string, message: string, nowMs: number): CertificateRotationStatus {
  const count = (failureOf(rotation, pod)?.count ?? 0) + 1;
  const others = (rotation.nodes ?? []).filter((node) => node.pod !== pod);
  const entry = { pod, failures: count, lastError: message.slice(0, 500), nextAttemptAt: new Date(nowMs + retryDelayMs(count)).toISOString() };
  return { ...rotation, nodes: [...others, entry].sort((a, b) => a.pod.localeCompare(b.pod)) };
}

/** `pod` serves the target: verified, its failures forgotten. */
export function recordVerified(rotation: CertificateRotationStatus, pod: string): CertificateRotationStatus {
  const verified = [...new Set([...(rotation.verified ?? []), pod])].sort();
  const nodes = (rotation.nodes ?? []).filter((node) => node.pod !== pod);
  const { nodes: _nodes, ...rest } = rotation;
  return { ...rest, verified, ...(nodes.length === 0 ? {} : { nodes }) };
}

/** The last node was verified at `verifiedMs`: the rotation's record, without its working state. */
export function finishRotation(rotation: CertificateRotationStatus, verifiedMs: number): CertificateRotationStatus {
  const { nodes: _nodes, previousCaCertificates: _cas, ...rest } = rotation;
  const changedAtMs = Date.parse(rotation.secretChangedAt);
  const seconds = Math.max(0, (verifiedMs - (Number.isNaN(changedAtMs) ? verifiedMs : changedAtMs)) / 1000);
  return { ...rest, finishedAt: new Date(verifiedMs).toISOString(), seconds: Math.round(seconds * 10) / 10 };
}

/** Failed SIGHUPs (the exec, not the node) in one rotation after which it reloads by Endpoint; a denied exec falls back at once. */
export const SIGNAL_FAILURES_BEFORE_FALLBACK = 3;

/** How the nodes of this rotation are reloaded now: tls.reload, unless the rotation fell back to Endpoint. */
export function reloadMethod(rotation: CertificateRotationStatus, configured: 'Signal' | 'Endpoint'): 'Signal' | 'Endpoint' {
  return rotation.fallback === undefined ? configured : rotation.fallback.method;
}

/** The rotation's method in words, for Events and the condition: "Signal", or "Endpoint (fallback from Signal: why)". */
export function methodInWords(rotation: CertificateRotationStatus, configured: 'Signal' | 'Endpoint'): string {
  return rotation.fallback === undefined ? configured : `${rotation.fallback.method} (fallback from ${configured}: ${rotation.fallback.reason})`;
}

/** Signal cannot be used at all (the operator may not exec in pods): the rotation reloads by Endpoint from its start. */
export function withoutSignal(rotation: CertificateRotationStatus, reason: string, nowMs: number): CertificateRotationStatus {
  if (rotation.fallback !== undefined) return rotation;
  return { ...rotation, fallback: { method: 'Endpoint', reason, at: new Date(nowMs).toISOString() } };
}

/**
 * One more failed SIGHUP (`pod`: the exec failed with `message`): counted; the rotation falls back
 * to Endpoint once SIGNAL_FAILURES_BEFORE_FALLBACK such failures were seen, or at once when the
 * apiserver denied the exec (asking again changes nothing until the RBAC does).
 */
export function recordSignalFailure(rotation: CertificateRotationStatus, pod: string, failure: { readonly message: string; readonly denied: boolean }, nowMs: number): CertificateRotationStatus {
  const signalFailures = (rotation.signalFailures ?? 0) + 1;
  const counted = { ...rotation, signalFailures };
  if (rotation.fallback !== undefined) return counted;
  if (!failure.denied && signalFailures < SIGNAL_FAILURES_BEFORE_FALLBACK) return counted;
  const why = failure.denied ? 'the apiserver denied pods/exec' : `${signalFailures} SIGHUPs through pods/exec failed`;
  return { ...counted, fallback: { method: 'Endpoint', reason: `${why}, last on ${pod}: ${failure.message}`.slice(0, 600), at: new Date(nowMs).toISOString() } };
}

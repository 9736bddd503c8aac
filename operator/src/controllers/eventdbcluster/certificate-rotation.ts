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
  | { readonly kind: 'pending' };

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

import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority, createSignedCertificate } from '../../resources/tls/certificate.js';
import {
  beginRotation,
  failureOf,
  finishRotation,
  recordFailure,
  recordVerified,
  rotationPlacement,
  FAILURES_BEFORE_REPORT,
  nodeVerdict,
  normalizeFingerprint,
  reloadResult,
  remainingNodes,
  renewalDue,
  retryDelayMs,
  rotationNeeded,
  rotationTarget,
  type NodeCertificateView,
  methodInWords,
  recordSignalFailure,
  reloadMethod,
  SIGNAL_FAILURES_BEFORE_FALLBACK,
  withoutSignal,
} from './certificate-rotation.js';

const nowMs = Date.parse('2026-11-28T00:00:00Z');
const caOld = createCertificateAuthority({ commonName: 'Old CA', validityDays: 30, nowMs });
const caNew = createCertificateAuthority({ commonName: 'New CA', validityDays: 30, nowMs });
const leafOld = createSignedCertificate({ commonName: 'a.eventdb.test', subjectAltNames: ['localhost'], validityDays: 10, nowMs }, caOld);
const leafNew = createSignedCertificate({ commonName: 'b.eventdb.test', subjectAltNames: ['localhost'], validityDays: 10, nowMs }, caNew);
/** The node's own form: upper-case hex with colons. */
const nodeForm = (pem: string): string => new X509Certificate(pem).fingerprint256;
const operatorForm = (pem: string): string => `sha256:${normalizeFingerprint(nodeForm(pem))}`;

const target = rotationTarget(leafNew.certificatePem, leafNew.privateKeyPem, [caOld.certificatePem, caNew.certificatePem])!;
const roots = [nodeForm(caNew.certificatePem), nodeForm(caOld.certificatePem)];

function view(overrides: Partial<NodeCertificateView>): NodeCertificateView {
  return { pod: 'orders-1', served: operatorForm(leafOld.certificatePem), loaded: nodeForm(leafOld.certificatePem), onDisk: nodeForm(leafOld.certificatePem), roots: [nodeForm(caOld.certificatePem)], ...overrides };
}

describe('certificate rotation (pure)', () => {
  it('the target hash covers certificate, key and every CA; fingerprints compare across the node and operator forms', () => {
    expect(target.fingerprint).toBe(normalizeFingerprint(operatorForm(leafNew.certificatePem)));
    expect(target.roots).toHaveLength(2);
    const otherKey = rotationTarget(leafNew.certificatePem, leafOld.privateKeyPem, [caOld.certificatePem, caNew.certificatePem])!;
    const oneCa = rotationTarget(leafNew.certificatePem, leafNew.privateKeyPem, [caNew.certificatePem])!;
    const reordered = rotationTarget(leafNew.certificatePem, leafNew.privateKeyPem, [caNew.certificatePem, caOld.certificatePem])!;
    expect(new Set([target.hash, otherKey.hash, oneCa.hash]).size).toBe(3);
    expect(reordered.hash).toBe(target.hash);
    expect(rotationTarget('not a certificate', 'x', [])).toBeUndefined();
  });

  it('a change is seen from the hash the nodes were verified with, or from a node serving another certificate', () => {
    const current = [operatorForm(leafNew.certificatePem)];
    expect(rotationNeeded({ verifiedHash: undefined, target, served: current })).toBe(false);
    expect(rotationNeeded({ verifiedHash: target.hash, target, served: current })).toBe(false);
    expect(rotationNeeded({ verifiedHash: 'sha256:0000', target, served: current })).toBe(true);
    expect(rotationNeeded({ verifiedHash: target.hash, target, served: [operatorForm(leafOld.certificatePem)] })).toBe(true);
  });

  it('a node waits for its files, then reloads, and is verified only by loaded certificate, trusted roots and handshake together', () => {
    expect(nodeVerdict(view({ problem: 'refused' }), target)).toEqual({ kind: 'unreachable', why: 'refused' });
    expect(nodeVerdict(view({}), target).kind).toBe('waiting-for-files');
    expect(nodeVerdict(view({ onDisk: nodeForm(leafNew.certificatePem) }), target)).toEqual({ kind: 'reload' });
    const loaded = { served: operatorForm(leafNew.certificatePem), loaded: nodeForm(leafNew.certificatePem), onDisk: nodeForm(leafNew.certificatePem) };
    expect(nodeVerdict(view({ ...loaded, roots }), target)).toEqual({ kind: 'verified' });
    // The CA Secret's update not loaded yet (only the old CA trusted): not verified.
    expect(nodeVerdict(view({ ...loaded }), target)).toEqual({ kind: 'reload' });
    // The node says it loaded it, but the handshake showed the old one: not verified.
    expect(nodeVerdict(view({ ...loaded, roots, served: operatorForm(leafOld.certificatePem) }), target)).toEqual({ kind: 'reload' });
  });

  it('the outcome of a reload: refused with the node\'s reason, pending until the node reports a new reload, verified', () => {
    const before = { at: '2026-11-28T00:00:01.000Z', result: 'Applied' };
    const onDisk = nodeForm(leafNew.certificatePem);
    expect(reloadResult({ before, after: view({ onDisk, lastReload: before }), target })).toEqual({ kind: 'pending' });
    const refused = { at: '2026-11-28T00:00:05.000Z', result: 'Refused', message: 'the private key does not match the certificate' };
    expect(reloadResult({ before, after: view({ onDisk, lastReload: refused }), target })).toEqual({ kind: 'refused', message: refused.message });
    expect(reloadResult({ before, after: view({ onDisk }), target, refusal: '400 bad key' })).toEqual({ kind: 'refused', message: '400 bad key' });
    const applied = { at: '2026-11-28T00:00:06.000Z', result: 'Applied' };
    expect(reloadResult({ before, after: view({ onDisk, lastReload: applied }), target }).kind).toBe('not-yet');
    const good = view({ onDisk, lastReload: applied, served: operatorForm(leafNew.certificatePem), loaded: onDisk, roots });
    expect(reloadResult({ before, after: good, target })).toEqual({ kind: 'verified' });
  });

  it('retries back off, the leader goes last, renewal is due within its margin', () => {
    expect([1, 2, 3, 4, 9].map(retryDelayMs)).toEqual([5000, 10_000, 20_000, 30_000, 30_000]);
    expect(FAILURES_BEFORE_REPORT).toBeGreaterThan(1);
    expect(remainingNodes(['orders-0', 'orders-1', 'orders-2'], ['orders-2'], 'orders-0')).toEqual(['orders-1', 'orders-0']);
    expect(renewalDue(nowMs + 59_000, nowMs, 60_000)).toBe(true);
    expect(renewalDue(nowMs + 61_000, nowMs, 60_000)).toBe(false);
  });
});

describe('where a rotation runs', () => {
  it('is the cluster operation when nothing else holds the cluster', () => {
    expect(rotationPlacement({ operation: undefined, holdRequested: undefined })).toEqual({ kind: 'own-operation' });
    expect(rotationPlacement({ operation: { kind: 'CertificateReload', id: 'certificates-ab' }, holdRequested: undefined })).toEqual({ kind: 'own-operation' });
  });

  it('runs next to a scavenge, backup, rolling update or scale, which keeps status.operation', () => {
    for (const kind of ['Scavenge', 'Backup', 'RollingUpdate', 'Scale', 'Restore']) {
      expect(rotationPlacement({ operation: { kind, id: 'op-1' }, holdRequested: undefined })).toEqual({ kind: 'alongside', holder: `${kind} op-1`, releaseOperation: false });
    }
    expect(rotationPlacement({ operation: { kind: 'Scavenge', id: 'c-1' }, holdRequested: 'Scavenge' })).toEqual({ kind: 'alongside', holder: 'Scavenge c-1', releaseOperation: false });
  });

  it('gives status.operation up to a backup or scavenge that asks for the cluster, and goes on next to it', () => {
    expect(rotationPlacement({ operation: { kind: 'CertificateReload', id: 'certificates-ab' }, holdRequested: 'Backup' })).toEqual({ kind: 'alongside', holder: 'Backup (requested)', releaseOperation: true });
    expect(rotationPlacement({ operation: undefined, holdRequested: 'Scavenge' })).toEqual({ kind: 'alongside', holder: 'Scavenge (requested)', releaseOperation: false });
  });
});

describe('the rotation persisted in status.certificates.rotation', () => {
  const changedAtMs = nowMs - 3000;
  const start = (): ReturnType<typeof beginRotation> =>
    beginRotation({ previous: undefined, target, method: 'Signal', changedAtMs, nowMs, previousCas: [caOld.certificatePem, caOld.certificatePem] });

  it('starts from the Secret change and keeps the CAs trusted before it', () => {
    const { rotation, started } = start();
    expect(started).toBe(true);
    expect(rotation).toEqual({
      secretHash: target.hash,
      method: 'Signal',
      secretChangedAt: new Date(changedAtMs).toISOString(),
      startedAt: new Date(nowMs).toISOString(),
      verified: [],
      previousCaCertificates: [caOld.certificatePem],
    });
  });

  it('an operator restarted in the middle continues the counts, the verified nodes and the start', () => {
    let rotation = start().rotation;
    rotation = recordVerified(rotation, 'orders-0');
    rotation = recordFailure(rotation, 'orders-1', 'the key does not match', nowMs);
    // What a restarted operator reads back from the status (a JSON round trip).
    const restored = JSON.parse(JSON.stringify(rotation)) as typeof rotation;
    const later = nowMs + 60_000;
    const again = beginRotation({ previous: restored, target, method: 'Endpoint', changedAtMs: later, nowMs: later, previousCas: [] });
    expect(again.started).toBe(false);
    expect(again.rotation).toEqual(restored);
    expect(failureOf(again.rotation, 'orders-1')).toEqual({ count: 1, lastError: 'the key does not match', nextAttemptAtMs: nowMs + retryDelayMs(1) });
    const twice = recordFailure(again.rotation, 'orders-1', 'the key does not match', later);
    expect(failureOf(twice, 'orders-1')?.count).toBe(2);
    expect(failureOf(twice, 'orders-1')?.nextAttemptAtMs).toBe(later + retryDelayMs(2));
    expect(failureOf(twice, 'orders-2')).toBeUndefined();
    // The seconds still count from the Secret change, not from the restart.
    const done = finishRotation(recordVerified(recordVerified(twice, 'orders-1'), 'orders-2'), changedAtMs + 75_300);
    expect(done).toEqual({
      secretHash: target.hash,
      method: 'Signal',
      secretChangedAt: new Date(changedAtMs).toISOString(),
      startedAt: new Date(nowMs).toISOString(),
      finishedAt: new Date(changedAtMs + 75_300).toISOString(),
      seconds: 75.3,
      verified: ['orders-0', 'orders-1', 'orders-2'],
    });
  });

  it('a new Secret change during a rotation starts a new one: failures forgotten', () => {
    const failing = recordFailure(start().rotation, 'orders-1', 'refused', nowMs);
    const other = rotationTarget(leafOld.certificatePem, leafOld.privateKeyPem, [caOld.certificatePem])!;
    const next = beginRotation({ previous: failing, target: other, method: 'Signal', changedAtMs: nowMs + 5000, nowMs: nowMs + 6000, previousCas: [] });
    expect(next.started).toBe(true);
    expect(next.rotation.nodes).toBeUndefined();
    expect(next.rotation.secretChangedAt).toBe(new Date(nowMs + 5000).toISOString());
  });

  it('a finished rotation of the same Secrets is not continued; without a Secret write its seconds count from now', () => {
    const finished = finishRotation(recordVerified(start().rotation, 'orders-0'), nowMs + 1000);
    const again = beginRotation({ previous: finished, target, method: 'Signal', changedAtMs, nowMs: nowMs + 99_000, previousCas: [] });
    expect(again.started).toBe(true);
    expect(again.rotation.secretChangedAt).toBe(new Date(nowMs + 99_000).toISOString());
    // A Secret time in the future (clock skew) is not believed either.
    expect(beginRotation({ previous: undefined, target, method: 'Signal', changedAtMs: nowMs + 5000, nowMs, previousCas: [] }).rotation.secretChangedAt).toBe(new Date(nowMs).toISOString());
  });
});

describe('falling back from Signal to Endpoint', () => {
  const started = { secretHash: 'sha256:aa', method: 'Signal' as const, secretChangedAt: '2026-03-04T10:00:00.000Z', startedAt: '2026-03-04T10:00:00.000Z', verified: [] };
  const nowMs = Date.parse('2026-03-04T10:00:05Z');

  it('counts failed SIGHUPs and gives Signal up at the third', () => {
    let rotation = recordSignalFailure(started, 'hc-0', { message: 'socket hang up', denied: false }, nowMs);
    expect(rotation).toMatchObject({ signalFailures: 1 });
    expect(reloadMethod(rotation, 'Signal')).toBe('Signal');
    rotation = recordSignalFailure(rotation, 'hc-1', { message: 'socket hang up', denied: false }, nowMs);
    expect(reloadMethod(rotation, 'Signal')).toBe('Signal');
    rotation = recordSignalFailure(rotation, 'hc-2', { message: 'timed out', denied: false }, nowMs);
    expect(rotation.fallback).toEqual({ method: 'Endpoint', reason: `${SIGNAL_FAILURES_BEFORE_FALLBACK} SIGHUPs through pods/exec failed, last on hc-2: timed out`, at: '2026-03-04T10:00:05.000Z' });
    expect(reloadMethod(rotation, 'Signal')).toBe('Endpoint');
    expect(methodInWords(rotation, 'Signal')).toBe('Endpoint (fallback from Signal: 3 SIGHUPs through pods/exec failed, last on hc-2: timed out)');
    // kept when finished: the record says how the rotation went
    expect(finishRotation(rotation, nowMs).fallback).toEqual(rotation.fallback);
  });

  it('gives Signal up at once when the exec is denied, and keeps the first reason', () => {
    const rotation = recordSignalFailure(started, 'hc-0', { message: 'HTTP 403: forbidden', denied: true }, nowMs);
    expect(rotation.fallback?.reason).toBe('the apiserver denied pods/exec, last on hc-0: HTTP 403: forbidden');
    expect(recordSignalFailure(rotation, 'hc-1', { message: 'other', denied: false }, nowMs).fallback).toEqual(rotation.fallback);
    expect(withoutSignal(rotation, 'no exec', nowMs).fallback).toEqual(rotation.fallback);
    expect(withoutSignal(started, 'no exec', nowMs).fallback).toEqual({ method: 'Endpoint', reason: 'no exec', at: '2026-03-04T10:00:05.000Z' });
    expect(methodInWords(started, 'Signal')).toBe('Signal');
  });
});

import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority, createSignedCertificate } from '../../resources/tls/certificate.js';
import {
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

// The PVC growth builder: quantities in bytes, and what growing a claim takes (never a shrink).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../runtime/kube-api.js';
import { planClaimGrowth, quantityBytes } from './storage.js';

const claim = (storage: string, capacity?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data-orders-0', namespace: 'shop' },
  spec: { resources: { requests: { storage } } },
  ...(capacity === undefined ? {} : { status: { capacity: { storage: capacity } } }),
});

describe('quantityBytes', () => {
  it('reads binary, decimal and exponent suffixes, and plain numbers', () => {
    expect(quantityBytes('10Gi')).toBe(10 * 2 ** 30);
    expect(quantityBytes('1.5Gi')).toBe(1.5 * 2 ** 30);
    expect(quantityBytes('500M')).toBe(5e8);
    expect(quantityBytes('1e9')).toBe(1e9);
    expect(quantityBytes('2048')).toBe(2048);
    expect(quantityBytes(4096)).toBe(4096);
    expect(quantityBytes('-1Gi')).toBe(-(2 ** 30));
    expect(quantityBytes('ten')).toBeUndefined();
    expect(quantityBytes('10GB')).toBeUndefined();
  });
});

describe('planClaimGrowth', () => {
  it('raises the request of a smaller claim, in the spec\'s own spelling', () => {
    expect(planClaimGrowth(claim('10Gi', '10Gi'), '20Gi')).toEqual({ kind: 'expand', patch: { spec: { resources: { requests: { storage: '20Gi' } } } }, fromSize: '10Gi' });
    // 10Gi < 10.8G: different units compare by bytes
    expect(planClaimGrowth(claim('10Gi'), '10.8G').kind).toBe('expand');
  });

  it('is current when the claim asks for as much, whatever the units', () => {
    expect(planClaimGrowth(claim('1Gi', '1Gi'), '1024Mi')).toEqual({ kind: 'current' });
    expect(planClaimGrowth(claim('20Gi', '20Gi'), '20Gi')).toEqual({ kind: 'current' });
  });

  it('waits while the volume\'s capacity is below the request (the resize is under way)', () => {
    expect(planClaimGrowth(claim('20Gi', '10Gi'), '20Gi')).toEqual({ kind: 'resizing', capacity: '10Gi' });
  });

  it('never shrinks a claim', () => {
    expect(planClaimGrowth(claim('20Gi', '20Gi'), '10Gi')).toEqual({ kind: 'shrink-refused', requested: '20Gi' });
  });
});

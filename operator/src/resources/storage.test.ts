// The PVC growth builder: quantities in bytes, and what growing a claim takes (never a shrink).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../runtime/kube-api.js';
import { planClaimGrowth, planVolumeGrowth, quantityBytes, volumesCondition } from './storage.js';

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

describe('planVolumeGrowth and volumesCondition', () => {
  const resizingClaim = (): KubeObject => ({
    ...claim('20Gi', '10Gi'),
    status: { capacity: { storage: '10Gi' }, conditions: [{ type: 'FileSystemResizePending', status: 'True', message: 'waiting for the kubelet' }], allocatedResourceStatuses: { storage: 'NodeResizePending' } },
  });

  it('raises only the claims below the spec, skips missing ones, and says Expanding until capacity follows', () => {
    const plan = planVolumeGrowth([
      { name: 'data-orders-0', claim: claim('10Gi', '10Gi'), desiredSize: '20Gi' },
      { name: 'data-orders-1', claim: resizingClaim(), desiredSize: '20Gi' },
      { name: 'data-orders-2', claim: claim('20Gi', '20Gi'), desiredSize: '20Gi' },
      { name: 'data-orders-3', claim: undefined, desiredSize: '20Gi' },
    ]);
    expect(plan.expand).toEqual([{ name: 'data-orders-0', patch: { spec: { resources: { requests: { storage: '20Gi' } } } }, fromSize: '10Gi', toSize: '20Gi' }]);
    expect(plan.resizing).toEqual([{ name: 'data-orders-1', capacity: '10Gi', detail: 'FileSystemResizePending (waiting for the kubelet), NodeResizePending' }]);
    const condition = volumesCondition({ plan, expanded: ['data-orders-0'], refused: [], claims: 3 });
    expect(condition).toMatchObject({ status: 'False', reason: 'Expanding' });
    expect(condition.message).toContain('data-orders-0: resize requested');
    expect(condition.message).toContain('data-orders-1: capacity 10Gi, FileSystemResizePending');
  });

  it('reports a refused expansion (StorageClass without allowVolumeExpansion) before anything else', () => {
    const plan = planVolumeGrowth([{ name: 'data-orders-0', claim: claim('10Gi', '10Gi'), desiredSize: '20Gi' }]);
    const condition = volumesCondition({ plan, expanded: [], refused: [{ name: 'data-orders-0', message: 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize' }], claims: 1 });
    expect(condition).toMatchObject({ status: 'False', reason: 'ExpansionRefused' });
    expect(condition.message).toContain('allowVolumeExpansion');
    expect(condition.message).toContain('data-orders-0: only dynamically provisioned pvc');
  });

  it('is True when every claim holds its size, and says a shrink is never done', () => {
    const atSize = planVolumeGrowth([{ name: 'data-orders-0', claim: claim('20Gi', '20Gi'), desiredSize: '20Gi' }]);
    expect(volumesCondition({ plan: atSize, expanded: [], refused: [], claims: 1 })).toEqual({ status: 'True', reason: 'VolumesAtSize', message: '1 PVC(s) at the size spec.storage asks' });
    const smaller = planVolumeGrowth([{ name: 'data-orders-0', claim: claim('20Gi', '20Gi'), desiredSize: '10Gi' }]);
    expect(volumesCondition({ plan: smaller, expanded: [], refused: [], claims: 1 })).toMatchObject({ status: 'False', reason: 'ShrinkRefused' });
  });
});

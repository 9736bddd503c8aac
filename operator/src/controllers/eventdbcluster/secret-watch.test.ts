import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../runtime/kube-api.js';
import { clustersUsingSecret, secretMetadataOnly } from './secret-watch.js';

function cluster(namespace: string, name: string, tls?: Record<string, unknown>): KubeObject {
  return { apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name, namespace }, spec: { replicas: 3, ...(tls === undefined ? {} : { tls }) } };
}

describe('the clusters a changed Secret concerns', () => {
  const clusters = [
    cluster('shop', 'orders'),
    cluster('shop', 'payments', { mode: 'Secret', certificateSecret: { name: 'shared-tls' }, caSecret: { name: 'shared-ca' } }),
    cluster('shop', 'billing', { mode: 'Secret', certificateSecret: { name: 'shared-tls' } }),
    cluster('other', 'orders', { mode: 'Secret', certificateSecret: { name: 'shared-tls' } }),
  ];

  it('a named certificate or CA Secret: every cluster of that namespace naming it', () => {
    expect(clustersUsingSecret(clusters, { namespace: 'shop', name: 'shared-tls' })).toEqual(['shop/billing', 'shop/payments']);
    expect(clustersUsingSecret(clusters, { namespace: 'shop', name: 'shared-ca' })).toEqual(['shop/payments']);
    expect(clustersUsingSecret(clusters, { namespace: 'other', name: 'shared-tls' })).toEqual(['other/orders']);
  });

  it('the generated <cluster>-node-tls and <cluster>-ca', () => {
    expect(clustersUsingSecret(clusters, { namespace: 'shop', name: 'orders-node-tls' })).toEqual(['shop/orders']);
    expect(clustersUsingSecret(clusters, { namespace: 'shop', name: 'orders-ca' })).toEqual(['shop/orders']);
  });

  it('any other Secret concerns no cluster', () => {
    expect(clustersUsingSecret(clusters, { namespace: 'shop', name: 'orders-admin' })).toEqual([]);
    expect(clustersUsingSecret(clusters, { namespace: 'elsewhere', name: 'shared-tls' })).toEqual([]);
    expect(clustersUsingSecret(clusters, { namespace: 'shop', name: undefined })).toEqual([]);
  });

  it('the Secret cache keeps no key material', () => {
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'shared-tls', namespace: 'shop', uid: 'u1', resourceVersion: '42', managedFields: [{ time: '2026-11-29T00:00:00Z' }] } as KubeObject['metadata'],
      data: { 'tls.key': 'c2VjcmV0' },
    };
    expect(secretMetadataOnly(secret)).toEqual({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'shared-tls', namespace: 'shop', uid: 'u1', resourceVersion: '42' } });
  });
});

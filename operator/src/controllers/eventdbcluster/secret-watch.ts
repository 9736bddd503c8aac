/**
 * PURE: which EventDBClusters a changed Secret concerns, so that the Secret informer (main.ts)
 * enqueues them at once and a certificate rotation starts without waiting for the next periodic
 * reconcile: the cluster's tls.certificateSecret or tls.caSecret by name, or the Secrets the
 * operator generates for it (`<cluster>-node-tls`, `<cluster>-ca`). Also what the Secret cache
 * keeps: the metadata only, never the keys (the rotation reads the Secrets themselves by name).
 */
import type { KubeObject } from '../../runtime/kube-api.js';
import { caSecretName, nodeTlsSecretName } from '../../resources/names.js';

interface TlsNames {
  readonly certificateSecret?: { readonly name?: unknown };
  readonly caSecret?: { readonly name?: unknown };
}

/** The names of the certificate and CA Secrets a cluster may use (named or generated). */
export function certificateSecretNames(cluster: KubeObject): string[] {
  const name = cluster.metadata.name ?? '';
  const tls = ((cluster['spec'] as { tls?: TlsNames } | undefined)?.tls ?? {}) as TlsNames;
  const named = [tls.certificateSecret?.name, tls.caSecret?.name].filter((entry): entry is string => typeof entry === 'string' && entry !== '');
  return [...new Set([nodeTlsSecretName(name), caSecretName(name), ...named])];
}

/** Keys (`namespace/name`) of the clusters in the Secret's namespace that use it for certificates. */
export function clustersUsingSecret(clusters: readonly KubeObject[], secret: { readonly namespace: string | undefined; readonly name: string | undefined }): string[] {
  if (secret.name === undefined || secret.namespace === undefined) return [];
  return clusters
    .filter((cluster) => cluster.metadata.namespace === secret.namespace && certificateSecretNames(cluster).includes(secret.name as string))
    .map((cluster) => `${cluster.metadata.namespace}/${cluster.metadata.name}`)
    .sort();
}

/** A Secret as the cache keeps it: its identity and version, without data or managedFields. */
export function secretMetadataOnly(secret: KubeObject): KubeObject {
  const { name, namespace, uid, resourceVersion } = secret.metadata;
  return {
    apiVersion: secret.apiVersion ?? 'v1',
    kind: secret.kind ?? 'Secret',
    metadata: { ...(name === undefined ? {} : { name }), ...(namespace === undefined ? {} : { namespace }), ...(uid === undefined ? {} : { uid }), ...(resourceVersion === undefined ? {} : { resourceVersion }) },
  };
}

/** Deterministic names of a cluster's children (operator-api.md "Children, by name"). */

export const podName = (cluster: string, ordinal: number): string => `${cluster}-${ordinal}`;
export const replicaPodName = (cluster: string, ordinal: number): string => `${cluster}-replica-${ordinal}`;
export const dataClaimName = (pod: string): string => `data-${pod}`;
export const indexClaimName = (pod: string): string => `index-${pod}`;
export const clientServiceName = (cluster: string): string => cluster;
export const leaderServiceName = (cluster: string): string => `${cluster}-leader`;
export const headlessServiceName = (cluster: string): string => `${cluster}-headless`;
export const configMapName = (cluster: string): string => `${cluster}-config`;
export const adminSecretName = (cluster: string): string => `${cluster}-admin`;
export const opsSecretName = (cluster: string): string => `${cluster}-ops`;
export const caSecretName = (cluster: string): string => `${cluster}-ca`;
export const nodeTlsSecretName = (cluster: string): string => `${cluster}-node-tls`;
export const pdbName = (cluster: string): string => cluster;

/** Ordinal of a voting pod (`orders-2` -> 2) or undefined for other names. */
export function votingOrdinal(cluster: string, pod: string): number | undefined {
  const match = new RegExp(`^${cluster.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)$`).exec(pod);
  return match === null ? undefined : Number(match[1]);
}

/** Ordinal of a read-only replica pod (`orders-replica-1` -> 1). */
export function replicaOrdinal(cluster: string, pod: string): number | undefined {
  const match = new RegExp(`^${cluster.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-replica-(\\d+)$`).exec(pod);
  return match === null ? undefined : Number(match[1]);
}

/** The DNS name of a pod through the headless Service. */
export function podDnsName(cluster: string, namespace: string, pod: string): string {
  return `${pod}.${headlessServiceName(cluster)}.${namespace}.svc`;
}

/** PVCs `data-<pod>` and `index-<pod>`: owned by the cluster, so they outlive pods and scale-down. */
import { LABEL_NODE_KIND, LABEL_POD } from '../api/group.js';
import type { KubeObject } from '../runtime/kube-api.js';
import type { EffectiveSpec, VolumeSettings } from './effective-spec.js';
import { commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { dataClaimName, indexClaimName } from './names.js';
import type { NodeKind } from './pod.js';

/** VolumeSnapshots a new cluster's PVCs are made from (spec.sourceBackup, method VolumeSnapshot). */
export interface ClaimSnapshots {
  readonly data?: string;
  readonly index?: string;
}

function claim(cluster: ClusterIdentity, name: string, pod: string, nodeKind: NodeKind, volume: string, settings: VolumeSettings, snapshot?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: cluster.namespace,
      labels: { ...commonLabels(cluster), [LABEL_POD]: pod, [LABEL_NODE_KIND]: nodeKind, 'eventdb.io/volume': volume },
      ownerReferences: [ownerReference(cluster)],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: String(settings.size) } },
      ...(settings.storageClassName === undefined ? {} : { storageClassName: settings.storageClassName }),
      ...(snapshot === undefined ? {} : { dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: snapshot } }),
    },
  };
}

export function buildClaims(cluster: ClusterIdentity, spec: EffectiveSpec, pod: string, nodeKind: NodeKind, snapshots: ClaimSnapshots = {}): KubeObject[] {
  const claims = [claim(cluster, dataClaimName(pod), pod, nodeKind, 'data', spec.storage.data, snapshots.data)];
  if (spec.storage.index !== undefined) claims.push(claim(cluster, indexClaimName(pod), pod, nodeKind, 'index', spec.storage.index, snapshots.index));
  return claims;
}

const BINARY_SUFFIX: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL_SUFFIX: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** resource.Quantity -> bytes (`10Gi`, `500M`, `1e9`, 1073741824); undefined when it is not a quantity. */
export function quantityBytes(quantity: string | number): number | undefined {
  if (typeof quantity === 'number') return Number.isFinite(quantity) ? quantity : undefined;
  const match = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE]?)|[eE]([+-]?[0-9]+))$/.exec(quantity.trim());
  if (match === null) return undefined;
  const value = Number(match[1]);
  if (match[2] !== undefined) return value * (BINARY_SUFFIX[match[2]] ?? NaN);
  if (match[4] !== undefined) return value * 10 ** Number(match[4]);
  return value * (DECIMAL_SUFFIX[match[3] ?? ''] ?? NaN);
}

export type ClaimGrowth =
  /** The claim asks for the size already (or more). */
  | { readonly kind: 'current' }
  /** The claim asks for less: this merge patch raises its request. */
  | { readonly kind: 'expand'; readonly patch: { spec: { resources: { requests: { storage: string } } } }; readonly fromSize: string }
  /** The request is raised; the volume's capacity is not yet (the CSI driver and the kubelet resize it). */
  | { readonly kind: 'resizing'; readonly capacity?: string; readonly detail?: string }
  /** The spec asks for less than the claim holds: never shrunk (CEL refuses the change; an older object may still say so). */
  | { readonly kind: 'shrink-refused'; readonly requested: string };

/**
 * PURE: what growing a PVC to `desiredSize` takes. A PVC's request may only grow, and only where
 * its StorageClass allows expansion (the apiserver refuses the patch otherwise, which the caller
 * reports); the capacity in its status follows once the volume was resized.
 */
export function planClaimGrowth(claim: KubeObject, desiredSize: string | number): ClaimGrowth {
  const requested = (claim['spec'] as { resources?: { requests?: { storage?: string } } } | undefined)?.resources?.requests?.storage;
  const capacity = (claim['status'] as { capacity?: { storage?: string } } | undefined)?.capacity?.storage;
  const desiredBytes = quantityBytes(desiredSize);
  const requestedBytes = requested === undefined ? undefined : quantityBytes(requested);
  if (desiredBytes === undefined || requestedBytes === undefined) return { kind: 'current' };
  if (desiredBytes < requestedBytes) return { kind: 'shrink-refused', requested: requested ?? '' };
  if (desiredBytes > requestedBytes) {
    return { kind: 'expand', patch: { spec: { resources: { requests: { storage: String(desiredSize) } } } }, fromSize: requested ?? '' };
  }
  const capacityBytes = capacity === undefined ? undefined : quantityBytes(capacity);
  if (capacityBytes !== undefined && capacityBytes < requestedBytes) {
    const detail = resizeDetail(claim);
    return { kind: 'resizing', capacity: capacity ?? '', ...(detail === undefined ? {} : { detail }) };
  }
  return { kind: 'current' };
}

interface ClaimStatusObject {
  conditions?: { type?: string; status?: string; message?: string }[];
  allocatedResourceStatuses?: Record<string, string>;
}

/**
 * PURE: where a resize stands, in the claim's own words: its conditions (`Resizing`,
 * `FileSystemResizePending`, `ControllerResizeError`, `NodeResizeError`) and
 * `status.allocatedResourceStatuses.storage` (`ControllerResizeInProgress`, `NodeResizePending`,
 * `NodeResizeInfeasible`, ...).
 */
export function resizeDetail(claim: KubeObject): string | undefined {
  const status = (claim['status'] ?? {}) as ClaimStatusObject;
  const parts = (status.conditions ?? [])
    .filter((condition) => condition.status === 'True' && condition.type !== undefined)
    .map((condition) => (condition.message === undefined || condition.message === '' ? (condition.type ?? '') : `${condition.type ?? ''} (${condition.message})`));
  const allocated = status.allocatedResourceStatuses?.['storage'];
  if (allocated !== undefined) parts.push(allocated);
  return parts.length === 0 ? undefined : parts.join(', ');
}

/** One PVC of the cluster as read (undefined: not there) and the size the spec asks of it. */
export interface ClaimObservation {
  readonly name: string;
  readonly claim: KubeObject | undefined;
  readonly desiredSize: string | number;
}

export interface VolumeGrowthPlan {
  /** Claims whose request is raised now (merge patch of spec.resources.requests.storage). */
  readonly expand: readonly { readonly name: string; readonly patch: { spec: { resources: { requests: { storage: string } } } }; readonly fromSize: string; readonly toSize: string }[];
  /** Claims whose request is raised but whose capacity is not there yet. */
  readonly resizing: readonly { readonly name: string; readonly capacity?: string; readonly detail?: string }[];
  /** Claims that hold more than the spec asks (never shrunk). */
  readonly shrinkRefused: readonly { readonly name: string; readonly requested: string }[];
}

/** PURE: what every existing PVC of the cluster needs to reach its size (missing claims are made by roll-out). */
export function planVolumeGrowth(observed: readonly ClaimObservation[]): VolumeGrowthPlan {
  const expand: VolumeGrowthPlan['expand'][number][] = [];
  const resizing: VolumeGrowthPlan['resizing'][number][] = [];
  const shrinkRefused: VolumeGrowthPlan['shrinkRefused'][number][] = [];
  for (const entry of observed) {
    if (entry.claim === undefined) continue;
    const growth = planClaimGrowth(entry.claim, entry.desiredSize);
    if (growth.kind === 'expand') expand.push({ name: entry.name, patch: growth.patch, fromSize: growth.fromSize, toSize: String(entry.desiredSize) });
    else if (growth.kind === 'resizing') resizing.push({ name: entry.name, ...(growth.capacity === undefined ? {} : { capacity: growth.capacity }), ...(growth.detail === undefined ? {} : { detail: growth.detail }) });
    else if (growth.kind === 'shrink-refused') shrinkRefused.push({ name: entry.name, requested: growth.requested });
  }
  return { expand, resizing, shrinkRefused };
}

export interface VolumesConditionState {
  readonly status: 'True' | 'False';
  readonly reason: 'VolumesAtSize' | 'Expanding' | 'ExpansionRefused' | 'ShrinkRefused';
  readonly message: string;
}

/**
 * PURE: the VolumesExpanded condition (where the PVCs stand against spec.storage) after this reconcile's patches: `refused` are the claims
 * whose patch the apiserver refused (a StorageClass without allowVolumeExpansion, a static
 * volume), with its message; `expanded` the claims raised now (their resize begins).
 */
export function volumesCondition(input: {
  readonly plan: VolumeGrowthPlan;
  readonly expanded: readonly string[];
  readonly refused: readonly { readonly name: string; readonly message: string }[];
  readonly claims: number;
}): VolumesConditionState {
  if (input.refused.length > 0) {
    const list = input.refused.map((entry) => `${entry.name}: ${entry.message}`).join('; ');
    return { status: 'False', reason: 'ExpansionRefused', message: `the apiserver refused to expand ${list} (the StorageClass must have allowVolumeExpansion: true)`.slice(0, 2000) };
  }
  const inProgress = [
    ...input.expanded.map((name) => `${name}: resize requested`),
    ...input.plan.resizing.map((entry) => `${entry.name}: capacity ${entry.capacity ?? '?'}${entry.detail === undefined ? '' : `, ${entry.detail}`}`),
  ];
  if (inProgress.length > 0) return { status: 'False', reason: 'Expanding', message: `expanding ${inProgress.join('; ')}`.slice(0, 2000) };
  if (input.plan.shrinkRefused.length > 0) {
    const list = input.plan.shrinkRefused.map((entry) => `${entry.name} (${entry.requested})`).join(', ');
    return { status: 'False', reason: 'ShrinkRefused', message: `spec.storage asks for less than ${list} hold: a PVC is never shrunk` };
  }
  return { status: 'True', reason: 'VolumesAtSize', message: `${input.claims} PVC(s) at the size spec.storage asks` };
}

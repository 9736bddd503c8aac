/**
 * PURE: fencing (annotation eventdb.io/fenced: a JSON array of pod names, or ["*"]). A fenced
 * node is stopped (its pod deleted; the PVCs stay) and the operator neither recreates, restarts
 * nor labels it until it leaves the list. Fencing that leaves fewer running voting nodes than a
 * quorum of the cluster size is refused (nothing fenced) unless eventdb.io/fenced-force is "true".
 */
import { quorumOf } from '../../resources/pdb.js';
import { podName, replicaPodName } from '../../resources/names.js';
import type { PodView } from './observe.js';

export type FencedList = { readonly ok: true; readonly pods: readonly string[] } | { readonly ok: false; readonly message: string };

/** The annotation's pod names; `*` is every pod the cluster has or should have. */
export function parseFenced(text: string | undefined, cluster: { name: string; replicas: number; readOnlyReplicas: number }, pods: readonly PodView[]): FencedList {
  if (text === undefined || text.trim() === '') return { ok: true, pods: [] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: `eventdb.io/fenced must be a JSON array of pod names such as ["${cluster.name}-1"] or ["*"], not ${JSON.stringify(text.slice(0, 100))}` };
  }
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) {
    return { ok: false, message: `eventdb.io/fenced must be a JSON array of pod names such as ["${cluster.name}-1"] or ["*"]` };
  }
  const names = value as string[];
  if (names.includes('*')) {
    const all = new Set([
      ...Array.from({ length: cluster.replicas }, (_, i) => podName(cluster.name, i)),
      ...Array.from({ length: cluster.readOnlyReplicas }, (_, i) => replicaPodName(cluster.name, i)),
      ...pods.map((pod) => pod.name),
    ]);
    return { ok: true, pods: [...all].sort() };
  }
  const own = new RegExp(`^${cluster.name.replace(/[.]/g, '\\.')}-(replica-)?[0-9]+$`);
  const foreign = names.filter((name) => !own.test(name));
  if (foreign.length > 0) return { ok: false, message: `eventdb.io/fenced names pods that are not this cluster's: ${foreign.join(', ')}` };
  return { ok: true, pods: [...new Set(names)].sort() };
}

export type FencingDecision =
  | { readonly kind: 'none' }
  /**
   * Refused: no running node is stopped; `keep` (listed nodes already stopped) stay fenced, so a
   * refused addition does not unfence what was fenced before. Warning Event and condition.
   */
  | { readonly kind: 'refuse'; readonly reason: string; readonly message: string; readonly keep: readonly string[] }
  /** These pods are fenced; `stop` are the ones still running. */
  | { readonly kind: 'fence'; readonly fenced: readonly string[]; readonly stop: readonly PodView[] };

export function planFencing(input: {
  readonly list: FencedList;
  readonly force: boolean;
  readonly pods: readonly PodView[];
  readonly clusterSize: number;
}): FencingDecision {
  if (!input.list.ok) return { kind: 'refuse', reason: 'FencingInvalid', message: input.list.message, keep: [] };
  const fenced = new Set(input.list.pods);
  if (fenced.size === 0) return { kind: 'none' };
  const quorum = quorumOf(input.clusterSize);
  const remaining = input.pods.filter((pod) => pod.kind === 'quorum' && !pod.terminating && !fenced.has(pod.name)).length;
  const fencesVoting = input.pods.some((pod) => pod.kind === 'quorum' && fenced.has(pod.name) && !pod.terminating);
  if (fencesVoting && remaining < quorum && !input.force) {
    return {
      kind: 'refuse',
      reason: 'FencingBelowQuorum',
      message: `fencing ${[...fenced].join(', ')} leaves ${remaining} voting node(s) running, fewer than the quorum of ${quorum}: the cluster would stop serving writes; set eventdb.io/fenced-force: "true" to fence anyway`,
      keep: [...fenced].filter((name) => !input.pods.some((pod) => pod.name === name && !pod.terminating)).sort(),
    };
  }
  return { kind: 'fence', fenced: [...fenced].sort(), stop: input.pods.filter((pod) => fenced.has(pod.name) && !pod.terminating) };
}

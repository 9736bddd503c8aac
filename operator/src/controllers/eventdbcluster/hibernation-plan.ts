/**
 * PURE: hibernation (spec.hibernation: true) stops every node cleanly, one group at a time:
 * read-only replicas and followers first (their pods deleted: SIGTERM, the node closes its
 * files), then the node that led, after it resigned (it has the longest log: stopping it last
 * means no acknowledged write is on a stopped node only). PVCs and Secrets stay. Hibernated once
 * no pod is left; spec.hibernation false lets roll-out create every node again on its PVCs.
 * Stateless: each reconcile recomputes the step from the pods.
 */
import type { PodView } from './observe.js';

export type HibernationStep =
  /** No pod left: the cluster is Hibernated. */
  | { readonly kind: 'hibernated' }
  /** Delete these pods now (never the last node). */
  | { readonly kind: 'stop'; readonly pods: readonly PodView[] }
  /** Only the last node is left: resign it (when it leads), then delete it. */
  | { readonly kind: 'stop-last'; readonly pod: PodView; readonly resign: boolean }
  /** Pods are stopping: wait for them to go. */
  | { readonly kind: 'wait'; readonly stopping: readonly string[] };

/** The node stopped last: the leader, else the pod labelled leader, else the lowest voting ordinal. */
export function lastNodeOf(pods: readonly PodView[], leader: string | undefined): PodView | undefined {
  const alive = pods.filter((pod) => !pod.terminating);
  return (
    alive.find((pod) => pod.name === leader) ??
    alive.find((pod) => pod.roleLabel === 'leader') ??
    [...alive].filter((pod) => pod.kind === 'quorum').sort((a, b) => a.ordinal - b.ordinal)[0] ??
    alive[0]
  );
}

export function planHibernation(pods: readonly PodView[], leader: string | undefined): HibernationStep {
  if (pods.length === 0) return { kind: 'hibernated' };
  const last = lastNodeOf(pods, leader);
  const others = pods.filter((pod) => pod.name !== last?.name);
  const toStop = others.filter((pod) => !pod.terminating);
  if (toStop.length > 0) return { kind: 'stop', pods: toStop };
  if (others.length > 0 || last === undefined) return { kind: 'wait', stopping: pods.filter((pod) => pod.terminating).map((pod) => pod.name) };
  return { kind: 'stop-last', pod: last, resign: last.name === leader };
}

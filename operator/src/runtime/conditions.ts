/**
 * metav1.Condition semantics: one condition per type; `lastTransitionTime` changes only when the
 * status does; every condition carries the generation it was computed from (kstatus).
 */
import type { Condition } from '../api/common.js';

export interface ConditionInput {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
}

export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  observedGeneration: number | undefined,
  nowIso: string,
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((condition) => condition.type === input.type);
  const previous = index < 0 ? undefined : list[index];
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message,
    lastTransitionTime: previous !== undefined && previous.status === input.status ? previous.lastTransitionTime : nowIso,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
  if (index < 0) list.push(next);
  else list[index] = next;
  return list;
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** What a reconcile concluded, as kstatus reads it: Ready, and why it is not (yet). */
export interface KstatusInput {
  readonly ready: Omit<ConditionInput, 'type'>;
  /** Work the operator is still doing (or waiting on) to reach what the spec asks: Reconciling=True. */
  readonly reconciling?: { readonly reason: string; readonly message: string };
  /** The operator cannot go on without a change by someone (an invalid spec, a failed backup): Stalled=True. */
  readonly stalled?: { readonly reason: string; readonly message: string };
}

/**
 * Ready, Reconciling and Stalled as kstatus (Flux, `kubectl wait`, Argo CD) reads them: at most
 * one of Reconciling and Stalled is True; both False with Ready True means done for this generation.
 */
export function setKstatusConditions(
  conditions: readonly Condition[] | undefined,
  input: KstatusInput,
  observedGeneration: number | undefined,
  nowIso: string,
): Condition[] {
  let list = setCondition(conditions, { type: 'Ready', ...input.ready }, observedGeneration, nowIso);
  list = setCondition(
    list,
    input.stalled !== undefined
      ? { type: 'Stalled', status: 'True', ...input.stalled }
      : { type: 'Stalled', status: 'False', reason: 'NotStalled', message: '' },
    observedGeneration,
    nowIso,
  );
  list = setCondition(
    list,
    input.reconciling !== undefined && input.stalled === undefined
      ? { type: 'Reconciling', status: 'True', ...input.reconciling }
      : { type: 'Reconciling', status: 'False', reason: input.stalled !== undefined ? 'Stalled' : 'Reconciled', message: '' },
    observedGeneration,
    nowIso,
  );
  return list;
}

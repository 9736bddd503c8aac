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

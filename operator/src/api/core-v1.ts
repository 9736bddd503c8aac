/**
 * The parts of core/v1 that EventDBCluster embeds (resources, scheduling), as zod schemas, so the
 * CRD carries a real structural schema for them (kubectl explain, validation, pruning) instead of
 * an opaque `x-kubernetes-preserve-unknown-fields` object. Field names and meanings are
 * Kubernetes' own; only the fields a pod template of ours uses are listed.
 */
import { z } from 'zod';
import { Quantity } from './common.js';

const StringMap = z.record(z.string(), z.string());

export const ResourceRequirements = z
  .object({
    limits: z.record(z.string(), Quantity).optional().describe('Maximum resources, e.g. {memory: 1Gi}.'),
    requests: z.record(z.string(), Quantity).optional().describe('Minimum resources, e.g. {cpu: 500m}.'),
  })
  .describe('core/v1 ResourceRequirements of the node container.');

export const LabelSelectorRequirement = z.object({
  key: z.string(),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
  values: z.array(z.string()).optional(),
});

export const LabelSelector = z
  .object({
    matchLabels: StringMap.optional(),
    matchExpressions: z.array(LabelSelectorRequirement).optional(),
  })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const NodeSelectorRequirement = z.object({
  key: z.string(),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']),
  values: z.array(z.string()).optional(),
});

export const NodeSelectorTerm = z
  .object({
    matchExpressions: z.array(NodeSelectorRequirement).optional(),
    matchFields: z.array(NodeSelectorRequirement).optional(),
  })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const PodAffinityTerm = z.object({
  labelSelector: LabelSelector.optional(),
  namespaceSelector: LabelSelector.optional(),
  namespaces: z.array(z.string()).optional(),
  topologyKey: z.string().min(1),
  matchLabelKeys: z.array(z.string()).optional(),
  mismatchLabelKeys: z.array(z.string()).optional(),
});

const WeightedPodAffinityTerm = z.object({
  weight: z.number().int().min(1).max(100),
  podAffinityTerm: PodAffinityTerm,
});

const PodAffinity = z.object({
  requiredDuringSchedulingIgnoredDuringExecution: z.array(PodAffinityTerm).optional(),
  preferredDuringSchedulingIgnoredDuringExecution: z.array(WeightedPodAffinityTerm).optional(),
});

export const Affinity = z
  .object({
    nodeAffinity: z
      .object({
        requiredDuringSchedulingIgnoredDuringExecution: z
          .object({ nodeSelectorTerms: z.array(NodeSelectorTerm) })
          .meta({ 'x-kubernetes-map-type': 'atomic' })
          .optional(),
        preferredDuringSchedulingIgnoredDuringExecution: z
          .array(
            z.object({
              weight: z.number().int().min(1).max(100),
              preference: NodeSelectorTerm,
            }),
          )
          .optional(),
      })
      .optional(),
    podAffinity: PodAffinity.optional(),
    podAntiAffinity: PodAffinity.optional(),
  })
  .describe('core/v1 Affinity. Absent: the operator prefers spreading nodes over hosts.');

export const Toleration = z.object({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.number().int().optional(),
});

export const TopologySpreadConstraint = z.object({
  maxSkew: z.number().int().min(1),
  topologyKey: z.string().min(1),
  whenUnsatisfiable: z.enum(['DoNotSchedule', 'ScheduleAnyway']),
  labelSelector: LabelSelector.optional(),
  minDomains: z.number().int().min(1).optional(),
  nodeAffinityPolicy: z.enum(['Honor', 'Ignore']).optional(),
  nodeTaintsPolicy: z.enum(['Honor', 'Ignore']).optional(),
  matchLabelKeys: z.array(z.string()).optional(),
});

export type ResourceRequirements = z.infer<typeof ResourceRequirements>;
export type Affinity = z.infer<typeof Affinity>;
export type Toleration = z.infer<typeof Toleration>;
export type TopologySpreadConstraint = z.infer<typeof TopologySpreadConstraint>;

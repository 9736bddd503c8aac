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
  key: z.string().describe('Label key the requirement applies to.'),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']).describe('How the key relates to the values: In, NotIn, Exists or DoesNotExist.'),
  values: z.array(z.string()).optional().describe('Values for In and NotIn (empty for Exists and DoesNotExist).'),
});

export const LabelSelector = z
  .object({
    matchLabels: StringMap.optional().describe('Labels an object must carry, each with exactly this value.'),
    matchExpressions: z.array(LabelSelectorRequirement).optional().describe('Requirements on labels, all of which must hold.'),
  })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const NodeSelectorRequirement = z.object({
  key: z.string().describe('Node label (matchExpressions) or field (matchFields) key.'),
  operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']).describe('How the key relates to the values: In, NotIn, Exists, DoesNotExist, Gt or Lt.'),
  values: z.array(z.string()).optional().describe('Values to compare with (one integer for Gt and Lt).'),
});

export const NodeSelectorTerm = z
  .object({
    matchExpressions: z.array(NodeSelectorRequirement).optional().describe('Requirements on node labels.'),
    matchFields: z.array(NodeSelectorRequirement).optional().describe('Requirements on node fields (metadata.name).'),
  })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const PodAffinityTerm = z.object({
  labelSelector: LabelSelector.optional().describe('The pods this term is about.'),
  namespaceSelector: LabelSelector.optional().describe('Namespaces whose pods the term considers (with namespaces); absent: the pod\'s own namespace.'),
  namespaces: z.array(z.string()).optional().describe('Names of the namespaces whose pods the term considers.'),
  topologyKey: z.string().min(1).describe('Node label whose value defines a domain (kubernetes.io/hostname: one host; topology.kubernetes.io/zone: one zone).'),
  matchLabelKeys: z.array(z.string()).optional().describe('Label keys whose values, taken from the incoming pod, are added to labelSelector.'),
  mismatchLabelKeys: z.array(z.string()).optional().describe('Label keys whose values, taken from the incoming pod, must differ (added to labelSelector as NotIn).'),
});

const WeightedPodAffinityTerm = z.object({
  weight: z.number().int().min(1).max(100).describe('Weight of this preference, 1..100.'),
  podAffinityTerm: PodAffinityTerm.describe('The preferred term.'),
});

const PodAffinity = z.object({
  requiredDuringSchedulingIgnoredDuringExecution: z
    .array(PodAffinityTerm)
    .optional()
    .describe('Terms every placement must satisfy.'),
  preferredDuringSchedulingIgnoredDuringExecution: z
    .array(WeightedPodAffinityTerm)
    .optional()
    .describe('Terms the scheduler favours, by weight.'),
});

export const Affinity = z
  .object({
    nodeAffinity: z
      .object({
        requiredDuringSchedulingIgnoredDuringExecution: z
          .object({ nodeSelectorTerms: z.array(NodeSelectorTerm).describe('Terms of which at least one must match the node.') })
          .meta({ 'x-kubernetes-map-type': 'atomic' })
          .optional()
          .describe('Nodes a node pod may run on.'),
        preferredDuringSchedulingIgnoredDuringExecution: z
          .array(
            z.object({
              weight: z.number().int().min(1).max(100).describe('Weight of this preference, 1..100.'),
              preference: NodeSelectorTerm.describe('The nodes preferred.'),
            }),
          )
          .optional()
          .describe('Nodes the scheduler favours, by weight.'),
      })
      .optional()
      .describe('Which Kubernetes nodes the pods run on.'),
    podAffinity: PodAffinity.optional().describe('Pods the node pods are placed near.'),
    podAntiAffinity: PodAffinity.optional().describe('Pods the node pods are placed away from.'),
  })
  .describe('core/v1 Affinity. Absent: the operator prefers spreading nodes over hosts.');

export const Toleration = z.object({
  key: z.string().optional().describe('Taint key tolerated; empty with operator Exists: every taint.'),
  operator: z.enum(['Exists', 'Equal']).optional().describe('Exists (any value) or Equal (the value below; the default).'),
  value: z.string().optional().describe('Taint value tolerated, with operator Equal.'),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional().describe('Taint effect tolerated; empty: every effect.'),
  tolerationSeconds: z.number().int().optional().describe('NoExecute: how long the pod stays after the taint appears; absent: for ever.'),
});

export const TopologySpreadConstraint = z.object({
  maxSkew: z.number().int().min(1).describe('Largest allowed difference in matching pods between two domains.'),
  topologyKey: z.string().min(1).describe('Node label whose value defines a domain.'),
  whenUnsatisfiable: z.enum(['DoNotSchedule', 'ScheduleAnyway']).describe('DoNotSchedule (a hard rule) or ScheduleAnyway (a preference).'),
  labelSelector: LabelSelector.optional().describe('The pods counted in each domain.'),
  minDomains: z.number().int().min(1).optional().describe('Fewest eligible domains (DoNotSchedule only).'),
  nodeAffinityPolicy: z.enum(['Honor', 'Ignore']).optional().describe('Whether the pod\'s node affinity limits the domains counted.'),
  nodeTaintsPolicy: z.enum(['Honor', 'Ignore']).optional().describe('Whether node taints limit the domains counted.'),
  matchLabelKeys: z.array(z.string()).optional().describe('Label keys whose values, taken from the incoming pod, are added to labelSelector.'),
});

export type ResourceRequirements = z.infer<typeof ResourceRequirements>;
export type Affinity = z.infer<typeof Affinity>;
export type Toleration = z.infer<typeof Toleration>;
export type TopologySpreadConstraint = z.infer<typeof TopologySpreadConstraint>;

/**
 * Building blocks shared by the three kinds: Kubernetes' own shapes (metav1.Condition, object
 * references, quantities) and our value types (durations, CRON schedules, time zones).
 *
 * The CRD generator (../crd-gen/) turns these zod schemas into the CRDs' structural schemas;
 * the `meta()` keys that start with `x-kubernetes-` are copied into the CRD as they are, so CEL
 * rules live beside the field they check.
 */
import { z } from 'zod';

/** One CEL rule of `x-kubernetes-validations`. */
export interface CelRule {
  readonly rule: string;
  readonly message?: string;
  readonly messageExpression?: string;
  readonly fieldPath?: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export function celRules(...rules: CelRule[]): { 'x-kubernetes-validations': CelRule[] } {
  return { 'x-kubernetes-validations': rules };
}

/** Go's time.ParseDuration syntax, as Kubernetes' own APIs take durations: `4h`, `1h30m`, `720h`. */
export const DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$';

const DURATION_UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** `1h30m` -> 5_400_000. Throws on a string that does not match DURATION_PATTERN. */
export function parseDurationMs(text: string): number {
  if (!new RegExp(DURATION_PATTERN).test(text)) throw new Error(`invalid duration '${text}'`);
  let totalMs = 0;
  for (const match of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g)) {
    totalMs += Number(match[1]) * (DURATION_UNIT_MS[match[2] ?? ''] ?? 0);
  }
  return totalMs;
}

export const Duration = z
  .string()
  .max(32)
  .regex(new RegExp(DURATION_PATTERN), 'a duration such as 30m, 4h or 1h30m')
  .describe('A duration such as 30m, 4h or 1h30m (Go time.ParseDuration syntax).');

/**
 * Five-field CRON (minute hour day-of-month month day-of-week) or a macro such as @daily.
 * The CRD checks the shape; the operator parses it fully (cron-parser) and names a bad one in
 * the Ready condition.
 */
export const CronSchedule = z
  .string()
  .max(128)
  .regex(
    /^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$/,
    'five CRON fields (minute hour day-of-month month day-of-week) or a macro such as @daily',
  )
  .describe('Five-field CRON schedule (minute hour day-of-month month day-of-week), or @daily etc.');

export const TimeZone = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_+\-/]+$/, 'an IANA time zone name such as UTC or Europe/Berlin')
  .describe('IANA time zone name, such as UTC or Europe/Berlin.');

/** True when the runtime knows the IANA zone (Intl carries the tz database). */
export function isKnownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const DNS_LABEL_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const ObjectName = z
  .string()
  .min(1)
  .max(253)
  .regex(DNS_SUBDOMAIN_PATTERN, 'a lowercase DNS subdomain name');

export const LocalObjectReference = z
  .object({ name: ObjectName.describe('Name of the object in the same namespace.') })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const SecretKeyReference = z
  .object({
    name: ObjectName.describe('Name of the Secret in the same namespace.'),
    key: z.string().min(1).max(253).default('password').describe('Key inside the Secret.'),
  })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

/** resource.Quantity: `10Gi`, `500m`, `2`. */
export const Quantity = z
  .union([z.number().int(), z.string().regex(/^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/)])
  .meta({ 'x-kubernetes-int-or-string': true });

/** metav1.Condition. */
export const Condition = z.object({
  type: z.string().min(1).max(316).describe('Type of the condition, e.g. Ready.'),
  status: z.enum(['True', 'False', 'Unknown']).describe('True, False or Unknown.'),
  observedGeneration: z.number().int().min(0).optional().describe('The generation of the spec the condition was computed from.'),
  lastTransitionTime: z.string().describe('When the status last changed (RFC 3339).'),
  reason: z.string().min(1).max(1024).describe('CamelCase reason of the last transition.'),
  message: z.string().max(32768).describe('Human readable details.'),
});
export type Condition = z.infer<typeof Condition>;

export const Conditions = z
  .array(Condition)
  .max(32)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
  .describe('Standard conditions (metav1.Condition), keyed by type.');

/** A reference to an EventDBCluster in the same namespace. */
export const ClusterReference = z
  .object({ name: ObjectName.describe('Name of the EventDBCluster in the same namespace.') })
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const Timestamp = z.string().describe('RFC 3339 timestamp.');

/** What the operator keeps of metadata: the parts it reads. */
export interface ObjectMetaLike {
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly deletionTimestamp?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly finalizers?: string[];
  readonly creationTimestamp?: string;
}

/** The fields of metadata the operator reads, parsed leniently (the apiserver owns the rest). */
export const ObjectMeta = z.looseObject({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  generation: z.number().int().optional(),
  resourceVersion: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  creationTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
});

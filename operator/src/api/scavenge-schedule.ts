/**
 * ScavengeSchedule: the cluster-wide scavenge of the node spec ("Auto-scavenge behavior"),
 * driven by the operator: one node at a time, followers first, the leader last after it resigns.
 * The controller comes with the scheduled-scavenge issue; the API and its CRD are here so the
 * three kinds are generated, validated and installed together.
 */
import { z } from 'zod';
import {
  ClusterReference,
  Conditions,
  CronSchedule,
  Duration,
  ObjectMeta,
  TimeZone,
  Timestamp,
  celRules,
} from './common.js';
import { API_VERSION, KIND_SCAVENGE_SCHEDULE } from './group.js';

export const ScavengeScheduleSpec = z
  .object({
    cluster: ClusterReference.meta(
      celRules({ rule: 'self == oldSelf', message: 'spec.cluster of a ScavengeSchedule is immutable: create another schedule' }),
    ).describe('The EventDBCluster (same namespace) to scavenge; immutable.'),
    schedule: CronSchedule,
    timeZone: TimeZone.default('UTC'),
    suspend: z
      .boolean()
      .default(false)
      .describe('true: the running node scavenge is stopped and no new one starts; false resumes the cycle.'),
    threshold: z
      .number()
      .int()
      .min(-1)
      .default(0)
      .describe('-1, 0 or > 0, as POST /admin/scavenge.'),
    throttlePercent: z.number().int().min(1).max(100).default(100).describe('Share of the time a node scavenge works, 1..100 (100: full speed).'),
    threads: z.number().int().min(1).max(4).default(1).describe('Scavenge threads per node, 1..4 (throttlePercent must then be 100).'),
    nodeTimeout: Duration.default('6h').describe(
      'A node scavenge running longer is stopped and the cycle fails.',
    ),
    respectMaintenanceWindows: z.boolean().default(true).describe('true: a cycle starts only inside one of the cluster\'s maintenance windows (when it has any).'),
    historyLimit: z.number().int().min(0).max(100).default(10).describe('Finished cycles kept in status.history.'),
  })
  .meta(
    celRules({
      rule: 'self.threads == 1 || self.throttlePercent == 100',
      message: 'throttlePercent must be 100 when threads > 1',
      fieldPath: '.throttlePercent',
    }),
  )
  .describe('When and how to scavenge a cluster, node by node.');
export type ScavengeScheduleSpec = z.infer<typeof ScavengeScheduleSpec>;

export const ScavengeState = z.enum(['NotConfigured', 'Waiting', 'InProgress', 'Pausing', 'Paused']);

const NodeScavenge = z.object({
  pod: z.string().describe('Pod of the node.'),
  role: z.string().optional().describe('Its role when its scavenge started: Follower, Leader, ReadOnlyReplica.'),
  scavengeId: z.string().optional().describe('The node\'s scavenge id (GET /admin/scavenge/{id}).'),
  result: z.string().optional().describe('Pending, Resigning, InProgress, Restarting, Stopped, Success, Errored, TimedOut or Removed.'),
  startedAt: Timestamp.optional(),
  finishedAt: Timestamp.optional(),
});

export const ScavengeScheduleStatus = z.object({
  observedGeneration: z.number().int().optional().describe('The generation of the spec this status describes.'),
  state: ScavengeState.optional().describe('NotConfigured, Waiting, InProgress, Pausing or Paused.'),
  nextScheduleTime: Timestamp.optional(),
  timeUntilNextCycle: z.string().optional().describe('d.hh:mm:ss.fffffff, as the node status endpoint.'),
  lastCheckTime: Timestamp.optional(),
  currentCycle: z
    .object({
      id: z.string().describe('Id of the cycle.'),
      startedAt: Timestamp,
      nodes: z.array(NodeScavenge).max(32).optional().describe('The nodes in the order they went, then the ones left.'),
    })
    .optional()
    .describe('The running (or paused) cycle.'),
  history: z
    .array(
      z.object({
        id: z.string().describe('Id of the cycle.'),
        startedAt: Timestamp,
        finishedAt: Timestamp.optional(),
        result: z.string().describe('Success or Failed.'),
      }),
    )
    .max(100)
    .optional()
    .describe('Finished cycles, newest first (historyLimit).'),
  conditions: Conditions.optional(),
}).describe('What the operator observed and does.');

export const ScavengeSchedule = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND_SCAVENGE_SCHEDULE),
  metadata: ObjectMeta,
  spec: ScavengeScheduleSpec,
  status: ScavengeScheduleStatus.optional(),
});
export type ScavengeSchedule = z.infer<typeof ScavengeSchedule>;

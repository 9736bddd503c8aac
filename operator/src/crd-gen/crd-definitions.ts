/**
 * The four CustomResourceDefinitions, built from the API's zod schemas: names, short names,
 * categories, printer columns, the status and scale subresources, and the structural schemas.
 * Pure: `buildCrds()` returns objects; write-crds.ts writes them as crds/*.yaml.
 */
import type { z } from 'zod';
import { BackupSpec, BackupStatus } from '../api/backup.js';
import { BACKUP_SCHEDULE_NAME_MAX, BackupScheduleSpec, BackupScheduleStatus } from '../api/backup-schedule.js';
import { EventDBClusterSpec, EventDBClusterStatus } from '../api/eventdb-cluster.js';
import {
  GROUP,
  KIND_BACKUP,
  KIND_BACKUP_SCHEDULE,
  KIND_CLUSTER,
  KIND_SCAVENGE_SCHEDULE,
  PLURAL_BACKUP,
  PLURAL_BACKUP_SCHEDULE,
  PLURAL_CLUSTER,
  PLURAL_SCAVENGE_SCHEDULE,
  VERSION,
} from '../api/group.js';
import { ScavengeScheduleSpec, ScavengeScheduleStatus } from '../api/scavenge-schedule.js';
import { toStructuralSchema, type JsonSchema } from './structural.js';

interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date' | 'boolean' | 'number';
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
}

interface KindDefinition {
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly description: string;
  readonly spec: z.ZodType;
  readonly status: z.ZodType;
  readonly printerColumns: readonly PrinterColumn[];
  readonly scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath: string };
  /** CEL rules on the whole object (they may read metadata.name). */
  readonly objectRules?: readonly { rule: string; message: string; fieldPath?: string }[];
}

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const KIND_DEFINITIONS: readonly KindDefinition[] = [
  {
    kind: KIND_CLUSTER,
    plural: PLURAL_CLUSTER,
    singular: 'eventdbcluster',
    shortNames: ['edb', 'edbc'],
    categories: ['eventdb', 'all'],
    description: 'An EventDB cluster: 1, 3 or 5 voting nodes plus read-only replicas, managed by the EventDB operator.',
    spec: EventDBClusterSpec,
    status: EventDBClusterStatus,
    printerColumns: [
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas', description: 'Desired voting nodes' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Ready nodes' },
      { name: 'Leader', type: 'string', jsonPath: '.status.leader', description: 'Pod of the leader' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Image', type: 'string', jsonPath: '.status.image' },
      AGE,
      { name: 'Operation', type: 'string', jsonPath: '.status.operation.step', priority: 1 },
    ],
    objectRules: [
      {
        // Pod hostnames (<cluster>-replica-NN) and Service names (<cluster>-headless) are DNS labels.
        rule: "size(self.metadata.name) <= 45 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        message: 'the name of an EventDBCluster is part of pod and Service DNS names: at most 45 lowercase letters, digits and dashes, starting with a letter',
      },
    ],
    scale: {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    },
  },
  {
    kind: KIND_SCAVENGE_SCHEDULE,
    plural: PLURAL_SCAVENGE_SCHEDULE,
    singular: 'scavengeschedule',
    shortNames: ['edbscav'],
    categories: ['eventdb'],
    description: 'A scheduled cluster-wide scavenge of an EventDBCluster: followers first, the leader last.',
    spec: ScavengeScheduleSpec,
    status: ScavengeScheduleStatus,
    printerColumns: [
      { name: 'Cluster', type: 'string', jsonPath: '.spec.cluster.name' },
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Suspend', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'State', type: 'string', jsonPath: '.status.state' },
      { name: 'Next', type: 'string', jsonPath: '.status.nextScheduleTime' },
      AGE,
    ],
  },
  {
    kind: KIND_BACKUP,
    plural: PLURAL_BACKUP,
    singular: 'backup',
    shortNames: ['edbbackup'],
    categories: ['eventdb'],
    description: 'One backup of one node of an EventDBCluster (VolumeSnapshot or file copy).',
    spec: BackupSpec,
    status: BackupStatus,
    printerColumns: [
      { name: 'Cluster', type: 'string', jsonPath: '.spec.cluster.name' },
      { name: 'Method', type: 'string', jsonPath: '.spec.method' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Source', type: 'string', jsonPath: '.status.sourcePod' },
      { name: 'Role', type: 'string', jsonPath: '.status.sourceRole' },
      { name: 'TTL', type: 'string', jsonPath: '.spec.ttl' },
      AGE,
    ],
  },
  {
    kind: KIND_BACKUP_SCHEDULE,
    plural: PLURAL_BACKUP_SCHEDULE,
    singular: 'backupschedule',
    shortNames: ['edbbackupsched'],
    categories: ['eventdb'],
    description: 'Backups of an EventDBCluster on a CRON schedule, with retention by count (keep) and by age (ttl).',
    spec: BackupScheduleSpec,
    status: BackupScheduleStatus,
    printerColumns: [
      { name: 'Cluster', type: 'string', jsonPath: '.spec.cluster.name' },
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Suspend', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Keep', type: 'integer', jsonPath: '.spec.keep' },
      { name: 'Last', type: 'date', jsonPath: '.status.lastScheduleTime' },
      { name: 'Next', type: 'string', jsonPath: '.status.nextScheduleTime' },
      AGE,
    ],
    objectRules: [
      {
        // The Backups are named <schedule>-yyyymmdd-hhmm; their Jobs and snapshots add suffixes.
        rule: `size(self.metadata.name) <= ${BACKUP_SCHEDULE_NAME_MAX}`,
        message: `the name of a BackupSchedule is part of its Backups' names (<schedule>-yyyymmdd-hhmm): at most ${BACKUP_SCHEDULE_NAME_MAX} characters`,
      },
    ],
  },
];

function objectSchema(definition: KindDefinition): JsonSchema {
  return {
    type: 'object',
    description: definition.description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion of this object: eventdb.io/v1alpha1.' },
      kind: { type: 'string', description: `Kind of this object: ${definition.kind}.` },
      // the apiserver allows nothing but type here (it describes metadata itself)
      metadata: { type: 'object' },
      spec: toStructuralSchema(definition.spec),
      status: toStructuralSchema(definition.status),
    },
    ...(definition.objectRules === undefined ? {} : { 'x-kubernetes-validations': definition.objectRules.map((rule) => ({ ...rule })) }),
  };
}

export function buildCrd(definition: KindDefinition): JsonSchema {
  const subresources: JsonSchema = { status: {} };
  if (definition.scale !== undefined) subresources['scale'] = { ...definition.scale };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${definition.plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'eventdb-operator', 'app.kubernetes.io/part-of': 'eventdb' },
    },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: definition.kind,
        listKind: `${definition.kind}List`,
        plural: definition.plural,
        singular: definition.singular,
        shortNames: [...definition.shortNames],
        categories: [...definition.categories],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: objectSchema(definition) },
          subresources,
          additionalPrinterColumns: definition.printerColumns.map((column) => ({ ...column })),
        },
      ],
    },
  };
}

/** File name of a CRD under crds/: `<group>_<plural>.yaml`, as kubebuilder names them. */
export function crdFileName(definition: KindDefinition): string {
  return `${GROUP}_${definition.plural}.yaml`;
}

export function buildCrds(): { fileName: string; crd: JsonSchema }[] {
  return KIND_DEFINITIONS.map((definition) => ({ fileName: crdFileName(definition), crd: buildCrd(definition) }));
}

/**
 * `spec.configuration`: node options with the PascalCase keys of the node's YAML file, checked
 * against the node's own option schema (node/src/config/schema.ts), the one source of truth for
 * node options. Every option of the node is a typed property of the CRD, so `kubectl apply`
 * rejects a misspelt key (strict field validation: "unknown field spec.configuration.X") and a
 * value of the wrong type or range; the operator parses the same schema again before it renders
 * the nodes' configuration file.
 *
 * Options the operator sets itself (paths, listen addresses, cluster membership, credentials,
 * TLS) are rejected by CEL rules that name the spec field to use instead.
 */
import { z } from 'zod';
import { yamlKey } from '../../../node/src/config/option-names.js';
import { NODE_OPTIONS, optionSpec, type OptionName } from '../../../node/src/config/schema.js';
import type { CelRule } from './common.js';

/**
 * Options the operator owns, with the spec field a user sets instead. Names not (yet) in the
 * node's schema are skipped: the list covers the clustering and TLS options of later node
 * versions, so they are operator-owned the day they appear.
 */
export const OPERATOR_MANAGED_OPTIONS: Readonly<Record<string, string>> = {
  config: 'the operator mounts the configuration file',
  db: 'the data directory is the PVC data-<pod> (spec.storage.data)',
  index: 'the index directory is set from spec.storage.index',
  insecure: 'set spec.tls.mode',
  dev: 'set spec.tls.mode (dev mode implies insecure)',
  licenseKey: 'a licence key is a secret and does not belong in the resource: set spec.licenseSecret (the operator passes its key to every node)',
  defaultAdminPassword: 'set spec.users.adminPasswordSecret',
  defaultOpsPassword: 'set spec.users.opsPasswordSecret',
  httpIp: 'the node listens on the pod network',
  httpPort: 'the node port is fixed at 2113',
  nodeIp: 'the node listens on the pod network',
  nodePort: 'the node port is fixed at 2113',
  clusterSize: 'set spec.replicas',
  nodePriority: 'spec.configuration applies to every node alike, so one priority would be every node\'s; which node leads is the operator\'s to manage (resign, switchover)',
  gossipSeed: 'the operator lists the cluster members',
  discoverViaDns: 'the operator lists the cluster members',
  clusterDns: 'the operator lists the cluster members',
  clusterGossipPort: 'the operator lists the cluster members',
  replicationIp: 'the node replicates on the pod network',
  replicationPort: 'the replication port is set by the operator',
  nodeHostAdvertiseAs: 'the operator advertises the pod DNS name',
  nodePortAdvertiseAs: 'the node port is fixed at 2113',
  replicationHostAdvertiseAs: 'the operator advertises the pod DNS name',
  replicationPortAdvertiseAs: 'the replication port is set by the operator',
  readOnlyReplica: 'set spec.readOnlyReplicas',
  certificateFile: 'set spec.tls',
  certificatePrivateKeyFile: 'set spec.tls',
  trustedRootCertificatesPath: 'set spec.tls',
  certificateReservedNodeCommonName: 'set spec.tls.reservedNodeCommonName',
};

const NODE_OPTION_NAMES = Object.keys(NODE_OPTIONS) as OptionName[];

/** The option's own name and its aliases (`nodePort`, `httpPort`): all valid keys of the file. */
function spellingsOf(name: OptionName): string[] {
  return [name, ...(optionSpec(name).aliases ?? [])];
}

function isManaged(name: string): boolean {
  return Object.hasOwn(OPERATOR_MANAGED_OPTIONS, name);
}

/** The node's schema of one option without its default: defaults stay the node's business. */
function optionValueSchema(name: OptionName): z.ZodType {
  const schema: z.ZodType = NODE_OPTIONS[name].schema;
  const description = schema.description ?? '';
  const inner = schema instanceof z.ZodDefault ? (schema.unwrap() as z.ZodType) : schema;
  const bare = inner instanceof z.ZodOptional ? (inner.unwrap() as z.ZodType) : inner;
  return bare.optional().describe(description);
}

function managedOptionRules(): CelRule[] {
  return NODE_OPTION_NAMES.filter((name) => name !== 'config' && isManaged(name)).flatMap((name) =>
    spellingsOf(name).map((spelling) => ({
      rule: `!has(self.${yamlKey(spelling)})`,
      message: `${yamlKey(spelling)} is managed by the operator: ${OPERATOR_MANAGED_OPTIONS[name]}`,
      fieldPath: `.${yamlKey(spelling)}`,
      reason: 'FieldValueForbidden' as const,
    })),
  );
}

/** An option given under two of its names (`NodePort` and `HttpPort`) is ambiguous. */
function aliasRules(): CelRule[] {
  return NODE_OPTION_NAMES.filter((name) => name !== 'config' && !isManaged(name) && spellingsOf(name).length > 1).map((name) => {
    const keys = spellingsOf(name).map(yamlKey);
    return {
      rule: `[${keys.map((key) => `has(self.${key})`).join(', ')}].filter(given, given).size() <= 1`,
      message: `${keys.join(' and ')} are the same option: give one`,
    };
  });
}

function buildShape(): Record<string, z.ZodType> {
  const shape: Record<string, z.ZodType> = {};
  for (const name of NODE_OPTION_NAMES) {
    if (name === 'config') continue;
    for (const spelling of spellingsOf(name)) {
      const schema = optionValueSchema(name);
      shape[yamlKey(spelling)] = spelling === name ? schema : schema.describe(`Alias of ${yamlKey(name)}. ${schema.description ?? ''}`);
    }
  }
  return shape;
}

/**
 * The schema of `spec.configuration`. Strict: the apiserver prunes unknown keys before the
 * operator sees an object, so an unknown key here means a schema older than the node's.
 */
export const NodeConfiguration = z
  .strictObject(buildShape())
  .meta({ 'x-kubernetes-validations': [...managedOptionRules(), ...aliasRules()] })
  .describe(
    'Node options with the PascalCase keys of the node\'s YAML configuration file ' +
      '(MaxMemTableSize, ChunkSize, ...), validated against the node\'s own option schema.',
  );

export type NodeConfiguration = Record<string, unknown>;

export type ConfigurationCheck =
  | { readonly ok: true; readonly configuration: NodeConfiguration }
  | { readonly ok: false; readonly issues: readonly string[] };

/**
 * Checks `spec.configuration` as the CRD does, plus what the CRD cannot (a key the schema did
 * not prune because the CRD is older than the operator). Each issue names the field.
 */
export function checkNodeConfiguration(raw: unknown): ConfigurationCheck {
  const parsed = NodeConfiguration.safeParse(raw ?? {});
  const issues: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : [issue.path.join('.')];
      for (const key of keys) {
        const path = key === '' ? 'spec.configuration' : `spec.configuration.${key}`;
        issues.push(issue.code === 'unrecognized_keys' ? `${path}: unknown node option` : `${path}: ${issue.message}`);
      }
    }
    return { ok: false, issues };
  }
  for (const name of NODE_OPTION_NAMES) {
    const given = spellingsOf(name).map(yamlKey).filter((key) => parsed.data[key] !== undefined);
    for (const key of isManaged(name) ? given : []) {
      issues.push(`spec.configuration.${key}: managed by the operator: ${OPERATOR_MANAGED_OPTIONS[name]}`);
    }
    if (!isManaged(name) && given.length > 1) issues.push(`spec.configuration: ${given.join(' and ')} are the same option: give one`);
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, configuration: parsed.data };
}

/** True when the node version this operator was built with has the option. */
export function nodeHasOption(name: string): boolean {
  return Object.hasOwn(NODE_OPTIONS, name);
}

/**
 * How a node is configured inside its pod. The user's `spec.configuration` is the node's YAML
 * configuration file (ConfigMap `<cluster>-config`); the options the operator owns (paths,
 * listen address, cluster membership, credentials, TLS) are environment variables of the
 * container, which the node ranks above its file (defaults < file < SERVICE_* env < flags), so
 * they also win over any default the image sets.
 *
 * Option names come from the node's own schema (envName); options this node version does not
 * have are left out, so the operator never starts a node with an unknown option.
 */
import { stringify } from 'yaml';
import { envName } from '../../../node/src/config/option-names.js';
import type { OptionName } from '../../../node/src/config/schema.js';
import { NODE_HTTP_PORT } from '../api/group.js';
import { nodeHasOption } from '../api/node-configuration.js';
import type { EffectiveSpec } from './effective-spec.js';
import { nodeTlsSecretName, podDnsName, podName } from './names.js';

/**
 * The data PVC. Not the image's /var/lib/eventdb: the image declares its db and index folders
 * as VOLUMEs, and the container runtime mounts an anonymous volume on each, which would hide
 * the PVC below them (and lose the data with the container).
 */
export const DATA_MOUNT_PATH = '/data';
/** The index PVC, when spec.storage.index asks for one. */
export const INDEX_MOUNT_PATH = '/index';
export const CONFIG_MOUNT_PATH = '/etc/eventdb';
export const CONFIG_FILE_NAME = 'eventdb.conf';
export const TLS_MOUNT_PATH = '/etc/eventdb/tls';
/** tls.caSecret, mounted whole: every .crt key is a trusted root. */
export const TLS_CA_MOUNT_PATH = '/etc/eventdb/tls-ca';
/** Port of node-to-node replication, once the node has the option. */
export const NODE_REPLICATION_PORT = 1112;

export function has(name: string): name is OptionName {
  return nodeHasOption(name);
}

/** True when the node version this operator was built with forms multi-node clusters. */
export function nodeSupportsClustering(): boolean {
  return has('clusterSize') && has('gossipSeed');
}

/**
 * True when this node version has the certificate options. The operator speaks HTTPS to nodes
 * (node client, port-forwards) and its probes use the https scheme, so a node that has them
 * serves TLS unless tls.mode is Disabled.
 */
export function nodeSupportsTls(): boolean {
  return has('certificateFile') && has('certificatePrivateKeyFile') && has('trustedRootCertificatesPath');
}

/**
 * The Secret whose `ca.crt` the nodes trust as their root (mounted at TLS_MOUNT_PATH/ca):
 * tls.caSecret when given; else with SelfSigned the node certificate's Secret (the operator puts
 * its CA there), with Secret the certificate Secret (`ca.crt` as cert-manager writes it).
 */
export function trustedCaSecretName(clusterName: string, spec: EffectiveSpec): string | undefined {
  if (spec.tls.mode === 'Disabled') return undefined;
  if (spec.tls.caSecret !== undefined) return spec.tls.caSecret;
  return spec.tls.mode === 'SelfSigned' ? nodeTlsSecretName(clusterName) : spec.tls.certificateSecret;
}

/** Whether nodes run with TLS: asked for by the spec, and possible with this node version. */
export function nodesServeTls(spec: EffectiveSpec): boolean {
  return spec.tls.mode !== 'Disabled' && nodeSupportsTls();
}

function managedOptions(spec: EffectiveSpec): Record<string, unknown> {
  const managed: Record<string, unknown> = {
    db: `${DATA_MOUNT_PATH}/db`,
    index: spec.storage.index === undefined ? `${DATA_MOUNT_PATH}/index` : INDEX_MOUNT_PATH,
    httpIp: '0.0.0.0',
    httpPort: NODE_HTTP_PORT,
    nodeIp: '0.0.0.0',
    nodePort: NODE_HTTP_PORT,
    replicationIp: '0.0.0.0',
    replicationPort: NODE_REPLICATION_PORT,
  };
  if (nodesServeTls(spec)) {
    managed['certificateFile'] = `${TLS_MOUNT_PATH}/tls.crt`;
    managed['certificatePrivateKeyFile'] = `${TLS_MOUNT_PATH}/tls.key`;
    managed['trustedRootCertificatesPath'] = spec.tls.caSecret === undefined ? `${TLS_MOUNT_PATH}/ca` : TLS_CA_MOUNT_PATH;
    managed['certificateReservedNodeCommonName'] = spec.tls.reservedNodeCommonName;
  } else {
    managed['insecure'] = true;
  }
  return managed;
}

/** The nodes' YAML configuration file: the user's options, sorted. */
export function renderNodeConfigFile(spec: EffectiveSpec): string {
  const sorted = Object.fromEntries(Object.entries(spec.configuration).sort(([a], [b]) => a.localeCompare(b)));
  return stringify(sorted, { lineWidth: 0 });
}

export interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: Record<string, unknown>;
}

export interface PodRole {
  readonly cluster: string;
  readonly namespace: string;
  readonly pod: string;
  readonly readOnlyReplica: boolean;
  /** Voting nodes of the cluster this pod is started for. */
  readonly clusterSize: number;
}

/** Environment of a node container: the config file, credentials and this pod's membership. */
export function nodeEnvironment(spec: EffectiveSpec, role: PodRole): EnvVar[] {
  const env: EnvVar[] = [{ name: 'SERVICE_CONFIG', value: `${CONFIG_MOUNT_PATH}/${CONFIG_FILE_NAME}` }];
  for (const [name, value] of Object.entries(managedOptions(spec))) {
    if (has(name)) env.push({ name: envName(name), value: String(value) });
  }
  const secretEnv = (option: string, ref: { name: string; key: string }): void => {
    if (has(option)) env.push({ name: envName(option), valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } });
  };
  secretEnv('defaultAdminPassword', spec.users.admin);
  secretEnv('defaultOpsPassword', spec.users.ops);
  if (spec.licenseSecret !== undefined) secretEnv('licenseKey', spec.licenseSecret);
  const plain = (option: string, value: string): void => {
    if (has(option)) env.push({ name: envName(option), value });
  };
  if (nodeSupportsClustering()) {
    plain('clusterSize', String(role.clusterSize));
    const seeds: string[] = [];
    for (let ordinal = 0; ordinal < role.clusterSize; ordinal++) {
      const seed = podName(role.cluster, ordinal);
      if (seed !== role.pod) seeds.push(`${podDnsName(role.cluster, role.namespace, seed)}:${NODE_HTTP_PORT}`);
    }
    plain('gossipSeed', seeds.join(','));
    plain('discoverViaDns', 'false');
    // Other nodes (and clients, through gossip) reach this node by its stable DNS name.
    plain('nodeHostAdvertiseAs', podDnsName(role.cluster, role.namespace, role.pod));
    if (role.readOnlyReplica) plain('readOnlyReplica', 'true');
  }
  return env;
}

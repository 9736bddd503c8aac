/**
 * The pod of one node: the node container with its configuration file, credentials and
 * membership, its PVC(s), probes on the node's own health endpoint, and the user's scheduling
 * settings. Pods are created by the operator directly (no StatefulSet): every restart is the
 * operator's choice and in its order (see ../../ARCHITECTURE.md).
 */
import {
  ANNOTATION_CLUSTER_SIZE,
  ANNOTATION_REVISION,
  LABEL_CLUSTER,
  LABEL_NODE_KIND,
  LABEL_POD,
  NODE_HTTP_PORT,
} from '../api/group.js';
import { envName } from '../../../node/src/config/option-names.js';
import type { KubeObject } from '../runtime/kube-api.js';
import type { EffectiveSpec } from './effective-spec.js';
import { clusterSelector, commonLabels, ownerReference, type ClusterIdentity } from './labels.js';
import { configMapName, dataClaimName, headlessServiceName, indexClaimName, nodeTlsSecretName } from './names.js';
import {
  CONFIG_MOUNT_PATH,
  DATA_MOUNT_PATH,
  INDEX_MOUNT_PATH,
  NODE_REPLICATION_PORT,
  TLS_MOUNT_PATH, TLS_CA_MOUNT_PATH,
  has,
  nodeEnvironment,
  nodesServeTls,
  trustedCaSecretName,
} from './node-settings.js';
import { hashOf } from './revision.js';

/** Bumped when the pod shape changes in a way running nodes must restart for. */
export const POD_TEMPLATE_VERSION = 1;

/** User and group of the node process in the node image. */
export const NODE_UID = 10001;
/** The pod security context of every pod that runs the node image (nodes, backup and restore Jobs). */
export const NODE_POD_SECURITY = {
  runAsNonRoot: true,
  runAsUser: NODE_UID,
  runAsGroup: NODE_UID,
  fsGroup: NODE_UID,
  fsGroupChangePolicy: 'OnRootMismatch',
  seccompProfile: { type: 'RuntimeDefault' },
};

export type NodeKind = 'quorum' | 'read-only-replica';

export interface PodInput {
  readonly cluster: ClusterIdentity;
  readonly spec: EffectiveSpec;
  readonly pod: string;
  readonly nodeKind: NodeKind;
  readonly clusterSize: number;
  readonly configFile: string;
  /** Value of the eventdb.io/restartedAt annotation, part of the revision. */
  readonly restartedAt: string;
}

/**
 * The revision pods of this kind should run: a hash of exactly what needs a restart when it
 * changes. Not the cluster size (the scale operation) nor labels (changed in place).
 */
export function podRevision(input: Omit<PodInput, 'pod' | 'clusterSize'>): string {
  const { spec } = input;
  return hashOf(
    POD_TEMPLATE_VERSION,
    input.nodeKind,
    spec.image,
    spec.imagePullPolicy,
    spec.resources,
    input.configFile,
    input.spec.tls.mode,
    spec.users.admin,
    spec.users.ops,
    spec.licenseSecret ?? null,
    spec.storage.index === undefined ? 'index-on-data' : 'index-volume',
    // How nodes reload certificates is the operator's business, not the node's: no restart.
    nodesServeTls(spec) ? { ...spec.tls, reload: undefined, certificateValidityMs: undefined, renewBeforeMs: undefined } : 'insecure',
    {
      nodeSelector: spec.podTemplate.nodeSelector,
      affinity: spec.podTemplate.affinity,
      tolerations: spec.podTemplate.tolerations,
      topologySpreadConstraints: spec.podTemplate.topologySpreadConstraints,
      priorityClassName: spec.podTemplate.priorityClassName,
    },
    input.restartedAt,
  );
}

/**
 * Probes on the node's anonymous /health/live. Over https the kubelet does not verify the
 * certificate (and presents none; the node asks for one but never requires it).
 */
function probe(scheme: 'HTTP' | 'HTTPS', periodSeconds: number, failureThreshold: number): Record<string, unknown> {
  return {
    httpGet: { path: '/health/live', port: 'http', scheme },
    periodSeconds,
    timeoutSeconds: 5,
    failureThreshold,
  };
}

function defaultAffinity(cluster: ClusterIdentity): Record<string, unknown> {
  // Prefer one node per host; required would leave pods Pending on one-host clusters (kind).
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: clusterSelector(cluster) } },
        },
      ],
    },
  };
}

function volumes(input: PodInput): { volumes: unknown[]; mounts: unknown[] } {
  const list: unknown[] = [
    { name: 'data', persistentVolumeClaim: { claimName: dataClaimName(input.pod) } },
    { name: 'config', configMap: { name: configMapName(input.cluster.name) } },
    { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } },
  ];
  const mounts: unknown[] = [
    { name: 'data', mountPath: DATA_MOUNT_PATH },
    { name: 'config', mountPath: CONFIG_MOUNT_PATH, readOnly: true },
    { name: 'tmp', mountPath: '/tmp' },
  ];
  if (input.spec.storage.index !== undefined) {
    list.push({ name: 'index', persistentVolumeClaim: { claimName: indexClaimName(input.pod) } });
    mounts.push({ name: 'index', mountPath: INDEX_MOUNT_PATH });
  }
  // The certificates are mounted whenever TLS is asked for.
  if (input.spec.tls.mode !== 'Disabled') {
    const secret = input.spec.tls.certificateSecret ?? nodeTlsSecretName(input.cluster.name);
    const sources: unknown[] = [{ secret: { name: secret, items: [{ key: 'tls.crt', path: 'tls.crt' }, { key: 'tls.key', path: 'tls.key' }] } }];
    const caSecret = trustedCaSecretName(input.cluster.name, input.spec);
    // A CA Secret the user names is mounted whole: every .crt key is a trusted root (old and new
    // CA side by side during a migration); otherwise its ca.crt only (the node Secret holds the key).
    if (input.spec.tls.caSecret !== undefined) {
      list.push({ name: 'tls-ca', secret: { secretName: input.spec.tls.caSecret } });
      mounts.push({ name: 'tls-ca', mountPath: TLS_CA_MOUNT_PATH, readOnly: true });
    } else if (caSecret !== undefined) {
      sources.push({ secret: { name: caSecret, items: [{ key: 'ca.crt', path: 'ca/ca.crt' }] } });
    }
    list.push({ name: 'tls', projected: { sources } });
    mounts.push({ name: 'tls', mountPath: TLS_MOUNT_PATH, readOnly: true });
  }
  return { volumes: list, mounts };
}

export function buildPod(input: PodInput): KubeObject {
  const { cluster, spec } = input;
  const { volumes: podVolumes, mounts } = volumes(input);
  const ports: unknown[] = [{ name: 'http', containerPort: NODE_HTTP_PORT, protocol: 'TCP' }];
  if (has('replicationPort')) ports.push({ name: 'replication', containerPort: NODE_REPLICATION_PORT, protocol: 'TCP' });
  const template = spec.podTemplate;
  const scheme = nodesServeTls(spec) ? 'HTTPS' : 'HTTP';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: input.pod,
      namespace: cluster.namespace,
      labels: {
        ...template.labels,
        ...commonLabels(cluster),
        [LABEL_CLUSTER]: cluster.name,
        [LABEL_NODE_KIND]: input.nodeKind,
        [LABEL_POD]: input.pod,
      },
      annotations: {
        ...template.annotations,
        [ANNOTATION_REVISION]: podRevision(input),
        [ANNOTATION_CLUSTER_SIZE]: String(input.clusterSize),
      },
      ownerReferences: [ownerReference(cluster)],
    },
    spec: {
      hostname: input.pod,
      subdomain: headlessServiceName(cluster.name),
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 60,
      securityContext: NODE_POD_SECURITY,
      containers: [
        {
          name: 'eventdb',
          image: spec.image,
          imagePullPolicy: spec.imagePullPolicy,
          env: nodeEnvironment(spec, {
            cluster: cluster.name,
            namespace: cluster.namespace,
            pod: input.pod,
            readOnlyReplica: input.nodeKind === 'read-only-replica',
            clusterSize: input.clusterSize,
          }),
          ports,
          resources: spec.resources,
          startupProbe: probe(scheme, 5, 120),
          readinessProbe: probe(scheme, 5, 3),
          livenessProbe: probe(scheme, 10, 6),
          volumeMounts: mounts,
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
      volumes: podVolumes,
      affinity: template.affinity ?? defaultAffinity(cluster),
      ...(template.nodeSelector === undefined ? {} : { nodeSelector: template.nodeSelector }),
      ...(template.tolerations === undefined ? {} : { tolerations: template.tolerations }),
      ...(template.topologySpreadConstraints === undefined ? {} : { topologySpreadConstraints: template.topologySpreadConstraints }),
      ...(template.priorityClassName === undefined ? {} : { priorityClassName: template.priorityClassName }),
    },
  };
}

/** Env entries of a container, as a pod object carries them. */
export type ContainerEnv = readonly { readonly name: string; readonly value?: string }[];

/**
 * Whether a node container serves https, from its own env (started with certificate options and
 * not Insecure): what the running pod does, which may trail the spec during a change of tls.mode.
 */
export function containerServesTls(env: ContainerEnv): boolean {
  return (
    env.some((variable) => variable.name === envName('certificateFile')) &&
    !env.some((variable) => variable.name === envName('insecure') && variable.value === 'true')
  );
}

/** The `eventdb` container's env of a pod object. */
export function nodeContainerEnv(pod: KubeObject): ContainerEnv {
  const containers = (pod['spec'] as { containers?: { name: string; env?: ContainerEnv }[] } | undefined)?.containers ?? [];
  return containers.find((container) => container.name === 'eventdb')?.env ?? [];
}

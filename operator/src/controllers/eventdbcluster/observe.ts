/**
 * What the controller sees of a cluster: its pods (from the informer's cache) and its members
 * (from each node's own gossip). A node is the authority on itself: each pod's role and
 * checkpoints come from the gossip it answers, so members map to pods without guessing.
 *
 * Whether a node serves TLS is read from its own pod (the options it was started with), not
 * from the spec: while a change of tls.mode rolls out, old and new pods are each spoken to in
 * their own scheme. Over https the node certificate must chain to the cluster's CA and carry the
 * pod's DNS name; the certificate each node served is recorded (CertificatesReloaded).
 */
import {
  ANNOTATION_CLUSTER_SIZE,
  ANNOTATION_REVISION,
  LABEL_NODE_KIND,
  LABEL_ROLE,
} from '../../api/group.js';
import type { MemberStatus } from '../../api/eventdb-cluster.js';
import type { NodeAccess } from '../../node-client/node-access.js';
import { NodeClientError, type GossipMember, type NodeClient, type NodeEndpoint } from '../../node-client/node-client.js';
import type { KubeObject } from '../../runtime/kube-api.js';
import { podDnsName, replicaOrdinal, votingOrdinal } from '../../resources/names.js';
import { containerServesTls } from '../../resources/pod.js';
import type { MemberState, NodeKind, PodState } from './rollout-plan.js';

export interface PodView extends PodState {
  readonly ip: string | undefined;
  readonly image: string | undefined;
  readonly roleLabel: string | undefined;
  readonly phase: string | undefined;
  /** The node was started with certificate options (it serves https), from the pod's own env. */
  readonly servesTls: boolean;
  readonly object: KubeObject;
}

interface PodObject {
  metadata: { name?: string; uid?: string; deletionTimestamp?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { containers?: { name: string; image?: string; env?: { name: string; value?: string }[] }[] };
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}

export function podView(cluster: string, object: KubeObject): PodView | undefined {
  const pod = object as unknown as PodObject;
  const name = pod.metadata.name ?? '';
  const voting = votingOrdinal(cluster, name);
  const replica = replicaOrdinal(cluster, name);
  const ordinal = voting ?? replica;
  if (ordinal === undefined) return undefined;
  const kind: NodeKind = voting !== undefined ? 'quorum' : 'read-only-replica';
  const sizeText = pod.metadata.annotations?.[ANNOTATION_CLUSTER_SIZE];
  const ready = pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ?? false;
  const container = pod.spec?.containers?.find((candidate) => candidate.name === 'eventdb');
  const env = container?.env ?? [];
  const servesTls = containerServesTls(env);
  return {
    name,
    kind: (pod.metadata.labels?.[LABEL_NODE_KIND] as NodeKind | undefined) ?? kind,
    ordinal,
    uid: pod.metadata.uid ?? '',
    revision: pod.metadata.annotations?.[ANNOTATION_REVISION],
    clusterSize: sizeText === undefined ? undefined : Number(sizeText),
    ready,
    terminating: pod.metadata.deletionTimestamp !== undefined,
    ip: pod.status?.podIP,
    image: container?.image,
    roleLabel: pod.metadata.labels?.[LABEL_ROLE],
    phase: pod.status?.phase,
    servesTls,
    object,
  };
}

export interface ObservedMember extends MemberState {
  readonly pod: string;
  readonly chaserCheckpoint?: number;
  readonly epochNumber?: number;
  readonly instanceId?: string;
  /** `sha256:<hex>` of the certificate the node served when observed (https only). */
  readonly certificateFingerprint?: string;
  /** Why the node was not trusted (its certificate refused, or no CA to check it with). */
  readonly tlsProblem?: string;
}

/** The member in `members` that is `pod` itself. */
function selfMember(members: readonly GossipMember[], pod: PodView, namespace: string, cluster: string): GossipMember | undefined {
  if (members.length === 1) return members[0];
  const names = new Set([pod.ip, pod.name, podDnsName(cluster, namespace, pod.name), `${podDnsName(cluster, namespace, pod.name)}.cluster.local`]);
  return members.find((member) => names.has(member.httpEndPointIp) || member.httpEndPointIp.startsWith(`${pod.name}.`));
}

/** The CAs to verify nodes with, or why there are none (then https nodes are not trusted). */
export type ClusterTrust = { readonly ca: readonly string[] } | { readonly problem: string };

/**
 * How to reach a pod's node: its base URL in the scheme the node serves, and over https the
 * cluster's CAs and the pod's DNS name to check its certificate against. Undefined while the
 * pod has no address; a problem when the node serves https and there is no CA to trust.
 */
export async function nodeEndpoint(options: {
  readonly cluster: string;
  readonly namespace: string;
  readonly pod: PodView;
  readonly access: NodeAccess;
  readonly trust: ClusterTrust | undefined;
}): Promise<NodeEndpoint | { readonly problem: string } | undefined> {
  const { cluster, namespace, pod, access, trust } = options;
  if (pod.servesTls && (trust === undefined || 'problem' in trust)) return { problem: trust !== undefined && 'problem' in trust ? trust.problem : 'no CA to verify the node with' };
  const baseUrl = await access.baseUrl(namespace, pod, pod.servesTls ? 'https' : 'http');
  if (baseUrl === undefined) return undefined;
  if (!pod.servesTls || trust === undefined || 'problem' in trust) return { baseUrl };
  return { baseUrl, tls: { ca: trust.ca, serverName: podDnsName(cluster, namespace, pod.name) } };
}

/** Asks every running pod for its gossip, in parallel; an unreachable node is not alive. */
export async function observeMembers(options: {
  readonly cluster: string;
  readonly namespace: string;
  readonly pods: readonly PodView[];
  readonly client: NodeClient;
  readonly access: NodeAccess;
  /** Needed for pods that serve TLS; read lazily, once, when such a pod runs. */
  readonly trust: () => Promise<ClusterTrust>;
}): Promise<Map<string, ObservedMember>> {
  const { cluster, namespace, client, access } = options;
  const running = options.pods.filter((pod) => pod.phase === 'Running' && !pod.terminating);
  const trust = running.some((pod) => pod.servesTls) ? await options.trust() : undefined;
  const entries = await Promise.all(
    running.map(async (pod): Promise<[string, ObservedMember] | undefined> => {
      const target = await nodeEndpoint({ cluster, namespace, pod, access, trust });
      if (target === undefined) return undefined;
      if ('problem' in target) return [pod.name, { pod: pod.name, role: 'Unreachable', alive: false, tlsProblem: target.problem }];
      const endpoint = target;
      try {
        const { gossip, certificateFingerprint } = await client.observe(endpoint);
        const served = certificateFingerprint === undefined ? {} : { certificateFingerprint };
        const self = selfMember(gossip.members, pod, namespace, cluster);
        if (self === undefined) return [pod.name, { pod: pod.name, role: 'Unknown', alive: true, ...served }];
        return [
          pod.name,
          {
            pod: pod.name,
            role: self.state,
            alive: self.isAlive,
            instanceId: self.instanceId,
            ...(self.writerCheckpoint === undefined ? {} : { writerCheckpoint: self.writerCheckpoint }),
            ...(self.chaserCheckpoint === undefined ? {} : { chaserCheckpoint: self.chaserCheckpoint }),
            ...(self.epochNumber === undefined ? {} : { epochNumber: self.epochNumber }),
            ...served,
          },
        ];
      } catch (err: unknown) {
        const refused = err instanceof NodeClientError && err.code === 'EDBOP_NODE_TLS_REFUSED';
        return [pod.name, { pod: pod.name, role: 'Unreachable', alive: false, ...(refused ? { tlsProblem: err.message } : {}) }];
      }
    }),
  );
  return new Map(entries.filter((entry): entry is [string, ObservedMember] => entry !== undefined));
}

/** Pods whose own gossip says Leader, the highest epoch first. */
export function leaderClaimants(members: ReadonlyMap<string, ObservedMember>): string[] {
  const leaders = [...members.values()].filter((member) => member.alive && member.role === 'Leader');
  leaders.sort((a, b) => (b.epochNumber ?? 0) - (a.epochNumber ?? 0) || a.pod.localeCompare(b.pod));
  return leaders.map((member) => member.pod);
}

/** The leader: the pod whose own gossip says Leader (the highest epoch if several claim it). */
export function leaderOf(members: ReadonlyMap<string, ObservedMember>): string | undefined {
  return leaderClaimants(members)[0];
}

/**
 * The role label a pod should carry, from its node state; null removes it. Only the one leader
 * chosen is labelled leader: when several nodes claim it (a split, or nodes that do not cluster),
 * the others lose the label, so the `<cluster>-leader` Service never spreads writes.
 */
export function roleLabelOf(member: ObservedMember | undefined, leader: string | undefined): string | null | undefined {
  if (member === undefined || !member.alive) return undefined;
  if (member.role === 'Leader') return member.pod === leader ? 'leader' : null;
  if (member.role === 'Follower') return 'follower';
  if (/ReadOnly/.test(member.role)) return 'read-only-replica';
  return undefined;
}

export function memberStatus(pod: PodView, member: ObservedMember | undefined): MemberStatus {
  return {
    pod: pod.name,
    role: member?.role ?? (pod.phase === 'Running' ? 'Unknown' : (pod.phase ?? 'Pending')),
    alive: member?.alive ?? false,
    ready: pod.ready,
    ...(member?.writerCheckpoint === undefined ? {} : { writerCheckpoint: member.writerCheckpoint }),
    ...(member?.chaserCheckpoint === undefined ? {} : { chaserCheckpoint: member.chaserCheckpoint }),
    ...(member?.epochNumber === undefined ? {} : { epochNumber: member.epochNumber }),
    ...(member?.certificateFingerprint === undefined ? {} : { certificateFingerprint: member.certificateFingerprint }),
    ...(pod.image === undefined ? {} : { image: pod.image }),
    ...(pod.revision === undefined ? {} : { revision: pod.revision }),
  };
}

export { LABEL_ROLE };

/**
 * A cluster member as gossip describes it, in EventStoreDB's member shape (ClientClusterInfo's
 * MemberInfo): identity, state, endpoints, checkpoints, epoch, priority. Nodes exchange these
 * documents on `POST /gossip`; clients read them on `GET /gossip`.
 */
import { z } from 'zod';

/** EventStoreDB's VNodeState names. */
export const NODE_STATES = [
  'Initializing', 'DiscoverLeader', 'Unknown', 'PreReplica', 'CatchingUp', 'Clone', 'Follower', 'PreLeader',
  'Leader', 'Manager', 'ShuttingDown', 'Shutdown', 'ReadOnlyLeaderless', 'PreReadOnlyReplica', 'ReadOnlyReplica',
  'ResigningLeader',
] as const;
export type NodeState = (typeof NODE_STATES)[number];

export const MemberInfoSchema = z.object({
  instanceId: z.string(),
  timeStamp: z.string(),
  state: z.string(),
  isAlive: z.boolean(),
  /** The replication (node-to-node) endpoint. */
  internalTcpIp: z.string(),
  internalTcpPort: z.number(),
  internalSecureTcpPort: z.number(),
  externalTcpIp: z.string(),
  externalTcpPort: z.number(),
  externalSecureTcpPort: z.number(),
  /** The HTTP API as other nodes reach it. */
  internalHttpEndPointIp: z.string(),
  internalHttpEndPointPort: z.number(),
  /** The HTTP API as clients are told to reach it (advertise-to-client-as). */
  httpEndPointIp: z.string(),
  httpEndPointPort: z.number(),
  lastCommitPosition: z.number(),
  writerCheckpoint: z.number(),
  chaserCheckpoint: z.number(),
  epochPosition: z.number(),
  epochNumber: z.number(),
  epochId: z.string(),
  nodePriority: z.number(),
  isReadOnlyReplica: z.boolean(),
  esVersion: z.string(),
});
export type MemberInfo = z.infer<typeof MemberInfoSchema>;

export const GossipDocumentSchema = z.object({
  members: z.array(MemberInfoSchema),
  serverIp: z.string(),
  serverPort: z.number(),
});
export type GossipDocument = z.infer<typeof GossipDocumentSchema>;

export const ZERO_GUID = '00000000-0000-0000-0000-000000000000';

/** `host:port` of a member's HTTP API as other nodes reach it: the key gossip goes to. */
export function httpEndpointOf(member: MemberInfo): string {
  return `${member.internalHttpEndPointIp}:${member.internalHttpEndPointPort}`;
}

export function isVoter(member: MemberInfo): boolean {
  return !member.isReadOnlyReplica;
}

/**
 * Assembles a cluster member for the composition root (main.ts): its storage host, the database
 * the API uses (reads local, writes routed), the cluster node, and the endpoints it advertises.
 */
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { NodeConfig } from '../config/schema.js';
import { openEngine, type EventDbDeps } from '../storage/event-db.js';
import type { EventDbOptions } from '../storage/event-db-types.js';
import { ClusterEventDb, StorageHost, notReady } from './cluster-db.js';
import type { AppendResult } from '../storage/event-db-types.js';
import { ClusterNode, type AdvertisedEndpoints, type ClusterNodeDeps, type ClusterSettings, type PeerTransport } from './cluster-node.js';
import type { NodeState } from './member-info.js';
import { PeerClient, type PeerClientOptions } from './transport/peer-client.js';

/** A node is a cluster member when it has peers to agree with, or follows as a read-only replica. */
export function isClusterMember(config: NodeConfig): boolean {
  return config.clusterSize > 1 || config.readOnlyReplica;
}

export function clusterSettings(config: NodeConfig): ClusterSettings {
  return {
    clusterSize: config.clusterSize,
    nodePriority: config.nodePriority,
    readOnlyReplica: config.readOnlyReplica,
    gossipSeeds: config.gossipSeed.split(',').map((s) => s.trim()).filter((s) => s !== ''),
    discoverViaDns: config.discoverViaDns,
    clusterDns: config.clusterDns,
    clusterGossipPort: config.clusterGossipPort,
    gossipIntervalMs: config.gossipIntervalMs,
    gossipTimeoutMs: config.gossipTimeoutMs,
    leaderElectionTimeoutMs: config.leaderElectionTimeoutMs,
    commitTimeoutMs: config.commitTimeoutMs,
    prepareTimeoutMs: config.prepareTimeoutMs,
    deadMemberRemovalPeriodSec: config.deadMemberRemovalPeriodSec,
    chunkSizeBytes: config.chunkSize,
  };
}

export interface ClusterMember {
  readonly host: StorageHost;
  readonly db: ClusterEventDb;
  readonly node: ClusterNode;
}

export async function createClusterMember(options: {
  readonly config: NodeConfig;
  readonly engineOptions: EventDbOptions;
  readonly engineDeps: EventDbDeps;
  readonly instanceId: string;
  readonly version: string;
  readonly log: Logger;
  /** With TLS: the agent for gossip and elections (PeerClientOptions) and the replication transport. */
  readonly peerHttpsAgent?: PeerClientOptions['httpsAgent'];
  readonly transport?: PeerTransport;
  readonly onStateChange?: (state: NodeState, previous: NodeState) => void;
  readonly prepareLeadership?: ClusterNodeDeps['prepareLeadership'];
}): Promise<ClusterMember> {
  const { config, log, instanceId } = options;
  // The node is created after the storage; the engine reaches it late.
  let node: ClusterNode | undefined;
  const remoteScavengePoint = (threshold: number): Promise<AppendResult> => {
    if (node === undefined) throw notReady();
    return node.writeScavengePoint(threshold);
  };
  const engineDeps: EventDbDeps = { ...options.engineDeps, cluster: { instanceId, remoteScavengePoint } };
  const host = new StorageHost(() => openEngine(options.engineOptions, engineDeps), log.child({ component: 'cluster.storage' }));
  await host.start();
  node = new ClusterNode({
    log: log.child({ component: 'cluster' }),
    instanceId,
    version: options.version,
    settings: clusterSettings(config),
    host,
    peers: new PeerClient(options.peerHttpsAgent === undefined ? {} : { httpsAgent: options.peerHttpsAgent }),
    ...(options.transport === undefined ? {} : { transport: options.transport }),
    ...(options.onStateChange === undefined ? {} : { onStateChange: options.onStateChange }),
    ...(options.prepareLeadership === undefined ? {} : { prepareLeadership: options.prepareLeadership }),
  });
  return { host, db: new ClusterEventDb(host, node), node };
}

/** The host other machines reach an address as: itself, or this machine's first external IPv4. */
export function advertisedHost(ip: string, override: string): string {
  if (override !== '') return override;
  if (ip !== '0.0.0.0' && ip !== '::') return ip;
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return os.hostname();
}

export function advertisedEndpoints(config: NodeConfig, http: AddressInfo, replication: AddressInfo): AdvertisedEndpoints {
  const httpHost = advertisedHost(config.nodeIp, config.nodeHostAdvertiseAs);
  const httpPort = config.nodePortAdvertiseAs || http.port;
  return {
    httpHost, httpPort,
    clientHost: config.advertiseHostToClientAs || httpHost,
    clientPort: config.advertiseNodePortToClientAs || httpPort,
    replicationHost: advertisedHost(config.replicationIp || config.nodeIp, config.replicationHostAdvertiseAs || config.nodeHostAdvertiseAs),
    replicationPort: config.replicationPortAdvertiseAs || replication.port,
  };
}

/**
 * Maps the node's capabilities onto the metrics' sources (node-metrics.ts): each figure comes
 * from an accessor the capability already has, read at scrape time. main.ts calls this once.
 */
import type { AutoScavengeService } from '../auto-scavenge/service.js';
import type { ClusterMember } from '../cluster/cluster-setup.js';
import type { ProjectionsSubsystem } from '../projections/projections-subsystem.js';
import type { ScavengeService } from '../scavenge/scavenge-service.js';
import type { EventDb } from '../storage/event-db-types.js';
import type { PersistentSubscriptions } from '../subscriptions/service.js';
import type { TlsState } from '../tls/tls-state.js';
import { NodeMetrics, type NodeMetricsSources } from './node-metrics.js';
import { processMetricsRegistry } from './process-metrics.js';

export interface NodeCapabilities {
  readonly version: string;
  readonly db: EventDb;
  readonly member?: ClusterMember;
  readonly instanceId: string;
  readonly clusterSize: number;
  readonly scavenges: ScavengeService;
  readonly autoScavenge?: AutoScavengeService;
  readonly subscriptions: PersistentSubscriptions;
  readonly projections?: ProjectionsSubsystem;
  readonly tls?: TlsState;
  /** Data and index directories; absent with MemDb. */
  readonly volumes?: { readonly data: string; readonly index: string };
}

export function createNodeMetrics(c: NodeCapabilities): NodeMetrics {
  const { member, autoScavenge, projections, tls } = c;
  const sources: NodeMetricsSources = {
    version: c.version,
    engine: () => c.db.stats(),
    processRegistry: processMetricsRegistry(),
    scavenges: () => c.scavenges.figures(),
    subscriptions: () => {
      const all = c.subscriptions.allInfos();
      if (!('infos' in all)) return undefined;
      return all.infos.map((info) => ({
        stream: info.stream, group: info.group,
        connections: info.stats.connections.length,
        parkedMessages: info.parkedMessageCount,
        inFlightMessages: info.stats.totalInFlightMessages,
        itemsProcessed: info.stats.totalItemsProcessed,
        lastKnownEventPosition: info.stats.lastKnownEventPosition,
        lastCheckpointedEventPosition: info.stats.lastCheckpointedEventPosition,
      }));
    },
    ...(c.volumes === undefined ? {} : { volumes: c.volumes }),
    ...(member === undefined ? {} : {
      nodeState: () => member.node.nodeState,
      cluster: {
        instanceId: c.instanceId,
        clusterSize: c.clusterSize,
        members: () => member.node.gossip().members,
        replication: () => {
          const tree = member.node.replicationTree();
          const replicas = Object.entries((tree.replicas ?? {}) as Record<string, Record<string, string | number | boolean>>).map(([instanceId, r]) => ({
            instanceId,
            remoteAddress: String(r.remoteAddress ?? ''),
            ackedPosition: Number(r.ackedPosition ?? 0),
            isReadOnlyReplica: r.isReadOnlyReplica === true,
          }));
          return { writerCheckpoint: Number(tree.writerCheckpoint), commitPosition: Number(tree.commitPosition), replicas };
        },
      },
    }),
    ...(autoScavenge === undefined ? {} : {
      autoScavenge: () => {
        const status = autoScavenge.status();
        return 'state' in status ? status.state : undefined;
      },
    }),
    ...(projections === undefined ? {} : {
      projections: () => projections.manager.list('Any', (path) => path).map((p) => ({
        name: p.name, status: p.status, progress: p.progress, eventsProcessedAfterRestart: p.eventsProcessedAfterRestart,
      })),
    }),
    ...(tls === undefined ? {} : {
      certificates: () => {
        const info = tls.describe();
        return {
          nodeNotAfterMs: Date.parse(info.notAfter),
          rootsNotAfterMs: info.trustedRoots.map((root) => ({ subject: root.subject, notAfterMs: Date.parse(root.notAfter) })),
        };
      },
    }),
  };
  return new NodeMetrics(sources);
}

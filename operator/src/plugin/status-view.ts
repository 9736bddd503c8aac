/**
 * PURE: what `kubectl eventdb status` shows, built from the objects read (the cluster, its pods
 * and PVCs, Backups, ScavengeSchedules, Events) and the nodes' own gossip when they answered.
 * The nodes are the authority on themselves (role, checkpoints, epoch); status.members (at most
 * 30 s old) stands in for a node that could not be reached.
 */
import type { MemberStatus } from '../api/eventdb-cluster.js';

export interface ObjectLike {
  metadata: { name?: string; namespace?: string; creationTimestamp?: string; labels?: Record<string, string>; annotations?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

export interface LiveMember {
  readonly pod: string;
  readonly role: string;
  readonly alive: boolean;
  readonly writerCheckpoint?: number;
  readonly chaserCheckpoint?: number;
  readonly epochNumber?: number;
  readonly certificateFingerprint?: string;
  readonly instanceId?: string;
}

/** The leader's own replication report (GET /stats: replication.replicas), by instance id. */
export interface ReplicaReport {
  readonly instanceId: string;
  /** The leader's durable position minus what the replica acknowledged. */
  readonly lagBytes: number;
  readonly caughtUp: boolean;
}

/** The head of `$all` on one node: what a reader of that node sees last. */
export interface NewestEvent {
  /** `<number>@<stream>`: the same event on every node. */
  readonly event: string;
  /** When the leader wrote it (the event's created time). */
  readonly createdMs: number;
}

export interface StatusInput {
  readonly cluster: ObjectLike;
  readonly pods: readonly ObjectLike[];
  readonly claims: readonly ObjectLike[];
  readonly backups: readonly ObjectLike[];
  readonly schedules: readonly ObjectLike[];
  readonly events: readonly ObjectLike[];
  /** Each running node's own gossip (undefined: the nodes were not asked). */
  readonly live: ReadonlyMap<string, LiveMember> | undefined;
  /** The leader's replication report, when it could be read. */
  readonly replicas?: readonly ReplicaReport[];
  /** Each node's newest event as that node serves it (its `$all` head), by pod. */
  readonly newestEvents?: ReadonlyMap<string, NewestEvent>;
  readonly nowMs: number;
}

export interface NodeRow {
  readonly pod: string;
  readonly role: string;
  readonly ready: boolean;
  readonly alive: boolean;
  readonly epoch: number | undefined;
  readonly writerCheckpoint: number | undefined;
  readonly chaserCheckpoint: number | undefined;
  /** Leader's writer checkpoint minus this node's; undefined without both. */
  readonly lagBytes: number | undefined;
  /**
   * How far behind the leader the node's data is in time: the leader's newest event's created
   * time minus this node's newest event's (both from their own `$all` heads); 0 when the node
   * serves the leader's newest event or is not behind its writer checkpoint; undefined without both heads.
   */
  readonly lagSeconds: number | undefined;
  /** From the leader's /stats: what it sent and the replica has not acknowledged, and whether it counts as caught up. */
  readonly ackedLagBytes: number | undefined;
  readonly caughtUp: boolean | undefined;
  readonly image: string | undefined;
  readonly restarts: number;
  readonly storage: string | undefined;
  /** live: the node's own gossip now; status: status.members (the operator's last look). */
  readonly source: 'live' | 'status' | 'none';
}

export interface ConditionRow {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}

export interface StatusView {
  readonly cluster: string;
  readonly namespace: string;
  readonly phase: string;
  readonly replicas: number;
  readonly readyReplicas: number;
  readonly desiredReplicas: number;
  readonly leader: string | undefined;
  readonly image: string | undefined;
  readonly paused: boolean;
  readonly conditions: readonly ConditionRow[];
  readonly nodes: readonly NodeRow[];
  readonly membersObservedAt: string | undefined;
  readonly certificates: { readonly mode: string; readonly notAfter?: string; readonly daysLeft?: number; readonly reloadedAt?: string; readonly fingerprint?: string } ;
  readonly operation: { readonly kind: string; readonly step: string; readonly startedAt: string; readonly pod?: string; readonly podStep?: string; readonly waitingFor?: string } | undefined;
  readonly lastOperation: { readonly kind: string; readonly result: string; readonly finishedAt: string } | undefined;
  readonly backups: {
    readonly lastCompleted?: { readonly name: string; readonly completedAt?: string; readonly method?: string; readonly writerCheckpoint?: number };
    readonly lastFailed?: { readonly name: string; readonly message?: string };
    readonly running: readonly { readonly name: string; readonly phase: string }[];
    readonly total: number;
  };
  readonly scavenges: readonly {
    readonly schedule: string;
    readonly state: string;
    readonly next?: string;
    readonly current?: { readonly id: string; readonly nodes: readonly { readonly pod: string; readonly result: string }[] };
    readonly last?: { readonly result: string; readonly finishedAt?: string };
  }[];
  readonly warnings: readonly { readonly at: string; readonly reason: string; readonly object: string; readonly message: string; readonly count: number }[];
  /** 0 when the cluster is Ready and every node is ready and alive; 1 otherwise. */
  readonly healthy: boolean;
}

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function conditionsOf(object: ObjectLike): ConditionRow[] {
  const list = ((object['status'] as Any | undefined)?.['conditions'] ?? []) as Any[];
  return list.map((condition) => ({ type: String(condition['type'] ?? ''), status: String(condition['status'] ?? ''), reason: String(condition['reason'] ?? ''), message: String(condition['message'] ?? '') }));
}

function restartsOf(pod: ObjectLike): number {
  const statuses = ((pod['status'] as Any | undefined)?.['containerStatuses'] ?? []) as Any[];
  return statuses.reduce((sum, status) => sum + Number(status['restartCount'] ?? 0), 0);
}

function podReady(pod: ObjectLike): boolean {
  const conditions = ((pod['status'] as Any | undefined)?.['conditions'] ?? []) as Any[];
  return conditions.some((condition) => condition['type'] === 'Ready' && condition['status'] === 'True');
}

function podImage(pod: ObjectLike): string | undefined {
  const containers = ((pod['spec'] as Any | undefined)?.['containers'] ?? []) as Any[];
  return (containers.find((container) => container['name'] === 'eventdb') ?? containers[0])?.['image'] as string | undefined;
}

function claimSummary(claims: readonly ObjectLike[], pod: string): string | undefined {
  const mine = claims.filter((claim) => claim.metadata.name === `data-${pod}` || claim.metadata.name === `index-${pod}`);
  if (mine.length === 0) return undefined;
  return mine
    .map((claim) => {
      const status = claim['status'] as Any | undefined;
      const capacity = status?.['capacity']?.['storage'] ?? (claim['spec'] as Any | undefined)?.['resources']?.['requests']?.['storage'] ?? '?';
      return `${String(claim.metadata.name).startsWith('index-') ? 'index' : 'data'} ${capacity} ${status?.['phase'] ?? ''}`.trim();
    })
    .join(', ');
}

const time = (value: unknown): number => (typeof value === 'string' ? Date.parse(value) : Number.NaN);

export function buildStatusView(input: StatusInput): StatusView {
  const { cluster, nowMs } = input;
  const status = (cluster['status'] ?? {}) as Any;
  const spec = (cluster['spec'] ?? {}) as Any;
  const name = cluster.metadata.name ?? '';
  const members = new Map(((status['members'] ?? []) as MemberStatus[]).map((member) => [member.pod, member]));
  const podsByName = new Map(input.pods.map((pod) => [pod.metadata.name ?? '', pod]));
  const names = [...new Set([...podsByName.keys(), ...members.keys()])].sort(byNodeName);
  const rowsWithoutLag = names.map((pod) => {
    const live = input.live?.get(pod);
    const member = members.get(pod);
    const object = podsByName.get(pod);
    const source: NodeRow['source'] = live !== undefined && live.role !== 'Unreachable' ? 'live' : member !== undefined ? 'status' : 'none';
    const from = source === 'live' ? live : source === 'status' ? member : undefined;
    return {
      pod,
      role: from?.role ?? (object === undefined ? 'Gone' : 'Unknown'),
      ready: object === undefined ? false : podReady(object),
      alive: from?.alive ?? false,
      epoch: from?.epochNumber,
      writerCheckpoint: from?.writerCheckpoint,
      chaserCheckpoint: from?.chaserCheckpoint,
      image: (object === undefined ? undefined : podImage(object)) ?? member?.image,
      restarts: object === undefined ? 0 : restartsOf(object),
      storage: claimSummary(input.claims, pod),
      source,
    };
  });
  const leaderRow = rowsWithoutLag.find((row) => row.role === 'Leader' && row.alive) ?? rowsWithoutLag.find((row) => row.pod === status['leader']);
  const leaderCheckpoint = leaderRow?.writerCheckpoint;
  const reports = new Map((input.replicas ?? []).map((report) => [report.instanceId, report]));
  const nodes: NodeRow[] = rowsWithoutLag.map((row) => {
    const instanceId = input.live?.get(row.pod)?.instanceId;
    const report = instanceId === undefined ? undefined : reports.get(instanceId);
    const isLeader = row.pod === leaderRow?.pod;
    return {
      ...row,
      lagBytes: leaderCheckpoint === undefined || row.writerCheckpoint === undefined ? undefined : Math.max(0, leaderCheckpoint - row.writerCheckpoint),
      lagSeconds: isLeader ? (input.newestEvents?.has(row.pod) === true ? 0 : undefined) : lagSecondsOf(input.newestEvents?.get(leaderRow?.pod ?? ''), input.newestEvents?.get(row.pod), leaderCheckpoint, row.writerCheckpoint),
      ackedLagBytes: isLeader && input.replicas !== undefined ? 0 : report?.lagBytes,
      caughtUp: isLeader && input.replicas !== undefined ? true : report?.caughtUp,
    };
  });
  const certificates = (status['certificates'] ?? {}) as Any;
  const notAfterMs = time(certificates['notAfter']);
  const fingerprints = [...new Set(nodes.map((node) => input.live?.get(node.pod)?.certificateFingerprint ?? members.get(node.pod)?.certificateFingerprint).filter((value): value is string => value !== undefined))];
  const operation = status['operation'] as Any | undefined;
  const lastOperation = status['lastOperation'] as Any | undefined;
  const backups = input.backups.filter((backup) => (backup['spec'] as Any | undefined)?.['cluster']?.['name'] === name);
  const phaseOf = (backup: ObjectLike): string => String((backup['status'] as Any | undefined)?.['phase'] ?? 'Pending');
  const completed = backups
    .filter((backup) => phaseOf(backup) === 'Completed')
    .sort((a, b) => time((b['status'] as Any)['completedAt']) - time((a['status'] as Any)['completedAt']));
  const failed = backups.filter((backup) => phaseOf(backup) === 'Failed').sort((a, b) => time(b.metadata.creationTimestamp) - time(a.metadata.creationTimestamp));
  const lastCompleted = completed[0];
  const lastFailed = failed[0];
  const conditions = conditionsOf(cluster);
  const scavenges = input.schedules
    .filter((schedule) => (schedule['spec'] as Any | undefined)?.['cluster']?.['name'] === name)
    .map((schedule) => {
      const scheduleStatus = (schedule['status'] ?? {}) as Any;
      const current = scheduleStatus['currentCycle'] as Any | undefined;
      const last = ((scheduleStatus['history'] ?? []) as Any[])[0];
      return {
        schedule: schedule.metadata.name ?? '',
        state: String(scheduleStatus['state'] ?? 'Unknown'),
        ...(scheduleStatus['nextScheduleTime'] === undefined ? {} : { next: String(scheduleStatus['nextScheduleTime']) }),
        ...(current === undefined ? {} : { current: { id: String(current['id']), nodes: ((current['nodes'] ?? []) as Any[]).map((node) => ({ pod: String(node['pod']), result: String(node['result'] ?? 'Pending') })) } }),
        ...(last === undefined ? {} : { last: { result: String(last['result']), ...(last['finishedAt'] === undefined ? {} : { finishedAt: String(last['finishedAt']) }) } }),
      };
    });
  const warnings = input.events
    .filter((event) => (event['type'] ?? (event as Any)['type']) === 'Warning')
    .map((event) => {
      const e = event as Any;
      const regarding = (e['regarding'] ?? e['involvedObject'] ?? {}) as Any;
      const at = String(e['series']?.['lastObservedTime'] ?? e['lastTimestamp'] ?? e['eventTime'] ?? e['deprecatedLastTimestamp'] ?? e.metadata?.creationTimestamp ?? '');
      return { at, reason: String(e['reason'] ?? ''), object: `${regarding['kind'] ?? ''}/${regarding['name'] ?? ''}`, message: String(e['note'] ?? e['message'] ?? ''), count: Number(e['series']?.['count'] ?? e['count'] ?? e['deprecatedCount'] ?? 1) };
    })
    .sort((a, b) => time(b.at) - time(a.at))
    .slice(0, 10);
  const desired = Number(spec['replicas'] ?? 3) + Number(spec['readOnlyReplicas'] ?? 0);
  const phase = String(status['phase'] ?? 'Unknown');
  return {
    cluster: name,
    namespace: cluster.metadata.namespace ?? '',
    phase,
    replicas: Number(status['replicas'] ?? 0),
    readyReplicas: Number(status['readyReplicas'] ?? 0),
    desiredReplicas: desired,
    leader: (status['leader'] as string | undefined) ?? leaderRow?.pod,
    image: status['image'] as string | undefined,
    paused: spec['paused'] === true,
    conditions,
    nodes,
    membersObservedAt: status['membersObservedAt'] as string | undefined,
    certificates: {
      mode: String(spec['tls']?.['mode'] ?? 'SelfSigned'),
      ...(certificates['notAfter'] === undefined ? {} : { notAfter: String(certificates['notAfter']) }),
      ...(Number.isNaN(notAfterMs) ? {} : { daysLeft: Math.floor((notAfterMs - nowMs) / 86_400_000) }),
      ...(certificates['reloadedAt'] === undefined ? {} : { reloadedAt: String(certificates['reloadedAt']) }),
      ...(fingerprints.length === 0 ? {} : { fingerprint: fingerprints.join(' ') }),
    },
    operation:
      operation === undefined
        ? undefined
        : {
            kind: String(operation['kind']),
            step: String(operation['step'] ?? ''),
            startedAt: String(operation['startedAt'] ?? ''),
            ...(operation['pod'] === undefined ? {} : { pod: String(operation['pod']) }),
            ...(operation['podStep'] === undefined ? {} : { podStep: String(operation['podStep']) }),
            ...(operation['waitingFor'] === undefined ? {} : { waitingFor: String(operation['waitingFor']) }),
          },
    lastOperation: lastOperation === undefined ? undefined : { kind: String(lastOperation['kind']), result: String(lastOperation['result']), finishedAt: String(lastOperation['finishedAt']) },
    backups: {
      ...(lastCompleted === undefined
        ? {}
        : {
            lastCompleted: {
              name: lastCompleted.metadata.name ?? '',
              completedAt: (lastCompleted['status'] as Any)['completedAt'] as string | undefined,
              method: (lastCompleted['spec'] as Any)['method'] as string | undefined,
              writerCheckpoint: (lastCompleted['status'] as Any)['writerCheckpoint'] as number | undefined,
            },
          }),
      ...(lastFailed === undefined ? {} : { lastFailed: { name: lastFailed.metadata.name ?? '', message: (lastFailed['status'] as Any)['message'] as string | undefined } }),
      running: backups.filter((backup) => ['Pending', 'Running'].includes(phaseOf(backup))).map((backup) => ({ name: backup.metadata.name ?? '', phase: phaseOf(backup) })),
      total: backups.length,
    },
    scavenges,
    warnings,
    healthy: phase === 'Ready' && nodes.length > 0 && nodes.every((node) => node.ready && node.alive),
  };
}

/**
 * Seconds the node's newest event is older than the leader's newest (3 decimals); 0 when it has
 * the leader's newest event, or at least the leader's writer checkpoint.
 */
export function lagSecondsOf(leader: NewestEvent | undefined, node: NewestEvent | undefined, leaderCheckpoint: number | undefined, nodeCheckpoint: number | undefined): number | undefined {
  if (leader === undefined || node === undefined) return undefined;
  if (node.event === leader.event) return 0;
  if (leaderCheckpoint !== undefined && nodeCheckpoint !== undefined && nodeCheckpoint >= leaderCheckpoint) return 0;
  return Math.max(0, Math.round(leader.createdMs - node.createdMs)) / 1000;
}

/**
 * The newest event of a node's `GET /streams/$all/head/backward/1` Atom JSON feed (undefined:
 * an empty log or an unexpected document): its title (`<number>@<stream>`) and created time.
 */
export function newestEventOf(feed: unknown): NewestEvent | undefined {
  const entry = ((feed as Any | undefined)?.['entries'] as unknown[] | undefined)?.[0] as Any | undefined;
  if (entry === undefined || entry === null || typeof entry !== 'object') return undefined;
  const createdMs = time(entry['updated']);
  if (typeof entry['title'] !== 'string' || Number.isNaN(createdMs)) return undefined;
  return { event: entry['title'], createdMs };
}

/** replication.replicas of the leader's GET /stats (absent or malformed: none). */
export function replicaReports(stats: unknown): ReplicaReport[] {
  const replicas = (stats as Any | undefined)?.['replication']?.['replicas'];
  if (replicas === null || typeof replicas !== 'object') return [];
  return Object.entries(replicas as Record<string, Any>)
    .filter(([, value]) => value !== null && typeof value === 'object' && typeof value['lagBytes'] === 'number')
    .map(([instanceId, value]) => ({ instanceId, lagBytes: Number(value['lagBytes']), caughtUp: value['caughtUp'] === true }));
}

/** orders-0, orders-1, ..., orders-10, then orders-replica-0, ... */
function byNodeName(a: string, b: string): number {
  const key = (name: string): [number, number, string] => {
    const replica = /-replica-(\d+)$/.exec(name);
    if (replica !== null) return [1, Number(replica[1]), name];
    const voting = /-(\d+)$/.exec(name);
    return voting === null ? [2, 0, name] : [0, Number(voting[1]), name];
  };
  const [ka, kb] = [key(a), key(b)];
  return ka[0] - kb[0] || ka[1] - kb[1] || ka[2].localeCompare(kb[2]);
}

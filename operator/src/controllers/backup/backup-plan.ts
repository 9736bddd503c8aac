/**
 * PURE decisions of the Backup controller: which node to back up, which earlier backup a
 * differential one is taken against, whether the cluster may be held for a backup now, and which
 * backups ttl deletes (never the last successful one of a cluster).
 */
import { parseDurationMs } from '../../api/common.js';
import type { BackupSpec } from '../../api/backup.js';
import type { EventDBClusterStatus } from '../../api/eventdb-cluster.js';
import { clusterTurn } from '../cluster-turn.js';

export interface SourceMember {
  readonly pod: string;
  readonly role: string;
  readonly alive: boolean;
  readonly ready?: boolean;
  readonly writerCheckpoint?: number;
}

export type SourceChoice =
  | { readonly ok: true; readonly pod: string; readonly role: string; readonly writerCheckpoint?: number }
  | { readonly ok: false; readonly reason: string; readonly message: string };

const usable = (member: SourceMember): boolean => member.alive && member.ready !== false;

/**
 * spec.node: `PreferFollower` (the most caught-up follower, the leader when there is none, as in
 * a one-node cluster; `prefer`, the pod of the earlier backup a differential copy is taken
 * against, wins among equally caught-up followers), `Leader`, or a pod name.
 */
export function chooseSource(members: readonly SourceMember[], node: string, prefer?: string): SourceChoice {
  const pick = (member: SourceMember): SourceChoice => ({
    ok: true,
    pod: member.pod,
    role: member.role,
    ...(member.writerCheckpoint === undefined ? {} : { writerCheckpoint: member.writerCheckpoint }),
  });
  const leader = members.find((member) => member.role === 'Leader' && usable(member));
  if (node === 'Leader') {
    return leader === undefined ? { ok: false, reason: 'NoLeader', message: 'spec.node Leader: no node leads now' } : pick(leader);
  }
  if (node === 'PreferFollower') {
    const followers = members.filter((member) => member.role === 'Follower' && usable(member));
    if (followers.length === 0) {
      return leader === undefined ? { ok: false, reason: 'NoSourceNode', message: 'no follower or leader is alive and ready' } : pick(leader);
    }
    const best = Math.max(...followers.map((member) => member.writerCheckpoint ?? 0));
    const caughtUp = followers.filter((member) => (member.writerCheckpoint ?? 0) === best);
    return pick(caughtUp.find((member) => member.pod === prefer) ?? [...caughtUp].sort((a, b) => a.pod.localeCompare(b.pod))[0]!);
  }
  const named = members.find((member) => member.pod === node);
  if (named === undefined) return { ok: false, reason: 'SourceNodeNotFound', message: `spec.node ${node}: no such pod in the cluster` };
  if (!usable(named)) return { ok: false, reason: 'SourceNodeNotReady', message: `spec.node ${node}: the node is not alive and ready` };
  return pick(named);
}

/** When the last completed and the last failed Backup of a cluster finished (ms since the epoch), for the metrics. */
export function lastBackupTimes(views: readonly BackupView[], cluster: string): { readonly lastSuccessMs?: number; readonly lastFailureMs?: number } {
  let lastSuccessMs: number | undefined;
  let lastFailureMs: number | undefined;
  for (const view of views) {
    if (view.cluster !== cluster || view.completedAt === undefined) continue;
    const atMs = Date.parse(view.completedAt);
    if (Number.isNaN(atMs)) continue;
    if (view.phase === 'Completed') lastSuccessMs = Math.max(lastSuccessMs ?? atMs, atMs);
    if (view.phase === 'Failed') lastFailureMs = Math.max(lastFailureMs ?? atMs, atMs);
  }
  return { ...(lastSuccessMs === undefined ? {} : { lastSuccessMs }), ...(lastFailureMs === undefined ? {} : { lastFailureMs }) };
}

export interface BackupView {
  readonly name: string;
  readonly cluster: string;
  readonly method: 'VolumeSnapshot' | 'FileCopy';
  readonly claimName?: string;
  readonly phase?: string;
  readonly sourcePod?: string;
  readonly path?: string;
  readonly completedAt?: string;
  readonly ttl?: string;
  readonly creationTimestamp?: string;
}

export function backupView(object: { metadata: { name?: string; creationTimestamp?: string }; spec?: unknown; status?: unknown }): BackupView {
  const spec = (object.spec ?? {}) as Partial<BackupSpec>;
  const status = (object.status ?? {}) as { phase?: string; sourcePod?: string; path?: string; completedAt?: string };
  return {
    name: object.metadata.name ?? '',
    cluster: spec.cluster?.name ?? '',
    method: spec.method ?? 'VolumeSnapshot',
    ...(spec.fileCopy?.claimName === undefined ? {} : { claimName: spec.fileCopy.claimName }),
    ...(status.phase === undefined ? {} : { phase: status.phase }),
    ...(status.sourcePod === undefined ? {} : { sourcePod: status.sourcePod }),
    ...(status.path === undefined ? {} : { path: status.path }),
    ...(status.completedAt === undefined ? {} : { completedAt: status.completedAt }),
    ...(spec.ttl === undefined ? {} : { ttl: spec.ttl }),
    ...(object.metadata.creationTimestamp === undefined ? {} : { creationTimestamp: object.metadata.creationTimestamp }),
  };
}

const byCompletion = (a: BackupView, b: BackupView): number =>
  Date.parse(b.completedAt ?? '') - Date.parse(a.completedAt ?? '') || b.name.localeCompare(a.name);

/** The newest Completed backup of `cluster`: ttl never deletes it. */
export function lastGoodBackup(backups: readonly BackupView[], cluster: string): string | undefined {
  return backups.filter((backup) => backup.cluster === cluster && backup.phase === 'Completed').sort(byCompletion)[0]?.name;
}

/** The newest Completed file copy of `cluster` into `claimName`: what a differential one builds on. */
export function previousFileCopy(backups: readonly BackupView[], cluster: string, claimName: string): BackupView | undefined {
  return backups
    .filter((backup) => backup.cluster === cluster && backup.method === 'FileCopy' && backup.claimName === claimName && backup.phase === 'Completed' && backup.path !== undefined)
    .sort(byCompletion)[0];
}

export type RetentionDecision =
  | { readonly kind: 'keep' }
  | { readonly kind: 'keep-until'; readonly atMs: number }
  | { readonly kind: 'keep-last-good'; readonly expiredAtMs: number }
  | { readonly kind: 'delete'; readonly expiredAtMs: number };

/**
 * ttl counts from completion (a Failed backup: from its creation). An expired backup is deleted
 * unless it is the last Completed backup of its cluster.
 */
export function retention(backup: BackupView, all: readonly BackupView[], nowMs: number): RetentionDecision {
  if (backup.ttl === undefined) return { kind: 'keep' };
  if (backup.phase !== 'Completed' && backup.phase !== 'Failed') return { kind: 'keep' };
  const from = Date.parse((backup.phase === 'Completed' ? backup.completedAt : undefined) ?? backup.creationTimestamp ?? '');
  if (Number.isNaN(from)) return { kind: 'keep' };
  const expiredAtMs = from + parseDurationMs(backup.ttl);
  if (nowMs < expiredAtMs) return { kind: 'keep-until', atMs: expiredAtMs };
  if (backup.phase === 'Completed' && lastGoodBackup(all, backup.cluster) === backup.name) return { kind: 'keep-last-good', expiredAtMs };
  return { kind: 'delete', expiredAtMs };
}

/**
 * Whether a backup may take the cluster now: no other backup holds it, and clusterTurn (no
 * rolling update, scale or scavenge cycle in progress; a certificate rotation does not count;
 * every node ready, so stopping one follower for a snapshot never leaves fewer than a quorum).
 */
export function clusterAvailability(
  status: EventDBClusterStatus | undefined,
  holder: string | undefined,
  backup: string,
  desiredReplicas?: number,
): { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly message: string } {
  if (holder !== undefined && holder !== backup) {
    return { ok: false, reason: 'WaitingForOtherBackup', message: `backup ${holder} holds the cluster; one backup at a time` };
  }
  const operation = status?.operation;
  if (operation?.kind === 'Backup' && operation.id === backup) return { ok: true };
  if (holder === backup && operation === undefined) return { ok: true };
  const turn = clusterTurn(status, desiredReplicas);
  if (turn.ok) return turn;
  return turn.reason === 'WaitingForOperation'
    ? { ok: false, reason: turn.reason, message: `${turn.why}; the backup starts after it` }
    : { ok: false, reason: turn.reason, message: `${turn.why}; the backup starts when it is` };
}

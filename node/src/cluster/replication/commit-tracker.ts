/**
 * A leader's commit position: the highest log position durable on a quorum of voting members
 * (cluster-size/2 + 1), the leader counted with its own durable position. Replicas count only
 * once caught up, read-only replicas never. Nothing of a new epoch is committed before its epoch
 * record is: a write of an earlier epoch becomes visible only together with the new leader's own
 * epoch record (so no leader makes visible what a later leader could still overwrite). Pure.
 */
export interface ReplicaProgress {
  /** Durable position the replica acknowledged. */
  readonly position: number;
  /** Counts for the quorum: a voting member that has caught up at least once. */
  readonly votes: boolean;
}

/** The highest position a quorum holds, or -1 when fewer voting members than a quorum report. */
export function quorumPosition(leaderDurable: number, replicas: Iterable<ReplicaProgress>, clusterSize: number): number {
  const positions = [leaderDurable];
  for (const r of replicas) if (r.votes) positions.push(r.position);
  const quorum = Math.floor(clusterSize / 2) + 1;
  if (positions.length < quorum) return -1;
  positions.sort((a, b) => b - a);
  return positions[quorum - 1]!;
}

/**
 * The position the leader may apply up to: the quorum's position once it covers the end of this
 * leader's epoch record, else nothing new (`current`).
 */
export function commitPosition(quorum: number, epochRecordEnd: number, current: number): number {
  if (quorum < epochRecordEnd) return current;
  return Math.max(current, quorum);
}

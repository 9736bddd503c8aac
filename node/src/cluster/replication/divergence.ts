/**
 * Where a replica's log and its leader's agree, from their epoch chains: the replica subscribes
 * with its writer checkpoint and its newest epochs; the leader finds the newest of them in its own
 * chain and the epoch it began after that one. Everything the replica has past that next epoch's
 * record was written by a leader whose term this leader's log does not continue: the replica
 * truncates it. Pure.
 */
export interface EpochRef {
  readonly epochNumber: number;
  readonly epochId: string;
  readonly epochPosition: number;
}

export interface SubscriptionPlan {
  /** Where replication starts. */
  readonly position: number;
  /** The replica must first cut its log back to `position` (it has data the leader's log does not continue). */
  readonly truncate: boolean;
}

/**
 * @param leaderEpochs the leader's epochs, newest first (all of them, or enough to cover the replica's)
 * @param replicaEpochs the replica's newest epochs, newest first
 */
export function planSubscription(
  leaderEpochs: readonly EpochRef[],
  leaderDurable: number,
  replicaEpochs: readonly EpochRef[],
  replicaWriter: number,
): SubscriptionPlan {
  if (replicaWriter === 0) return { position: 0, truncate: false };
  const same = (a: EpochRef, b: EpochRef): boolean =>
    a.epochNumber === b.epochNumber && a.epochId === b.epochId && a.epochPosition === b.epochPosition;
  for (const theirs of replicaEpochs) {
    const index = leaderEpochs.findIndex((ours) => same(ours, theirs));
    if (index < 0) continue;
    // leaderEpochs is newest first: the epoch this leader's log began after the common one.
    const next = index > 0 ? leaderEpochs[index - 1] : undefined;
    const agreedUpTo = next === undefined ? leaderDurable : next.epochPosition;
    const position = Math.min(replicaWriter, agreedUpTo);
    return { position, truncate: position < replicaWriter };
  }
  // No epoch in common: nothing of the replica's log can be trusted to agree.
  return { position: 0, truncate: true };
}

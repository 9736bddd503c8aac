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
  for (const [replicaIndex, theirs] of replicaEpochs.entries()) {
    const index = leaderEpochs.findIndex((ours) => same(ours, theirs));
    if (index < 0) continue;
    // Both lists are newest first. The logs agree up to where either began its next epoch after
    // the common one: the leader's (what follows in the replica was not continued), and the
    // replica's own (an epoch the leader never saw: what the replica has from there is not the
    // leader's, whatever its length).
    const leaderNext = index > 0 ? leaderEpochs[index - 1] : undefined;
    const replicaNext = replicaIndex > 0 ? replicaEpochs[replicaIndex - 1] : undefined;
    const position = Math.min(
      replicaWriter,
      leaderNext === undefined ? leaderDurable : leaderNext.epochPosition,
      replicaNext === undefined ? Number.POSITIVE_INFINITY : replicaNext.epochPosition,
    );
    return { position, truncate: position < replicaWriter };
  }
  // No epoch in common: nothing of the replica's log can be trusted to agree.
  return { position: 0, truncate: true };
}

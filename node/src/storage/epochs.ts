/**
 * Epochs: each leadership term starts with an epoch record in the log (a system record whose
 * data is JSON), written by the new leader at its writer position. Every epoch record names the
 * previous one's position, so the chain can be walked back from epoch.chk. Replication compares
 * two nodes' chains to find where their logs agree (cluster/replication/divergence.ts).
 * Pure: decoding and the walk take a record reader.
 */
export interface EpochRecord {
  readonly epochNumber: number;
  /** Unique per epoch: two records with the same number but different ids are different terms. */
  readonly epochId: string;
  /** Log position of the epoch record itself. */
  readonly epochPosition: number;
  /** Position of the previous epoch record, -1 for the first. */
  readonly prevEpochPosition: number;
  /** The node that led this epoch ('' for a node running alone before clustering existed). */
  readonly leaderInstanceId: string;
  readonly timeStamp: string;
}

/** The record's data as written; tolerant of records written before ids existed. */
export function decodeEpoch(data: Uint8Array, positionOfRecord: number): EpochRecord | undefined {
  let parsed: Record<string, unknown>;
  try {
    const value: unknown = JSON.parse(Buffer.from(data).toString('utf8'));
    if (typeof value !== 'object' || value === null) return undefined;
    parsed = value as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const epochNumber = parsed['epochNumber'];
  if (typeof epochNumber !== 'number' || !Number.isSafeInteger(epochNumber)) return undefined;
  const prev = parsed['prevEpochPosition'];
  return {
    epochNumber,
    epochId: typeof parsed['epochId'] === 'string' ? parsed['epochId'] : `legacy-${epochNumber}-${positionOfRecord}`,
    epochPosition: positionOfRecord,
    prevEpochPosition: typeof prev === 'number' && prev < positionOfRecord ? prev : -1,
    leaderInstanceId: typeof parsed['leaderInstanceId'] === 'string' ? parsed['leaderInstanceId'] : '',
    timeStamp: typeof parsed['timeStamp'] === 'string' ? parsed['timeStamp'] : '',
  };
}

/** The record's data (its own position is where it lies in the log, not in the data). */
export function encodeEpoch(epoch: Omit<EpochRecord, 'epochPosition'>): Buffer {
  return Buffer.from(JSON.stringify({
    epochNumber: epoch.epochNumber,
    epochId: epoch.epochId,
    prevEpochPosition: epoch.prevEpochPosition,
    leaderInstanceId: epoch.leaderInstanceId,
    timeStamp: epoch.timeStamp,
  }));
}

/**
 * The epochs from the one at `lastPosition` back, newest first, at most `maxCount`. `readAt`
 * returns the epoch whose record is at a position (undefined when there is none: the walk
 * stops there).
 */
export function walkEpochs(
  lastPosition: number,
  readAt: (position: number) => EpochRecord | undefined,
  maxCount: number,
): EpochRecord[] {
  const out: EpochRecord[] = [];
  let position = lastPosition;
  while (position >= 0 && out.length < maxCount) {
    const epoch = readAt(position);
    if (epoch === undefined) break;
    out.push(epoch);
    if (epoch.prevEpochPosition >= position) break;
    position = epoch.prevEpochPosition;
  }
  return out;
}

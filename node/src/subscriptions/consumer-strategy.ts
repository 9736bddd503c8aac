/**
 * Consumer strategies: which consumer of a group a message may go to. Pure.
 *
 * The original pushes messages to connected clients; over HTTP, consumers pull. A strategy here
 * answers, for a message and the consumer pulling now, whether that consumer may take it; a
 * message it may not take stays buffered for the consumer that may:
 *
 * - RoundRobin: any consumer with room takes the next message (pulls spread the work).
 * - DispatchToSingle: the earliest-joined consumer with room takes everything; the next one only
 *   gets messages while the first is full (or gone).
 * - Pinned: the message's source stream (the link's target stream for resolved links, the stream
 *   named in an unresolved link's data) is hashed into one of 1024 buckets; each bucket belongs
 *   to one consumer, assigned on first use to the consumer with the fewest buckets, and
 *   rebalanced when consumers join (buckets without messages in flight move first) or leave.
 * - PinnedByCorrelation: the same, keyed on `$correlationId` in the event's metadata when it is
 *   a string, else on the source stream.
 */
import { CORRELATION_ID_KEY, LINK_EVENT_TYPE, parseLinkData } from './names.js';
import type { ConsumerStrategyName } from './settings.js';
import type { ResolvedEvent } from './resolved-event.js';

export const PINNED_BUCKET_COUNT = 1024;

/** What a strategy sees of a consumer. */
export interface ConsumerSlots {
  readonly id: string;
  readonly inFlight: number;
  readonly maxInFlight: number;
}

export interface ConsumerStrategy {
  readonly name: ConsumerStrategyName;
  added(consumerId: string): void;
  removed(consumerId: string): void;
  /**
   * May `puller` take `event` now? `consumers` are the connected consumers in the order they
   * joined; the puller is among them and has room.
   */
  mayTake(event: ResolvedEvent, puller: string, consumers: readonly ConsumerSlots[]): boolean;
  /** A message went to `consumerId`. */
  delivered(event: ResolvedEvent, consumerId: string): void;
  /** A message that went to `consumerId` was answered, timed out, or taken back. */
  settled(event: ResolvedEvent, consumerId: string): void;
}

export function createConsumerStrategy(name: ConsumerStrategyName): ConsumerStrategy {
  switch (name) {
    case 'RoundRobin':
      return new RoundRobin();
    case 'DispatchToSingle':
      return new DispatchToSingle();
    case 'Pinned':
      return new Pinned(name, sourceStreamOf);
    case 'PinnedByCorrelation':
      return new Pinned(name, (event) => correlationIdOf(event) ?? sourceStreamOf(event));
  }
}

class RoundRobin implements ConsumerStrategy {
  readonly name = 'RoundRobin';
  added(): void {}
  removed(): void {}
  mayTake(): boolean {
    return true;
  }
  delivered(): void {}
  settled(): void {}
}

class DispatchToSingle implements ConsumerStrategy {
  readonly name = 'DispatchToSingle';
  added(): void {}
  removed(): void {}
  mayTake(_event: ResolvedEvent, puller: string, consumers: readonly ConsumerSlots[]): boolean {
    const single = consumers.find((consumer) => consumer.inFlight < consumer.maxInFlight);
    return single?.id === puller;
  }
  delivered(): void {}
  settled(): void {}
}

interface Bucket {
  owner: string | undefined;
  inFlight: number;
}

class Pinned implements ConsumerStrategy {
  private readonly buckets: Bucket[] = Array.from({ length: PINNED_BUCKET_COUNT }, () => ({
    owner: undefined,
    inFlight: 0,
  }));
  /** Consumers in join order with the number of buckets each owns. */
  private readonly owned = new Map<string, number>();

  constructor(
    readonly name: ConsumerStrategyName,
    private readonly keyOf: (event: ResolvedEvent) => string,
  ) {}

  added(consumerId: string): void {
    if (this.owned.has(consumerId)) return;
    this.owned.set(consumerId, 0);
    // Move buckets from consumers above their fair share (ceil(assigned / consumers)) to the
    // newcomer, those without messages in flight first.
    const assigned = [...this.owned.values()].reduce((sum, n) => sum + n, 0);
    const fairShare = Math.ceil(assigned / this.owned.size);
    for (const [owner, count] of this.owned) {
      if (owner === consumerId || count <= fairShare) continue;
      const movable = this.buckets
        .map((bucket, index) => ({ bucket, index }))
        .filter(({ bucket }) => bucket.owner === owner)
        .sort((a, b) => a.bucket.inFlight - b.bucket.inFlight)
        .slice(0, count - fairShare);
      for (const { index } of movable) this.assign(index, consumerId);
    }
  }

  removed(consumerId: string): void {
    if (!this.owned.delete(consumerId)) return;
    for (const bucket of this.buckets) {
      if (bucket.owner !== consumerId) continue;
      bucket.owner = undefined;
      bucket.inFlight = 0;
    }
  }

  mayTake(event: ResolvedEvent, puller: string): boolean {
    const index = bucketOf(this.keyOf(event));
    const bucket = this.buckets[index];
    if (bucket === undefined) return false;
    if (bucket.owner === undefined || !this.owned.has(bucket.owner)) {
      this.assign(index, this.leastLoaded() ?? puller);
    }
    return bucket.owner === puller;
  }

  delivered(event: ResolvedEvent, consumerId: string): void {
    const bucket = this.buckets[bucketOf(this.keyOf(event))];
    if (bucket !== undefined && bucket.owner === consumerId) bucket.inFlight += 1;
  }

  settled(event: ResolvedEvent, consumerId: string): void {
    const bucket = this.buckets[bucketOf(this.keyOf(event))];
    if (bucket !== undefined && bucket.owner === consumerId && bucket.inFlight > 0)
      bucket.inFlight -= 1;
  }

  /** Owner of each bucket (for tests and statistics). */
  ownerOf(key: string): string | undefined {
    return this.buckets[bucketOf(key)]?.owner;
  }

  private leastLoaded(): string | undefined {
    let best: string | undefined;
    let bestCount = Number.POSITIVE_INFINITY;
    for (const [id, count] of this.owned) {
      if (count < bestCount) {
        best = id;
        bestCount = count;
      }
    }
    return best;
  }

  private assign(index: number, consumerId: string): void {
    const bucket = this.buckets[index];
    if (bucket === undefined) return;
    if (bucket.owner !== undefined && this.owned.has(bucket.owner)) {
      this.owned.set(bucket.owner, (this.owned.get(bucket.owner) ?? 1) - 1);
    }
    bucket.owner = consumerId;
    bucket.inFlight = 0;
    this.owned.set(consumerId, (this.owned.get(consumerId) ?? 0) + 1);
  }
}

/** The stream a message's event comes from: a resolved link's target, or an unresolved link's. */
export function sourceStreamOf(resolved: ResolvedEvent): string {
  const record = resolved.event ?? resolved.link;
  if (record === undefined) return '';
  if (record.eventType === LINK_EVENT_TYPE) {
    return parseLinkData(record.data.toString('utf8'))?.stream ?? record.stream;
  }
  return record.stream;
}

/** `$correlationId` of the event's metadata when it is a JSON string. */
export function correlationIdOf(resolved: ResolvedEvent): string | undefined {
  const record = resolved.event ?? resolved.link;
  if (record === undefined || record.metadata.byteLength === 0) return undefined;
  try {
    const metadata: unknown = JSON.parse(record.metadata.toString('utf8'));
    if (typeof metadata !== 'object' || metadata === null) return undefined;
    const value = (metadata as Record<string, unknown>)[CORRELATION_ID_KEY];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** FNV-1a over the key's UTF-16 code units, reduced to a bucket. */
export function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % PINNED_BUCKET_COUNT;
}

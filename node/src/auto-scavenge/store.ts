/**
 * Persistence of the auto-scavenge state: the events of state.ts in two system streams, written
 * with the expected version the store last saw (optimistic concurrency: a conflict means another
 * leader wrote, and the caller reloads). `load` rebuilds the state as a new leader does: the last
 * configuration, then `$auto-scavenges` read backwards down to the last completed cluster
 * scavenge, folded forwards.
 */
import { randomUUID } from 'node:crypto';
import type { EventDb, RecordedEvent } from '../storage/event-db-types.js';
import {
  applyEvent,
  AUTO_SCAVENGE_EVENT_TYPES,
  AUTO_SCAVENGES_STREAM,
  CONFIGURATION_STREAM,
  initialState,
  type AutoScavengeEvent,
  type AutoScavengeState,
} from './state.js';

export type AutoScavengeStoreDb = Pick<EventDb, 'append' | 'readStream'>;

const PAGE_SIZE = 100;
const NO_STREAM = -1;

export type AppendOutcome = 'written' | 'conflict';

function decode(event: RecordedEvent): AutoScavengeEvent | undefined {
  if (!AUTO_SCAVENGE_EVENT_TYPES.has(event.eventType)) return undefined;
  try {
    return { type: event.eventType, data: JSON.parse(event.data.toString('utf8')) } as AutoScavengeEvent;
  } catch {
    return undefined;
  }
}

export class AutoScavengeStore {
  private configurationVersion = NO_STREAM;
  private scavengesVersion = NO_STREAM;

  constructor(private readonly db: AutoScavengeStoreDb) {}

  async load(leaderStartMs: number): Promise<AutoScavengeState> {
    let state = initialState(leaderStartMs);
    const configuration = await this.db.readStream(CONFIGURATION_STREAM, -1, 1, 'backward');
    this.configurationVersion = configuration.kind === 'success' ? configuration.lastEventNumber : NO_STREAM;
    const lastConfiguration = configuration.kind === 'success' ? configuration.events[0] : undefined;
    const decodedConfiguration = lastConfiguration === undefined ? undefined : decode(lastConfiguration);
    if (decodedConfiguration !== undefined) state = applyEvent(state, decodedConfiguration);

    const newestFirst: AutoScavengeEvent[] = [];
    let from = -1;
    this.scavengesVersion = NO_STREAM;
    for (;;) {
      const page = await this.db.readStream(AUTO_SCAVENGES_STREAM, from, PAGE_SIZE, 'backward');
      if (page.kind !== 'success') break;
      if (from === -1) this.scavengesVersion = page.lastEventNumber;
      let reachedCompletion = false;
      for (const recorded of page.events) {
        const event = decode(recorded);
        if (event === undefined) continue;
        newestFirst.push(event);
        if (event.type === '$cluster-scavenge-completed') {
          reachedCompletion = true;
          break;
        }
      }
      if (reachedCompletion || page.isEndOfStream || page.nextEventNumber < 0) break;
      from = page.nextEventNumber;
    }
    for (const event of newestFirst.reverse()) state = applyEvent(state, event);
    return state;
  }

  async append(event: AutoScavengeEvent): Promise<AppendOutcome> {
    const configuration = event.type === '$configuration-updated';
    const stream = configuration ? CONFIGURATION_STREAM : AUTO_SCAVENGES_STREAM;
    const expected = configuration ? this.configurationVersion : this.scavengesVersion;
    const result = await this.db.append(stream, expected, [{
      eventId: randomUUID(),
      eventType: event.type,
      data: Buffer.from(JSON.stringify(event.data), 'utf8'),
      metadata: new Uint8Array(0),
      isJson: true,
    }]);
    if (result.kind !== 'success') return 'conflict';
    if (configuration) this.configurationVersion = result.lastEventNumber;
    else this.scavengesVersion = result.lastEventNumber;
    return 'written';
  }
}

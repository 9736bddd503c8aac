/**
 * A read against one index source (memtable or table): the entries of one hash strictly below a
 * cursor (eventNumber, logPosition) in descending order, down to a minimum event number, at most
 * `limit` of them. Every source answers it synchronously; the stream index merges the answers.
 */

import type { IndexEntry } from './stream-index-port.js';
import type { HashKey } from './index-entry-codec.js';

export interface RangeQuery {
  readonly streamHash: bigint;
  readonly key: HashKey;
  /** Exclusive cursor: only entries with (eventNumber, logPosition) below it are returned. */
  readonly beforeEventNumber: number;
  readonly beforeLogPosition: number;
  readonly minEventNumber: number;
  readonly limit: number;
}

export interface IndexSource {
  /** Appends matching entries to `out` in descending (eventNumber, logPosition) order. */
  collect(query: RangeQuery, out: IndexEntry[]): void;
}

/** Descending order by (eventNumber, logPosition), as the port returns entries. */
export function compareEntriesDescending(a: IndexEntry, b: IndexEntry): number {
  if (a.eventNumber !== b.eventNumber) return b.eventNumber - a.eventNumber;
  return b.logPosition - a.logPosition;
}

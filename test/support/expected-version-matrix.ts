/**
 * Append outcomes by stream state and expected version, after EventStoreDB's
 * IndexWriter.CheckCommit: 201 with the first new event number (`result`), 400 Wrong expected
 * EventNumber with the current version (`result`), or 410 Stream deleted. Streams in the
 * existing and deleted states hold events 0 and 1 before deletion.
 */
export type StreamState = 'new' | 'existing' | 'soft-deleted' | 'hard-deleted';

export interface ExpectedVersionCase {
  readonly state: StreamState;
  readonly expected: string;
  readonly status: number;
  readonly result: number;
}

export const EXPECTED_VERSION_MATRIX: readonly ExpectedVersionCase[] = [
  { state: 'new', expected: '-2', status: 201, result: 0 },
  { state: 'new', expected: '-1', status: 201, result: 0 },
  { state: 'new', expected: '-4', status: 400, result: -1 },
  { state: 'new', expected: '0', status: 400, result: -1 },
  { state: 'existing', expected: '-2', status: 201, result: 2 },
  { state: 'existing', expected: '-1', status: 400, result: 1 },
  { state: 'existing', expected: '-4', status: 201, result: 2 },
  { state: 'existing', expected: '1', status: 201, result: 2 },
  { state: 'existing', expected: '0', status: 400, result: 1 },
  { state: 'existing', expected: '5', status: 400, result: 1 },
  { state: 'soft-deleted', expected: '-2', status: 201, result: 2 },
  { state: 'soft-deleted', expected: '-1', status: 201, result: 2 },
  { state: 'soft-deleted', expected: '-4', status: 410, result: 0 },
  { state: 'soft-deleted', expected: '1', status: 201, result: 2 },
  { state: 'soft-deleted', expected: '0', status: 400, result: 1 },
  { state: 'hard-deleted', expected: '-2', status: 410, result: 0 },
  { state: 'hard-deleted', expected: '-1', status: 410, result: 0 },
  { state: 'hard-deleted', expected: '-4', status: 410, result: 0 },
  { state: 'hard-deleted', expected: '1', status: 410, result: 0 },
];

/**
 * Storage constants and their asserted relationships. Every size has its unit in its name.
 */
import { assert } from '../errors.js';

export const CHUNK_HEADER_SIZE_BYTES = 128;
export const CHUNK_FOOTER_SIZE_BYTES = 128;
/** Frame around a record payload: u32 length, u32 crc32, payload, u32 length. */
export const RECORD_FRAME_OVERHEAD_BYTES = 12;
export const DEFAULT_CHUNK_SIZE_BYTES = 256 * 1024 * 1024;
/** A record's payload may not exceed this (an event's data+metadata is limited lower by config). */
export const RECORD_SIZE_BYTES_MAX = 16 * 1024 * 1024;
export const STREAM_NAME_BYTES_MAX = 4096;
export const EVENT_TYPE_BYTES_MAX = 4096;
/** Largest number of bytes the writer puts into one write+fsync (group commit batch). */
export const WRITE_BATCH_BYTES_MAX = 8 * 1024 * 1024;
/** Events one append may carry. */
export const APPEND_EVENT_COUNT_MAX = 100_000;
export const READ_COUNT_MAX = 4096;
/**
 * Most log bytes the index may trail its durable tables by before the memtable is flushed
 * early. Bounds what a restart after a crash must replay, whatever the memtable size.
 */
export const INDEX_REPLAY_BYTES_MAX = 256 * 1024 * 1024;

assert(CHUNK_HEADER_SIZE_BYTES % 8 === 0, 'header is 8-aligned');
assert(RECORD_SIZE_BYTES_MAX < DEFAULT_CHUNK_SIZE_BYTES, 'a record fits in a default chunk');
assert(WRITE_BATCH_BYTES_MAX >= 2 * 1024 * 1024, 'a batch holds at least one max-size HTTP event');

/**
 * The node-to-node replication protocol: length-prefixed frames over one TCP connection from a
 * replica to its leader. Pure codecs and a frame splitter; the sessions are in
 * leader-sessions.ts and replica-session.ts.
 *
 *   frame = u32 length (of what follows) | u8 type | payload
 *
 * replica -> leader: SUBSCRIBE (JSON), ACK (u64 durable position), FORWARD (JSON: a client write
 * to carry out on the leader).
 * leader -> replica: SUBSCRIBED / TRUNCATE / REFUSED (JSON), DATA (u64 position, u64 leader commit,
 * sealed record frames), CHUNK_COMPLETE (u64 data end), FILE_START (JSON) / FILE_DATA (bytes) /
 * FILE_END (a whole chunk file), COMMIT (u64 leader commit: also the heartbeat), FORWARDED (JSON).
 */
import { z } from 'zod';

export const FrameType = {
  Subscribe: 1,
  Subscribed: 2,
  Truncate: 3,
  Refused: 4,
  Data: 5,
  ChunkComplete: 6,
  FileStart: 7,
  FileData: 8,
  FileEnd: 9,
  Commit: 10,
  Ack: 11,
  Forward: 12,
  Forwarded: 13,
} as const;
export type FrameTypeValue = (typeof FrameType)[keyof typeof FrameType];

/** A frame larger than this is a broken peer, not data. */
export const FRAME_BYTES_MAX = 64 * 1024 * 1024;

const EpochRefSchema = z.object({ epochNumber: z.number(), epochId: z.string(), epochPosition: z.number() });

export const SubscribeSchema = z.object({
  instanceId: z.string(),
  isReadOnlyReplica: z.boolean(),
  /** The leader the replica means to follow: another node refuses. */
  leaderInstanceId: z.string(),
  writerCheckpoint: z.number(),
  chunkSizeBytes: z.number(),
  epochs: z.array(EpochRefSchema),
});
export type Subscribe = z.infer<typeof SubscribeSchema>;

export const SubscribedSchema = z.object({ position: z.number(), leaderInstanceId: z.string() });
export const TruncateSchema = z.object({ position: z.number() });
export const RefusedSchema = z.object({ reason: z.string() });
export const FileStartSchema = z.object({
  position: z.number(), chunkStartNumber: z.number(), chunkEndNumber: z.number(), sizeBytes: z.number(),
});
export type FileStart = z.infer<typeof FileStartSchema>;

const ForwardEventSchema = z.object({
  eventId: z.string(), eventType: z.string(), data: z.string(), metadata: z.string(), isJson: z.boolean(),
});
export const ForwardSchema = z.object({
  id: z.number(),
  op: z.enum(['append', 'delete', 'metadata', 'scavenge-point']),
  stream: z.string(),
  expectedVersion: z.number(),
  events: z.array(ForwardEventSchema).optional(),
  hard: z.boolean().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  eventId: z.string().optional(),
  threshold: z.number().optional(),
});
export type Forward = z.infer<typeof ForwardSchema>;

export const ForwardedSchema = z.object({
  id: z.number(),
  result: z.unknown().optional(),
  error: z.object({ code: z.string(), message: z.string(), httpStatus: z.number() }).optional(),
});
export type Forwarded = z.infer<typeof ForwardedSchema>;

export interface Frame {
  readonly type: number;
  readonly payload: Buffer;
}

export function encodeFrame(type: FrameTypeValue, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.length);
  out.writeUInt32LE(1 + payload.length, 0);
  out.writeUInt8(type, 4);
  payload.copy(out, 5);
  return out;
}

export function jsonFrame(type: FrameTypeValue, value: unknown): Buffer {
  return encodeFrame(type, Buffer.from(JSON.stringify(value)));
}

export function parseJson<T>(schema: z.ZodType<T>, payload: Buffer): T {
  return schema.parse(JSON.parse(payload.toString('utf8')));
}

function writeU64(buf: Buffer, value: number, offset: number): void {
  buf.writeUInt32LE(value % 0x1_0000_0000, offset);
  buf.writeUInt32LE(Math.floor(value / 0x1_0000_0000), offset + 4);
}

export function readU64(buf: Buffer, offset: number): number {
  return buf.readUInt32LE(offset) + buf.readUInt32LE(offset + 4) * 0x1_0000_0000;
}

export function positionFrame(type: FrameTypeValue, position: number): Buffer {
  const payload = Buffer.allocUnsafe(8);
  writeU64(payload, position, 0);
  return encodeFrame(type, payload);
}

/** DATA: the frame header and position fields, and the record bytes as a second buffer (no copy). */
export function dataFrame(position: number, leaderCommit: number, bytes: Buffer): Buffer[] {
  const head = Buffer.allocUnsafe(5 + 16);
  head.writeUInt32LE(1 + 16 + bytes.length, 0);
  head.writeUInt8(FrameType.Data, 4);
  writeU64(head, position, 5);
  writeU64(head, leaderCommit, 13);
  return [head, bytes];
}

export function decodeData(payload: Buffer): { position: number; leaderCommit: number; bytes: Buffer } {
  return { position: readU64(payload, 0), leaderCommit: readU64(payload, 8), bytes: payload.subarray(16) };
}

/** Splits a byte stream into frames; a frame over FRAME_BYTES_MAX is an error. */
export class FrameReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  push(chunk: Buffer): Frame[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.pendingBytes < 4) break;
      const head = this.peek(4);
      const length = head.readUInt32LE(0);
      if (length < 1 || length > FRAME_BYTES_MAX) throw new Error(`replication frame of ${length} bytes`);
      if (this.pendingBytes < 4 + length) break;
      const bytes = this.take(4 + length);
      frames.push({ type: bytes.readUInt8(4), payload: bytes.subarray(5) });
    }
    return frames;
  }

  private peek(n: number): Buffer {
    const first = this.pending[0]!;
    return first.length >= n ? first : Buffer.concat(this.pending).subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    const taken = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    return taken;
  }
}

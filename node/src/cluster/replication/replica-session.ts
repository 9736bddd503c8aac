/**
 * A replica's side of replication: one TCP connection to the leader's replication endpoint. It
 * subscribes with its writer checkpoint and newest epochs, then writes what the leader streams
 * (ReplicaWriter), acknowledges its durable position after each piece, and applies up to the
 * leader's commit position. The same connection carries writes forwarded to the leader.
 *
 * Frames are handled one at a time, in order. The session reports how it ended (`onEnd`): the
 * leader asked for a truncation, refused, or the connection broke; the cluster node decides
 * what follows.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { ClusterStorage } from '../../storage/event-db.js';
import { peerLookup } from '../../platform/peer-lookup.js';
import {
  FileStartSchema, ForwardedSchema, FrameReader, FrameType, RefusedSchema, SubscribedSchema, TruncateSchema,
  decodeData, jsonFrame, parseJson, positionFrame, readU64, type FileStart, type Forward, type Forwarded,
} from './protocol.js';

export type ReplicaSessionEnd =
  | { readonly kind: 'truncate'; readonly position: number }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'broken'; readonly reason: string }
  /** A planned reset (TLS connection-reset interval): reconnect at once. */
  | { readonly kind: 'reset'; readonly reason: string };

/** How long a reset link may wait for the leader's answers to writes forwarded on it. */
const RESET_DRAIN_MS = 5_000;

export interface ReplicaSessionOptions {
  readonly log: Logger;
  readonly host: string;
  readonly port: number;
  readonly instanceId: string;
  readonly leaderInstanceId: string;
  readonly isReadOnlyReplica: boolean;
  readonly chunkSizeBytes: number;
  readonly storage: ClusterStorage;
  /** Where a whole chunk file is written before it is installed (the data directory); undefined: in memory. */
  readonly tempDirectory: string | undefined;
  /** Installs a chunk file written to `tempName` in tempDirectory (or given as bytes with --mem-db). */
  readonly installChunk: (file: { tempName?: string; bytes?: Buffer }) => Promise<void>;
  readonly heartbeatMs: number;
  readonly connectTimeoutMs: number;
  /**
   * Opens the connection to the leader (TLS); default plain TCP. `onExpire` is called when the
   * transport wants the link re-established (connection-reset interval): the session ends once
   * the writes forwarded on it are answered, and the node reconnects at once.
   */
  readonly connect?: (host: string, port: number, onExpire: () => void) => net.Socket;
  readonly onSubscribed: () => void;
  /** The leader's durable position as last reported, and ours: catching up until they meet. */
  readonly onProgress: (local: number, leaderDurable: number) => void;
  readonly onEnd: (end: ReplicaSessionEnd) => void;
  /**
   * The highest position this node may acknowledge: while it takes part in an election, its log
   * end when the election began (what it tells the voters stays an upper bound of what it helped
   * the old leader commit); otherwise unlimited (Infinity). Acknowledgements go on at that cap, so
   * the leader keeps the session.
   */
  readonly acknowledgeLimit: () => number;
}

interface FileInProgress {
  readonly start: FileStart;
  readonly tempName: string | undefined;
  readonly fd: number | undefined;
  readonly pieces: Buffer[];
  written: number;
}

export class ReplicaSession {
  private readonly socket: net.Socket;
  private readonly reader = new FrameReader();
  private chain: Promise<void> = Promise.resolve();
  private ended = false;
  private subscribed = false;
  private file: FileInProgress | undefined;
  private leaderDurable = 0;
  private lastHeardMs = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  private nextForwardId = 1;
  private readonly forwards = new Map<number, { resolve: (r: Forwarded) => void; reject: (e: Error) => void }>();

  constructor(private readonly options: ReplicaSessionOptions) {
    const { host, port } = options;
    this.socket = options.connect?.(host, port, () => this.retire()) ?? net.connect({ host, port, lookup: peerLookup().lookup });
    this.socket.setNoDelay(true);
    this.socket.setTimeout(options.connectTimeoutMs, () => {
      if (!this.subscribed) this.end({ kind: 'broken', reason: `no answer from the leader at ${host}:${port}` });
    });
    // Over TLS, subscribe once the peers have authenticated each other.
    this.socket.once(this.socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => this.subscribe());
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // After the frames already received: a TRUNCATE is followed by the leader closing.
    this.socket.on('error', (err) => { this.chain = this.chain.then(() => this.end({ kind: 'broken', reason: err.message })); });
    this.socket.on('close', () => { this.chain = this.chain.then(() => this.end({ kind: 'broken', reason: 'connection closed' })); });
    this.heartbeat = setInterval(() => this.tick(), options.heartbeatMs);
    this.heartbeat.unref();
  }

  get isSubscribed(): boolean {
    return this.subscribed && !this.ended;
  }

  /** Milliseconds since the leader last sent anything (data, commit positions, heartbeats). */
  get silentMs(): number {
    return Date.now() - this.lastHeardMs;
  }

  /** Sends a write to the leader; resolves with its answer. */
  forward(request: Omit<Forward, 'id'>): Promise<Forwarded> {
    if (!this.isSubscribed) return Promise.reject(new Error('not connected to the leader'));
    const id = this.nextForwardId++;
    return new Promise<Forwarded>((resolve, reject) => {
      this.forwards.set(id, { resolve, reject });
      this.socket.write(jsonFrame(FrameType.Forward, { ...request, id }));
    });
  }

  close(): void {
    this.end({ kind: 'broken', reason: 'closed by this node' });
  }

  private retiring = false;
  private retireTimer: NodeJS.Timeout | undefined;

  /**
   * A planned reset: ends the session once no forwarded write waits for its answer (at most
   * RESET_DRAIN_MS), so that a reset does not fail a client's write.
   */
  private retire(): void {
    if (this.ended || this.retiring) return;
    this.retiring = true;
    if (this.forwards.size === 0) {
      this.end({ kind: 'reset', reason: 'the connection-reset interval has passed' });
      return;
    }
    this.retireTimer = setTimeout(
      () => this.end({ kind: 'reset', reason: `the connection-reset interval has passed (${this.forwards.size} forwarded writes unanswered after ${RESET_DRAIN_MS} ms)` }),
      RESET_DRAIN_MS,
    );
  }

  private end(end: ReplicaSessionEnd): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.retireTimer);
    this.socket.destroy();
    this.discardFile();
    for (const f of this.forwards.values()) f.reject(new Error(`the connection to the leader ended: ${end.kind === 'broken' || end.kind === 'reset' ? end.reason : end.kind}`));
    this.forwards.clear();
    this.options.onEnd(end);
  }

  private tick(): void {
    if (this.ended || !this.subscribed) return;
    const silentMs = Date.now() - this.lastHeardMs;
    if (silentMs > Math.max(5000, 4 * this.options.heartbeatMs)) {
      this.end({ kind: 'broken', reason: `no word from the leader for ${silentMs} ms` });
      return;
    }
    this.ack();
  }

  private subscribe(): void {
    const { storage } = this.options;
    const epochs = storage.epochs(64).map((e) => ({ epochNumber: e.epochNumber, epochId: e.epochId, epochPosition: e.epochPosition }));
    this.socket.write(jsonFrame(FrameType.Subscribe, {
      instanceId: this.options.instanceId, isReadOnlyReplica: this.options.isReadOnlyReplica,
      leaderInstanceId: this.options.leaderInstanceId, writerCheckpoint: storage.durablePosition,
      chunkSizeBytes: this.options.chunkSizeBytes, epochs,
    }));
  }

  /** Sends this node's durable position now (an election that held acknowledgements back ended). */
  acknowledge(): void {
    if (this.subscribed) this.ack();
  }

  private ack(): void {
    const position = Math.min(this.options.storage.durablePosition, this.options.acknowledgeLimit());
    if (!this.ended) this.socket.write(positionFrame(FrameType.Ack, position));
  }

  private onData(chunk: Buffer): void {
    this.lastHeardMs = Date.now();
    let frames;
    try {
      frames = this.reader.push(chunk);
    } catch (err: unknown) {
      this.end({ kind: 'broken', reason: err instanceof Error ? err.message : String(err) });
      return;
    }
    for (const frame of frames) {
      // Forward answers do not wait behind the log.
      if (frame.type === FrameType.Forwarded) {
        this.onForwarded(frame.payload);
        continue;
      }
      this.chain = this.chain.then(() => this.ended ? undefined : this.onFrame(frame.type, frame.payload)).catch((err: unknown) => {
        this.options.log.warn({ err }, 'replication from the leader failed');
        this.end({ kind: 'broken', reason: err instanceof Error ? err.message : String(err) });
      });
    }
  }

  private onForwarded(payload: Buffer): void {
    const answer = parseJson(ForwardedSchema, payload);
    const pending = this.forwards.get(answer.id);
    this.forwards.delete(answer.id);
    pending?.resolve(answer);
    if (this.retiring && this.forwards.size === 0) this.end({ kind: 'reset', reason: 'the connection-reset interval has passed' });
  }

  private async onFrame(type: number, payload: Buffer): Promise<void> {
    const { storage } = this.options;
    switch (type) {
      case FrameType.Subscribed: {
        const { position } = parseJson(SubscribedSchema, payload);
        if (position !== storage.durablePosition) throw new Error(`leader starts at ${position}, this log ends at ${storage.durablePosition}`);
        this.subscribed = true;
        this.socket.setTimeout(0);
        this.options.onSubscribed();
        return;
      }
      case FrameType.Truncate:
        this.end({ kind: 'truncate', position: parseJson(TruncateSchema, payload).position });
        return;
      case FrameType.Refused:
        this.end({ kind: 'refused', reason: parseJson(RefusedSchema, payload).reason });
        return;
      case FrameType.Data: {
        const { position, leaderCommit, bytes } = decodeData(payload);
        await storage.replica.append(position, bytes);
        this.ack();
        storage.replica.commitTo(leaderCommit);
        this.options.onProgress(storage.durablePosition, Math.max(this.leaderDurable, storage.durablePosition));
        return;
      }
      case FrameType.ChunkComplete:
        await storage.replica.completeChunk();
        this.ack();
        return;
      case FrameType.Commit: {
        const leaderCommit = readU64(payload, 0);
        this.leaderDurable = readU64(payload, 8);
        storage.replica.commitTo(leaderCommit);
        this.options.onProgress(storage.durablePosition, this.leaderDurable);
        return;
      }
      case FrameType.FileStart:
        this.startFile(parseJson(FileStartSchema, payload));
        return;
      case FrameType.FileData:
        this.appendFile(payload);
        return;
      case FrameType.FileEnd:
        await this.finishFile();
        this.ack();
        return;
      default:
        throw new Error(`unexpected frame type ${type} from the leader`);
    }
  }

  private startFile(start: FileStart): void {
    const dir = this.options.tempDirectory;
    if (dir === undefined) {
      this.file = { start, tempName: undefined, fd: undefined, pieces: [], written: 0 };
      return;
    }
    const tempName = `chunk-${String(start.chunkStartNumber).padStart(6, '0')}.replica.tmp`;
    const fd = fs.openSync(path.join(dir, tempName), 'w');
    this.file = { start, tempName, fd, pieces: [], written: 0 };
  }

  private appendFile(bytes: Buffer): void {
    const file = this.file;
    if (file === undefined) throw new Error('file data without a file start');
    if (file.fd === undefined) file.pieces.push(Buffer.from(bytes));
    else fs.writeSync(file.fd, bytes, 0, bytes.length, file.written);
    file.written += bytes.length;
  }

  private async finishFile(): Promise<void> {
    const file = this.file;
    if (file === undefined) throw new Error('file end without a file start');
    this.file = undefined;
    if (file.written !== file.start.sizeBytes) throw new Error(`chunk file of ${file.written} bytes, ${file.start.sizeBytes} announced`);
    if (file.fd !== undefined) {
      fs.fsyncSync(file.fd);
      fs.closeSync(file.fd);
      await this.options.installChunk({ tempName: file.tempName! });
    } else {
      await this.options.installChunk({ bytes: Buffer.concat(file.pieces) });
    }
  }

  private discardFile(): void {
    const file = this.file;
    this.file = undefined;
    if (file?.fd === undefined) return;
    try {
      fs.closeSync(file.fd);
      fs.rmSync(path.join(this.options.tempDirectory!, file.tempName!), { force: true });
    } catch {
      // Start-up removes *.tmp files anyway.
    }
  }
}

/**
 * The leader's side of replication: one session per replica connection. After the replica's
 * SUBSCRIBE, the session plans where its log and ours agree (divergence.ts) and either tells it
 * to truncate or streams our durable log from there: the bytes of unscavenged chunks as they are,
 * a chunk completion marker at each chunk's end, whole files for scavenged or merged chunks, and
 * the commit position (with every DATA frame, and as a heartbeat). The replica acknowledges its
 * durable position; those acknowledgements are what the commit tracker counts.
 *
 * At most WINDOW_BYTES are sent and not yet acknowledged, so a slow replica holds no more than
 * that in memory on either side.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ClusterStorage } from '../../storage/event-db.js';
import { planSubscription } from './divergence.js';
import type { ReplicaProgress } from './commit-tracker.js';
import {
  FrameReader, FrameType, SubscribeSchema, ForwardSchema, dataFrame, encodeFrame, jsonFrame, parseJson, positionFrame,
  readU64, type Forward, type Forwarded, type Subscribe,
} from './protocol.js';

/** Unacknowledged bytes in flight to one replica. */
const WINDOW_BYTES = 16 * 1024 * 1024;
/** Largest DATA payload and file piece. */
const PIECE_BYTES = 1024 * 1024;
/** A replica that sent nothing (acknowledgement or heartbeat) for this long is dropped. */
const SILENT_REPLICA_MS_MIN = 5000;

export interface LeaderSessionsDeps {
  readonly log: Logger;
  readonly instanceId: string;
  readonly chunkSizeBytes: number;
  /** The current storage (it changes when the engine reopens). */
  readonly storage: () => ClusterStorage;
  readonly isLeader: () => boolean;
  readonly commitPosition: () => number;
  /** A replica acknowledged (or a session ended): the quorum position may have moved. */
  readonly onProgress: () => void;
  /** Carries out a write a replica forwarded. */
  readonly forward: (request: Forward) => Promise<Forwarded>;
  readonly heartbeatMs: number;
}

export interface ReplicaStats {
  readonly instanceId: string;
  readonly isReadOnlyReplica: boolean;
  readonly remoteAddress: string;
  readonly subscriptionPosition: number;
  readonly sentPosition: number;
  readonly ackedPosition: number;
  readonly caughtUp: boolean;
  readonly connectedSinceMs: number;
}

export class LeaderSessions {
  private readonly sessions = new Set<LeaderSession>();

  constructor(private readonly deps: LeaderSessionsDeps) {}

  attach(socket: Socket): void {
    const session = new LeaderSession(socket, this.deps, () => {
      this.sessions.delete(session);
      this.deps.onProgress();
    });
    this.sessions.add(session);
  }

  /** Acknowledged positions of subscribed replicas, for the commit tracker. */
  progress(): ReplicaProgress[] {
    return [...this.sessions].filter((s) => s.subscribed).map((s) => s.progress());
  }

  stats(): ReplicaStats[] {
    return [...this.sessions].filter((s) => s.subscribed).map((s) => s.stats());
  }

  /** New durable data or a new commit position: sessions waiting for it go on. */
  wake(): void {
    for (const s of this.sessions) s.wake();
  }

  closeAll(reason: string): void {
    for (const s of this.sessions) s.close(reason);
  }
}

class LeaderSession {
  private readonly reader = new FrameReader();
  private subscription: Subscribe | undefined;
  private position = 0;
  private subscriptionPosition = 0;
  private acked = 0;
  private caughtUp = false;
  private closed = false;
  private sending = false;
  private wakeUp: (() => void) | undefined;
  private lastHeardMs = Date.now();
  private readonly connectedSinceMs = Date.now();
  private sentCommit = -1;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly log: Logger;

  constructor(private readonly socket: Socket, private readonly deps: LeaderSessionsDeps, private readonly onClose: () => void) {
    this.log = deps.log.child({ replica: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}` });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => this.finish());
    socket.on('error', (err) => this.log.debug({ err }, 'replication connection error'));
    this.heartbeat = setInterval(() => this.tick(), deps.heartbeatMs);
    this.heartbeat.unref();
  }

  get subscribed(): boolean {
    return this.subscription !== undefined && !this.closed;
  }

  progress(): ReplicaProgress {
    return { position: this.acked, votes: this.caughtUp && this.subscription?.isReadOnlyReplica === false };
  }

  stats(): ReplicaStats {
    return {
      instanceId: this.subscription?.instanceId ?? '', isReadOnlyReplica: this.subscription?.isReadOnlyReplica ?? false,
      remoteAddress: `${this.socket.remoteAddress ?? ''}:${this.socket.remotePort ?? 0}`,
      subscriptionPosition: this.subscriptionPosition, sentPosition: this.position, ackedPosition: this.acked,
      caughtUp: this.caughtUp, connectedSinceMs: this.connectedSinceMs,
    };
  }

  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  close(reason: string): void {
    if (this.closed) return;
    this.log.info({ reason, instanceId: this.subscription?.instanceId }, 'closing a replication session');
    this.socket.destroy();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.wake();
    this.onClose();
  }

  private tick(): void {
    if (this.closed) return;
    const silentMs = Date.now() - this.lastHeardMs;
    if (silentMs > Math.max(SILENT_REPLICA_MS_MIN, 4 * this.deps.heartbeatMs)) {
      this.close(`no word from the replica for ${silentMs} ms`);
      return;
    }
    if (!this.deps.isLeader() && this.subscription !== undefined) {
      this.close('this node is no longer the leader');
      return;
    }
    if (this.subscription !== undefined) this.sendCommit(true);
  }

  private onData(chunk: Buffer): void {
    this.lastHeardMs = Date.now();
    let frames;
    try {
      frames = this.reader.push(chunk);
    } catch (err: unknown) {
      this.log.warn({ err }, 'bad frame from a replica');
      this.close('bad frame');
      return;
    }
    for (const frame of frames) {
      try {
        this.onFrame(frame.type, frame.payload);
      } catch (err: unknown) {
        this.log.warn({ err }, 'bad request from a replica');
        this.close('bad request');
        return;
      }
    }
  }

  private onFrame(type: number, payload: Buffer): void {
    switch (type) {
      case FrameType.Subscribe:
        this.onSubscribe(parseJson(SubscribeSchema, payload));
        return;
      case FrameType.Ack: {
        const acked = readU64(payload, 0);
        if (acked > this.acked) this.acked = acked;
        if (!this.caughtUp && this.acked >= this.deps.storage().durablePosition) {
          this.caughtUp = true;
          this.log.info({ instanceId: this.subscription?.instanceId, position: this.acked }, 'replica caught up');
        }
        this.deps.onProgress();
        this.wake();
        return;
      }
      case FrameType.Forward: {
        const request = parseJson(ForwardSchema, payload);
        void this.deps.forward(request).then((result) => this.write(jsonFrame(FrameType.Forwarded, result)));
        return;
      }
      default:
        throw new Error(`unexpected frame type ${type} from a replica`);
    }
  }

  private refuse(reason: string): void {
    this.write(jsonFrame(FrameType.Refused, { reason }));
    this.socket.end();
  }

  private onSubscribe(request: Subscribe): void {
    if (this.subscription !== undefined) throw new Error('subscribed twice');
    if (!this.deps.isLeader()) return this.refuse('not the leader');
    if (request.leaderInstanceId !== this.deps.instanceId) return this.refuse('not the leader it means to follow');
    if (request.chunkSizeBytes !== this.deps.chunkSizeBytes) {
      return this.refuse(`chunk size ${request.chunkSizeBytes} differs from the leader's ${this.deps.chunkSizeBytes}`);
    }
    const storage = this.deps.storage();
    let plan = planSubscription(storage.epochs(Number.MAX_SAFE_INTEGER), storage.durablePosition, request.epochs, request.writerCheckpoint);
    // Inside a chunk that can only be sent whole: from its start.
    const chunk = storage.source.chunkAt(plan.position);
    if (chunk !== undefined && chunk.wholeFileOnly && plan.position > chunk.startPosition) {
      plan = { position: chunk.startPosition, truncate: true };
    }
    if (plan.truncate) {
      this.log.warn({ instanceId: request.instanceId, replicaWriter: request.writerCheckpoint, position: plan.position }, 'replica must truncate its log');
      this.write(jsonFrame(FrameType.Truncate, { position: plan.position }));
      this.socket.end();
      return;
    }
    this.subscription = request;
    this.position = plan.position;
    this.subscriptionPosition = plan.position;
    this.acked = plan.position;
    this.log.info({ instanceId: request.instanceId, position: plan.position, readOnly: request.isReadOnlyReplica }, 'replica subscribed');
    this.write(jsonFrame(FrameType.Subscribed, { position: plan.position, leaderInstanceId: this.deps.instanceId }));
    void this.stream();
  }

  private write(frame: Buffer | Buffer[]): boolean {
    if (this.closed) return false;
    if (Array.isArray(frame)) {
      let ok = true;
      for (const part of frame) ok = this.socket.write(part) && ok;
      return ok;
    }
    return this.socket.write(frame);
  }

  private sendCommit(force = false): void {
    const commit = this.deps.commitPosition();
    if (!force && commit === this.sentCommit) return;
    this.sentCommit = commit;
    const payload = Buffer.allocUnsafe(16);
    payload.writeUInt32LE(commit % 0x1_0000_0000, 0);
    payload.writeUInt32LE(Math.floor(commit / 0x1_0000_0000), 4);
    const durable = this.deps.storage().durablePosition;
    payload.writeUInt32LE(durable % 0x1_0000_0000, 8);
    payload.writeUInt32LE(Math.floor(durable / 0x1_0000_0000), 12);
    this.write(encodeFrame(FrameType.Commit, payload));
  }

  private waitForWork(): Promise<void> {
    return new Promise((resolve) => { this.wakeUp = resolve; });
  }

  private async waitForDrain(): Promise<void> {
    if (this.closed || !this.socket.writableNeedDrain) return;
    await new Promise<void>((resolve) => {
      const done = (): void => { this.socket.off('drain', done); this.socket.off('close', done); resolve(); };
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  /** The send loop: runs until the session closes. */
  private async stream(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (!this.closed) {
        if (!this.deps.isLeader()) { this.close('this node is no longer the leader'); return; }
        if (this.position - this.acked >= WINDOW_BYTES) { await this.waitForWork(); continue; }
        const progressed = this.sendNext();
        if (progressed === 'file') await this.sendFile();
        else if (progressed === 'none') {
          this.sendCommit();
          await this.waitForWork();
        }
        await this.waitForDrain();
      }
    } catch (err: unknown) {
      this.log.warn({ err }, 'replication session failed');
      this.close('send failed');
    } finally {
      this.sending = false;
    }
  }

  /** Sends the next piece of the log; says what it did. */
  private sendNext(): 'data' | 'file' | 'none' {
    const source = this.deps.storage().source;
    const chunk = source.chunkAt(this.position);
    if (chunk === undefined) return 'none';
    if (chunk.wholeFileOnly) {
      if (this.position !== chunk.startPosition) {
        // The chunk was scavenged under a replica that was copying it record by record.
        this.write(jsonFrame(FrameType.Truncate, { position: chunk.startPosition }));
        this.socket.end();
        this.close('chunk scavenged during catch-up');
        return 'none';
      }
      return 'file';
    }
    if (this.position < chunk.dataEndPosition) {
      const bytes = source.readBytes(this.position, PIECE_BYTES);
      if (bytes.length === 0) return 'none';
      const commit = this.deps.commitPosition();
      this.sentCommit = commit;
      this.write(dataFrame(this.position, commit, bytes));
      this.position += bytes.length;
      return 'data';
    }
    if (chunk.isCompleted) {
      this.write(positionFrame(FrameType.ChunkComplete, chunk.dataEndPosition));
      this.position = chunk.endPosition;
      return 'data';
    }
    return 'none';
  }

  private async sendFile(): Promise<void> {
    const source = this.deps.storage().source;
    const chunk = source.chunkAt(this.position)!;
    const snapshot = source.snapshotFile(this.position);
    if (snapshot === undefined) return;
    try {
      this.log.info({ chunkStartNumber: chunk.chunkStartNumber, chunkEndNumber: chunk.chunkEndNumber, sizeBytes: snapshot.sizeBytes }, 'sending a whole chunk file');
      this.write(jsonFrame(FrameType.FileStart, {
        position: chunk.startPosition, chunkStartNumber: chunk.chunkStartNumber, chunkEndNumber: chunk.chunkEndNumber, sizeBytes: snapshot.sizeBytes,
      }));
      for (let offset = 0; offset < snapshot.sizeBytes && !this.closed; offset += PIECE_BYTES) {
        this.write(encodeFrame(FrameType.FileData, snapshot.read(offset, PIECE_BYTES)));
        await this.waitForDrain();
      }
      this.write(encodeFrame(FrameType.FileEnd, Buffer.alloc(0)));
      this.position = chunk.endPosition;
    } finally {
      snapshot.close();
    }
  }
}

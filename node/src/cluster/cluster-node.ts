/**
 * A cluster member's shell: gossip, the replication links and sessions, the storage, the timers.
 * The pure parts decide: the node core (core/node-core.ts: role, elections, leadership, quorum,
 * resignation, the follower link's failures), the gossip view (cluster-view.ts), the commit and
 * quorum rules (commit-tracker.ts) and divergence (divergence.ts). This class feeds the core what
 * happens (gossip, election messages, timers, link and storage events) and carries its commands
 * out; the seeded simulation (test/sim) drives the same core.
 *
 * Roles:
 * - DiscoverLeader at start: gossip with the seeds (or the DNS name's addresses); a live leader in
 *   gossip is followed, otherwise, after the election timeout, an election starts.
 * - Elected: PreLeader writes its epoch record (the first record of its term) and accepts
 *   replicas; the commit position moves once a quorum holds that record; then Leader: client
 *   writes are accepted, and acknowledged once a quorum holds them and they are applied.
 * - Another node elected: PreReplica connects to it; CatchingUp once subscribed (after cutting
 *   a diverged tail, reopening the storage, if the leader says so); Follower once level with it.
 *   Read-only replicas: PreReadOnlyReplica, ReadOnlyReplica (ReadOnlyLeaderless without leader);
 *   they never vote and never count for a quorum.
 * - A leader that cannot see a quorum for a while, or that resigns (ResigningLeader), stops
 *   accepting writes and an election follows; a follower that loses its leader starts one.
 */
import net from 'node:net';
import type { Logger } from 'pino';
import type { AppendResult, EventDb } from '../storage/event-db-types.js';
import { notLeader } from '../storage/event-db.js';
import { ClusterEventDb, writeLocally, type StorageHost, type WriteOp, type WriteRouter } from './cluster-db.js';
import { WRITE_ROUTE_POLL_MS, WriteRouting, type WriteRoute } from './write-routing.js';
import type { ElectionInput, ElectionMessage } from './elections/elections.js';
import {
  FOLLOWING, LEADING, canResign, initialCoreState, isPreparing, step as coreStep,
  type CoreCommand, type CoreConfig, type CoreFacts, type CoreInput, type CoreState,
} from './core/node-core.js';
import { ClusterView } from './gossip/cluster-view.js';
import { ZERO_GUID, httpEndpointOf, isVoter, type GossipDocument, type MemberInfo, type NodeState } from './member-info.js';
import { commitPosition, quorumPosition } from './replication/commit-tracker.js';
import { LeaderSessions, type ReplicaStats } from './replication/leader-sessions.js';
import { ReplicaSession, type ReplicaSessionEnd } from './replication/replica-session.js';
import type { PeerClient } from './transport/peer-client.js';
import { peerLookup } from '../platform/peer-lookup.js';
import { systemClock, type Clock, type ClockTimer } from '../platform/clock.js';

export interface ClusterSettings {
  readonly clusterSize: number;
  readonly nodePriority: number;
  readonly readOnlyReplica: boolean;
  readonly gossipSeeds: readonly string[];
  readonly discoverViaDns: boolean;
  readonly clusterDns: string;
  readonly clusterGossipPort: number;
  readonly gossipIntervalMs: number;
  readonly gossipTimeoutMs: number;
  readonly leaderElectionTimeoutMs: number;
  readonly commitTimeoutMs: number;
  readonly prepareTimeoutMs: number;
  readonly deadMemberRemovalPeriodSec: number;
  readonly chunkSizeBytes: number;
}

/** Where this node is reached, once its listeners are bound. */
export interface AdvertisedEndpoints {
  /** The HTTP API as other nodes reach it. */
  readonly httpHost: string;
  readonly httpPort: number;
  /** The HTTP API as clients are told to reach it. */
  readonly clientHost: string;
  readonly clientPort: number;
  readonly replicationHost: string;
  readonly replicationPort: number;
}

/** How replication connections are made: plain TCP by default; TLS (TlsState) with certificates. */
export interface PeerTransport {
  /** The replication listener; `onSocket` gets only connections of authenticated peers. */
  createServer(onSocket: (socket: net.Socket) => void): net.Server;
  /**
   * A connection to a leader's replication listener (a TLS socket is used once 'secureConnect').
   * `onExpire`: the transport wants the link re-established (TLS connection-reset interval).
   */
  connect(host: string, port: number, onExpire: () => void): net.Socket;
}

export interface ClusterNodeDeps {
  readonly log: Logger;
  readonly instanceId: string;
  readonly version: string;
  readonly settings: ClusterSettings;
  readonly host: StorageHost;
  readonly peers: PeerClient;
  /** Replication connections; default plain TCP. */
  readonly transport?: PeerTransport;
  /** Time and timers (default the system clock; tests and the simulation pass a manual one). */
  readonly clock?: Clock;
  /** The node state changed (leader-only services start and stop with it). */
  readonly onStateChange?: (state: NodeState, previous: NodeState) => void;
  /**
   * Work a new leader does before it reports Leader (the default users), once its epoch record
   * is on a quorum: writes go through `local`, this node's own engine, and are acknowledged on a
   * quorum as any write. Until it resolves the node stays PreLeader, and client writes wait for it.
   */
  readonly prepareLeadership?: (local: EventDb) => Promise<void>;
}

/** Pause between attempts of a failed leadership preparation. */
const PREPARE_RETRY_MS = 200;

export class ClusterNode implements WriteRouter {
  /** The decisions: role, leader, elections, quorum (core/node-core.ts). */
  private core: CoreState;
  private readonly coreConfig: CoreConfig;
  private readonly view: ClusterView;
  private electionsChain: Promise<void> = Promise.resolve();
  private readonly electionTimers = new Set<ClockTimer>();
  /** Leader: end of this term's epoch record, once durable; the commit position waits for it. */
  private epochRecord: { position: number; end: number; number: number } | undefined;
  private commit = 0;
  private gateValue = Number.NEGATIVE_INFINITY;
  private readonly sessions: LeaderSessions;
  private replica: ReplicaSession | undefined;
  private reconnectTimer: ClockTimer | undefined;
  private gossipTimer: ClockTimer | undefined;
  private discoveryTimer: ClockTimer | undefined;
  private server: net.Server | undefined;
  private endpoints: AdvertisedEndpoints | undefined;
  private readonly log: Logger;
  private readonly clock: Clock;
  private unsubscribeDurable: (() => void) | undefined;
  /** Client writes: their routes and the waits for one (write-routing.ts). */
  private readonly routing: WriteRouting;
  /** The term whose leadership preparation runs (see `prepareThenLead`). */
  private preparingEpoch: number | undefined;
  /** This node's own engine as an EventDb: the leadership preparation writes through it. */
  private readonly localDb: EventDb;

  constructor(private readonly deps: ClusterNodeDeps) {
    this.log = deps.log;
    this.clock = deps.clock ?? systemClock;
    this.coreConfig = {
      instanceId: deps.instanceId, clusterSize: deps.settings.clusterSize, readOnlyReplica: deps.settings.readOnlyReplica,
      leaderElectionTimeoutMs: deps.settings.leaderElectionTimeoutMs,
      gossipIntervalMs: deps.settings.gossipIntervalMs, gossipTimeoutMs: deps.settings.gossipTimeoutMs,
    };
    this.core = initialCoreState(this.coreConfig, deps.settings.nodePriority);
    this.localDb = new ClusterEventDb(deps.host, { write: (op) => writeLocally(deps.host.engine, op) });
    this.routing = new WriteRouting({
      log: deps.log, clock: this.clock, host: deps.host,
      writeLimitMs: deps.settings.prepareTimeoutMs + deps.settings.commitTimeoutMs,
      route: () => this.writeRoute(), isLeader: () => this.state === 'Leader',
      isStopped: () => this.stopped, describe: () => this.state,
    });
    const { gossipIntervalMs, gossipTimeoutMs, deadMemberRemovalPeriodSec } = deps.settings;
    this.view = new ClusterView(this.placeholderSelf(), {
      deadAfterMs: 2 * gossipIntervalMs + gossipTimeoutMs,
      removeAfterMs: deadMemberRemovalPeriodSec * 1000,
    });
    this.sessions = new LeaderSessions({
      log: deps.log.child({ component: 'cluster.replication' }),
      instanceId: deps.instanceId,
      chunkSizeBytes: deps.settings.chunkSizeBytes,
      storage: () => deps.host.storage,
      isLeader: () => LEADING.has(this.state),
      commitPosition: () => this.commit,
      onProgress: () => this.onReplicaProgress(),
      forward: (request) => this.routing.carryOutForwarded(request),
      heartbeatMs: Math.max(100, Math.min(1000, Math.floor(deps.settings.gossipIntervalMs / 2))),
    });
  }

  // ---------------------------------------------------------------- lifecycle

  /** Binds the replication listener; resolves with its address. */
  async listenReplication(ip: string, port: number): Promise<net.AddressInfo> {
    const attach = (socket: net.Socket): void => this.sessions.attach(socket);
    const server = this.deps.transport?.createServer(attach) ?? net.createServer(attach);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, ip, () => { server.off('error', reject); resolve(); });
    });
    return server.address() as net.AddressInfo;
  }

  start(endpoints: AdvertisedEndpoints): void {
    this.endpoints = endpoints;
    this.view.updateSelf(this.selfInfo());
    this.unsubscribeDurable = this.subscribeDurable();
    this.deps.host.onEngine(() => { this.unsubscribeDurable?.(); this.unsubscribeDurable = this.subscribeDurable(); });
    this.log.info({ state: this.state, instanceId: this.deps.instanceId, seeds: this.deps.settings.gossipSeeds }, 'cluster node starting');
    this.gossipTick();
    this.discoveryTimer = this.clock.setTimer(Math.max(this.deps.settings.leaderElectionTimeoutMs, this.deps.settings.gossipIntervalMs), () => this.discover());
  }

  private get state(): NodeState {
    return this.core.role;
  }

  private get leaderId(): string | undefined {
    return this.core.leaderId;
  }

  private get stopped(): boolean {
    return this.core.stopped;
  }

  // ---------------------------------------------------------------- the core

  /** Steps the core with `input`, announces a changed role, and carries the commands out in order. */
  private feed(input: CoreInput): Promise<void> {
    const before = this.core;
    const { state, commands } = coreStep(before, input, this.facts(), this.coreConfig);
    this.core = state;
    if (state.role !== before.role) this.announce(state.role, before.role);
    return this.carryOut(commands);
  }

  /** `feed` for callers that do not wait: a failure is logged. */
  private input(input: CoreInput): void {
    this.feed(input).catch((err: unknown) => this.log.error({ err, input: input.kind }, 'cluster step failed'));
  }

  /** An election input, stepped once the ones before it are done (see the core's contract). */
  private queueElection(input: ElectionInput): void {
    this.electionsChain = this.electionsChain
      .then(() => this.feed({ kind: 'election', input }))
      .catch((err: unknown) => this.log.error({ err }, 'election step failed'));
  }

  /** What the core asks about: this node's gossip view, log and links, now. */
  private facts(): CoreFacts {
    const nowMs = this.nowMs();
    const host = this.deps.host;
    return {
      nowMs,
      liveLeader: () => {
        // The leader of the latest epoch gossip shows, and only one whose epoch is not older than
        // this node's own last epoch (a cut-off old leader may still say Leader; following it
        // would cut back what this node took from a later one).
        const ownEpoch = host.available ? (host.storage.epochs(1)[0]?.epochNumber ?? -1) : -1;
        return this.view.snapshot(nowMs)
          .filter((m) => m.isAlive && m.state === 'Leader' && m.instanceId !== this.deps.instanceId && m.epochNumber >= ownEpoch)
          .sort((a, b) => b.epochNumber - a.epochNumber)[0];
      },
      isAlive: (instanceId) => this.view.isAlive(instanceId, nowMs),
      link: () => ({
        active: this.replica !== undefined, subscribed: this.replica?.isSubscribed === true,
        silentMs: this.replica?.silentMs ?? Number.POSITIVE_INFINITY,
      }),
      votingReplicas: () => this.sessions.progress().filter((p) => p.votes).length,
      candidate: () => {
        const storage = host.storage;
        const epoch = storage.epochs(1)[0];
        return {
          instanceId: this.deps.instanceId, epochNumber: epoch?.epochNumber ?? -1, epochPosition: epoch?.epochPosition ?? -1,
          epochId: epoch?.epochId ?? ZERO_GUID, epochLeaderInstanceId: epoch?.leaderInstanceId ?? '',
          writerCheckpoint: storage.durablePosition, chaserCheckpoint: storage.chaserPosition, proposalNumber: storage.proposalNumber,
        };
      },
      aliveVoters: () => this.view.snapshot(nowMs).filter((m) => m.isAlive && isVoter(m)).map((m) => m.instanceId),
      resigningMember: () => this.view.snapshot(nowMs).find((m) => m.state === 'ResigningLeader' && m.isAlive)?.instanceId,
      durablePosition: () => host.storage.durablePosition,
      storageAvailable: () => host.available,
    };
  }

  private async carryOut(commands: readonly CoreCommand[]): Promise<void> {
    for (const command of commands) {
      switch (command.kind) {
        case 'log':
          this.log[command.level](command.fields, command.message);
          break;
        case 'broadcast':
          for (const m of this.view.snapshot(this.nowMs())) {
            if (m.instanceId !== this.deps.instanceId && isVoter(m)) this.sendElectionMessage(httpEndpointOf(m), command.message);
          }
          break;
        case 'send': {
          const to = this.view.member(command.to);
          if (to) this.sendElectionMessage(httpEndpointOf(to), command.message);
          break;
        }
        case 'schedule-election-timeout': {
          const timer = this.clock.setTimer(command.delayMs, () => {
            this.electionTimers.delete(timer);
            this.queueElection({ kind: 'timeout', view: command.view });
          });
          this.electionTimers.add(timer);
          break;
        }
        case 'persist-proposal':
          await this.deps.host.storage.writeProposalNumber(command.proposalNumber);
          break;
        case 'elections':
          this.queueElection(command.input);
          break;
        case 'election-ended':
          this.replica?.acknowledge();
          this.onReplicaProgress();
          break;
        case 'become-leader':
          await this.lead(command.epochNumber);
          break;
        case 'stop-leading':
          await this.stopLeading(command.reason);
          break;
        case 'prepare-leadership':
          this.prepareThenLead(command.epochNumber);
          break;
        case 'complete-resignation':
          void this.completeResignation();
          break;
        case 'follow':
          this.clock.clearTimer(this.reconnectTimer);
          this.closeLink();
          this.connectToLeader();
          break;
        case 'connect':
          this.connectToLeader();
          break;
        case 'reconnect':
          this.reconnectTimer = this.clock.setTimer(command.delayMs, () => {
            if (FOLLOWING.has(this.state) && this.replica === undefined) this.connectToLeader();
          });
          break;
        case 'close-link':
          this.closeLink();
          break;
        case 'schedule-discovery':
          this.discoveryTimer = this.clock.setTimer(command.delayMs, () => this.discover());
          break;
        case 'route-changed':
          this.routeChanged();
          break;
        case 'then':
          await this.feed(command.input);
          break;
      }
    }
  }

  /** Closes the link to the leader; its end is this node's doing, not a failure of the link. */
  private closeLink(): void {
    const replica = this.replica;
    this.replica = undefined;
    replica?.close();
  }

  /** A gossip round now, and the next one an interval later (rounds may overlap, as with an interval timer). */
  private gossipTick(): void {
    if (this.stopped) return;
    this.gossipTimer = this.clock.setTimer(this.deps.settings.gossipIntervalMs, () => this.gossipTick());
    void this.gossipRound();
  }

  private nowMs(): number {
    return this.clock.nowMs();
  }

  /** Resolves after `delayMs` on this node's clock. */
  private sleep(delayMs: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimer(delayMs, resolve));
  }

  private subscribeDurable(): () => void {
    return this.deps.host.storage.onDurable(() => {
      this.sessions.wake();
      if (LEADING.has(this.state)) this.onReplicaProgress();
    });
  }

  async stop(): Promise<void> {
    await this.feed({ kind: 'stop' });
    this.clock.clearTimer(this.gossipTimer);
    this.clock.clearTimer(this.discoveryTimer);
    this.clock.clearTimer(this.reconnectTimer);
    for (const t of this.electionTimers) this.clock.clearTimer(t);
    this.replica?.close();
    this.sessions.closeAll('shutting down');
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.deps.peers.close();
  }

  get nodeState(): NodeState {
    return this.state;
  }

  get isLeader(): boolean {
    return this.state === 'Leader';
  }

  /** The current leader as gossip describes it (undefined when none is known). */
  leaderInfo(): MemberInfo | undefined {
    if (LEADING.has(this.state)) return this.view.selfInfo;
    return this.leaderId === undefined ? undefined : this.view.member(this.leaderId);
  }

  /** The time a write may take, and may wait for a leader: the prepare plus the commit timeout. */
  private get writeLimitMs(): number {
    return this.deps.settings.prepareTimeoutMs + this.deps.settings.commitTimeoutMs;
  }

  /** The leader clients are sent to: another node; undefined when none is known or this node is between roles. */
  leaderElsewhere(): MemberInfo | undefined {
    if (LEADING.has(this.state)) return undefined;
    return this.leaderId === undefined ? undefined : this.view.member(this.leaderId);
  }

  /**
   * Resolves once this node leads or knows another leader (an election or a resignation ended),
   * or after the prepare and commit timeouts: a request that needs the leader waits for one
   * rather than failing during a hand-over.
   */
  async leaderKnown(): Promise<void> {
    const untilMs = this.nowMs() + this.writeLimitMs;
    while (!this.stopped && !this.isLeader && this.leaderElsewhere() === undefined) {
      const leftMs = untilMs - this.nowMs();
      if (leftMs <= 0) return;
      await this.routeChange(Math.min(leftMs, WRITE_ROUTE_POLL_MS));
    }
  }

  /** The role changed: gossip, /info, the leader-only services and waiting writes see it. */
  private announce(state: NodeState, previous: NodeState): void {
    this.log.info({ state, previous, leader: this.leaderId }, 'node state changed');
    this.view.updateSelf(this.selfInfo());
    this.deps.onStateChange?.(state, previous);
    this.routeChanged();
  }

  // ---------------------------------------------------------------- gossip

  private placeholderSelf(): MemberInfo {
    return this.memberInfo({ httpHost: '', httpPort: 0, clientHost: '', clientPort: 0, replicationHost: '', replicationPort: 0 });
  }

  private selfInfo(): MemberInfo {
    return this.memberInfo(this.endpoints ?? { httpHost: '', httpPort: 0, clientHost: '', clientPort: 0, replicationHost: '', replicationPort: 0 });
  }

  private memberInfo(e: AdvertisedEndpoints): MemberInfo {
    const host = this.deps.host;
    const storage = host.available ? host.storage : undefined;
    const epoch = storage?.epochs(1)[0];
    return {
      instanceId: this.deps.instanceId, timeStamp: new Date(this.nowMs()).toISOString(), state: this.state ?? 'Initializing', isAlive: true,
      internalTcpIp: e.replicationHost, internalTcpPort: e.replicationPort, internalSecureTcpPort: 0,
      externalTcpIp: e.clientHost, externalTcpPort: 0, externalSecureTcpPort: 0,
      internalHttpEndPointIp: e.httpHost, internalHttpEndPointPort: e.httpPort,
      httpEndPointIp: e.clientHost, httpEndPointPort: e.clientPort,
      lastCommitPosition: storage?.committedPosition ?? 0, writerCheckpoint: storage?.durablePosition ?? 0,
      chaserCheckpoint: storage?.chaserPosition ?? 0, epochPosition: epoch?.epochPosition ?? -1,
      epochNumber: epoch?.epochNumber ?? -1, epochId: epoch?.epochId ?? ZERO_GUID,
      nodePriority: this.core.priority, isReadOnlyReplica: this.deps.settings.readOnlyReplica, esVersion: this.deps.version,
    };
  }

  /** The gossip document: this node first, then every member it knows. */
  gossip(): GossipDocument {
    this.view.updateSelf(this.selfInfo());
    const members = this.view.snapshot(this.nowMs());
    return { members, serverIp: this.endpoints?.clientHost ?? '', serverPort: this.endpoints?.clientPort ?? 0 };
  }

  /** `POST /gossip` from another node: merge its view, answer with ours. */
  receiveGossip(document: GossipDocument): GossipDocument {
    this.view.merge(document.members, document.members[0]?.instanceId, this.nowMs());
    this.evaluate();
    return this.gossip();
  }

  private async gossipTargets(): Promise<string[]> {
    const own = this.endpoints === undefined ? '' : `${this.endpoints.httpHost}:${this.endpoints.httpPort}`;
    const targets = new Set<string>([...this.deps.settings.gossipSeeds, ...this.view.peerEndpoints()]);
    if (this.deps.settings.gossipSeeds.length === 0 && this.deps.settings.discoverViaDns && this.deps.settings.clusterSize > 1) {
      try {
        const found = await peerLookup().resolve(this.deps.settings.clusterDns);
        for (const a of found) targets.add(`${a.family === 6 ? `[${a.address}]` : a.address}:${this.deps.settings.clusterGossipPort}`);
      } catch (err: unknown) {
        this.log.debug({ err, clusterDns: this.deps.settings.clusterDns }, 'cluster DNS lookup failed');
      }
    }
    targets.delete(own);
    return [...targets];
  }

  private async gossipRound(): Promise<void> {
    if (this.stopped) return;
    const document = this.gossip();
    const targets = await this.gossipTargets();
    await Promise.all(targets.map(async (endpoint) => {
      try {
        const answer = (await this.deps.peers.post(endpoint, '/gossip', document, this.deps.settings.gossipTimeoutMs)) as GossipDocument | undefined;
        const members = answer?.members ?? [];
        if (members[0]?.instanceId === this.deps.instanceId) return; // a seed that is this node
        this.view.merge(members, members[0]?.instanceId, this.nowMs());
      } catch (err: unknown) {
        this.log.debug({ err, endpoint }, 'gossip failed');
      }
    }));
    this.gossipRounds += 1;
    this.evaluate();
  }

  /** Gossip changed: the core reacts (a leader to follow, a leader lost, a quorum lost). */
  private evaluate(): void {
    if (this.stopped) return;
    this.input({ kind: 'gossip' });
  }

  /** Gossip rounds completed since start (discovery waits for two before electing). */
  private gossipRounds = 0;

  private discover(): void {
    this.input({ kind: 'discovery-due', gossipRounds: this.gossipRounds });
  }

  // ---------------------------------------------------------------- elections

  /** An election message from another node (`POST /elections`). */
  receiveElectionMessage(message: ElectionMessage): void {
    this.input({ kind: 'election-message', message, fromOwnReplica: this.sessions.hasReplica(message.from) });
  }

  private sendElectionMessage(endpoint: string, message: ElectionMessage): void {
    this.deps.peers.post(endpoint, '/elections', message, this.deps.settings.gossipTimeoutMs).catch((err: unknown) => {
      this.log.debug({ err, endpoint, type: message.type }, 'election message not delivered');
    });
  }

  // ---------------------------------------------------------------- leading

  /** The core chose this node (now PreLeader): write the term's epoch record. */
  private async lead(epochNumber: number): Promise<void> {
    this.closeLink();
    this.epochRecord = undefined;
    this.gateValue = Number.NEGATIVE_INFINITY;
    const storage = this.deps.host.storage;
    this.commit = storage.committedPosition;
    storage.setCommitGate(() => this.gateValue);
    const epoch = await storage.becomeLeader(epochNumber, this.deps.instanceId);
    this.epochRecord = { position: epoch.epochPosition, end: storage.durablePosition, number: epochNumber };
    this.log.info({ epochNumber, epochPosition: epoch.epochPosition }, 'epoch record written');
    await this.feed({ kind: 'epoch-written', epochNumber });
    this.onReplicaProgress();
  }

  /** Replicas acknowledged (or this log grew): move the commit position and apply. */
  private onReplicaProgress(): void {
    if (!LEADING.has(this.state) || this.epochRecord === undefined || this.core.elections.electing) return;
    const storage = this.deps.host.storage;
    const quorum = quorumPosition(storage.durablePosition, this.sessions.progress(), this.deps.settings.clusterSize);
    const before = this.commit;
    this.commit = commitPosition(quorum, this.epochRecord.end, this.commit);
    if (this.commit > before || this.gateValue === Number.NEGATIVE_INFINITY) {
      if (this.commit >= this.epochRecord.end) {
        const first = this.gateValue === Number.NEGATIVE_INFINITY;
        if (first) {
          // The previous terms' writes this node holds become visible with its epoch record.
          storage.replica.commitTo(this.epochRecord.position);
        }
        this.gateValue = this.commit;
        storage.commitGateMoved();
        if (first) this.input({ kind: 'epoch-committed', epochNumber: this.epochRecord.number });
      }
      this.sessions.wake();
    }
  }

  /**
   * PreLeader -> Leader once this node can serve writes: its epoch record is on a quorum (the
   * caller) and the leadership preparation (the default users) is done. Only then does /info,
   * gossip and the operator see Leader, so the first write a client sends on that word is taken.
   * A preparation that fails is tried again while this node is still PreLeader of the same term
   * (its writes are idempotent); a node that stepped down meanwhile drops it.
   */
  private prepareThenLead(epochNumber: number): void {
    if (this.preparingEpoch === epochNumber) return;
    this.preparingEpoch = epochNumber;
    const sameTerm = (): boolean => isPreparing(this.core, epochNumber);
    void (async () => {
      for (let attempt = 1; sameTerm(); attempt++) {
        try {
          await this.deps.prepareLeadership?.(this.localDb);
          if (sameTerm()) await this.feed({ kind: 'leadership-prepared', epochNumber });
          return;
        } catch (err: unknown) {
          if (!sameTerm()) return;
          this.log.warn({ err, attempt, epochNumber }, 'leadership preparation failed: trying again');
          await this.sleep(PREPARE_RETRY_MS);
        }
      }
    })().finally(() => {
      if (this.preparingEpoch === epochNumber) this.preparingEpoch = undefined;
    });
  }

  /** The core stepped down (now Unknown): writes waiting here fail, replicas' sessions close. */
  private async stopLeading(reason: string): Promise<void> {
    this.epochRecord = undefined;
    this.gateValue = Number.NEGATIVE_INFINITY;
    const storage = this.deps.host.storage;
    await storage.stopLeading(notLeader(`this node stopped leading: ${reason}`));
    storage.setCommitGate(() => Number.NEGATIVE_INFINITY);
    this.sessions.closeAll(reason);
  }

  /** `POST /admin/node/resign`: the leader steps down in favour of another node. */
  resign(): { accepted: boolean; message: string } {
    if (!canResign(this.core)) return { accepted: false, message: `only the leader resigns; this node is ${this.state}` };
    this.input({ kind: 'resign' });
    return { accepted: true, message: 'resigning' };
  }

  /**
   * Before a planned stop (SIGTERM: a rolling update, a drained Kubernetes node, `kubectl delete
   * pod`): a leader of a cluster of several voters resigns and waits, bounded, until another node
   * leads, so writers see a hand-over (held writes, see `routeWrite`) instead of a lost leader
   * and an election after the gossip timeouts. Resolves at once on any other node.
   */
  async handOverLeadership(limitMs: number): Promise<boolean> {
    if (this.state !== 'Leader' || this.deps.settings.clusterSize < 2) return false;
    // Nobody to hand over to (the other voters are gone or stopping too, as when a whole cluster
    // is deleted): stop at once rather than wait for an election that cannot end.
    const otherVoters = (): boolean => this.sessions.progress().some((p) => p.votes);
    if (!otherVoters()) return false;
    this.log.info('stopping: the leader hands over before it stops');
    this.resign();
    const untilMs = this.nowMs() + limitMs;
    let votersSeenMs = this.nowMs();
    while (!this.stopped && this.leaderElsewhere() === undefined) {
      const leftMs = untilMs - this.nowMs();
      if (otherVoters()) votersSeenMs = this.nowMs();
      if (leftMs <= 0 || this.nowMs() - votersSeenMs > this.deps.settings.leaderElectionTimeoutMs * 2) {
        this.log.warn({ limitMs }, 'no other node took the lead: stopping anyway');
        return false;
      }
      await this.routeChange(Math.min(leftMs, WRITE_ROUTE_POLL_MS));
    }
    this.log.info({ leader: this.leaderId }, 'another node leads: stopping');
    return true;
  }

  private async completeResignation(): Promise<void> {
    const storage = this.deps.host.storage;
    await storage.stopLeading(notLeader('the leader is resigning'));
    // Let a voting replica catch up, so that another node ranks as high as this one (epoch, then
    // writer checkpoint, come before "not resigning" in the ranking): with none caught up, this
    // node would win the election again and the resignation would not move leadership. One such
    // replica is enough; writes are stopped, so the wait is short unless the machine is starved.
    const waitMs = Math.max(5000, 5 * this.deps.settings.leaderElectionTimeoutMs);
    const deadline = this.nowMs() + waitMs;
    const caughtUp = (): boolean => {
      const voting = this.sessions.progress().filter((p) => p.votes);
      return voting.length === 0 || voting.some((p) => p.position >= storage.durablePosition);
    };
    while (this.nowMs() < deadline && !caughtUp()) await this.sleep(20);
    if (!caughtUp()) {
      this.log.warn({ waitMs, durablePosition: storage.durablePosition, replicas: this.sessions.progress() },
        'resigning: no voting replica caught up in time; this node may be elected again');
    }
    await this.feed({ kind: 'resignation-ready' });
  }

  setPriority(priority: number): void {
    this.input({ kind: 'set-priority', priority });
    this.view.updateSelf(this.selfInfo());
    this.log.info({ nodePriority: priority }, 'node priority changed');
  }

  // ---------------------------------------------------------------- following

  private connectToLeader(): void {
    const leader = this.leaderId === undefined ? undefined : this.view.member(this.leaderId);
    if (leader === undefined || this.stopped) return;
    // The storage is reopening after a truncation (a reconnect timer or a new election's leader
    // came meanwhile): onReplicaEnd connects once it is back, to whichever leader is current then.
    if (!this.deps.host.available) return;
    const storage = this.deps.host.storage;
    const engine = this.deps.host.engine;
    const session = new ReplicaSession({
      log: this.log.child({ component: 'cluster.replica' }),
      host: leader.internalTcpIp, port: leader.internalTcpPort,
      ...(this.deps.transport === undefined ? {} : { connect: this.deps.transport.connect }),
      instanceId: this.deps.instanceId, leaderInstanceId: leader.instanceId,
      isReadOnlyReplica: this.deps.settings.readOnlyReplica, chunkSizeBytes: this.deps.settings.chunkSizeBytes,
      storage, tempDirectory: engine.chunkTempDirectory,
      installChunk: (file) => engine.installChunkFile(file),
      heartbeatMs: Math.max(100, Math.min(1000, Math.floor(this.deps.settings.gossipIntervalMs / 2))),
      connectTimeoutMs: Math.max(1000, this.deps.settings.gossipTimeoutMs),
      onSubscribed: () => {
        if (this.replica === session) this.input({ kind: 'link-subscribed' });
      },
      onProgress: (local, leaderDurable) => {
        if (local < leaderDurable || this.replica !== session) return;
        if (this.state === 'CatchingUp' || this.state === 'PreReadOnlyReplica') this.input({ kind: 'link-caught-up' });
      },
      onEnd: (end) => void this.onReplicaEnd(session, end),
      acknowledgeLimit: () => this.core.ackLimit,
    });
    this.replica = session;
  }

  private async onReplicaEnd(session: ReplicaSession, end: ReplicaSessionEnd): Promise<void> {
    if (this.replica !== session || this.stopped) return;
    this.replica = undefined;
    if (end.kind === 'truncate') {
      await this.deps.host.restartTruncated(end.position);
      if (!this.stopped && FOLLOWING.has(this.state) && this.replica === undefined) this.connectToLeader();
      return;
    }
    this.log.info({ leader: this.leaderId, end }, 'replication from the leader ended');
    await this.feed({ kind: 'link-ended', end: end.kind, reason: end.reason });
  }

  // ---------------------------------------------------------------- writes

  /** Client writes: on the leader, locally; elsewhere, forwarded to the leader; waiting for a route meanwhile (write-routing.ts). */
  write(op: WriteOp): Promise<AppendResult> {
    return this.routing.write(op);
  }

  /** A scavenge point for a scavenge on this node: the leader writes it (see EngineScavenging). */
  writeScavengePoint(threshold: number): Promise<AppendResult> {
    return this.routing.writeScavengePoint(threshold);
  }

  /** Where a client write goes now: this node (the leader), the leader through the replica link, or nowhere yet. */
  private writeRoute(): WriteRoute {
    if (this.state === 'Leader') return this.deps.host.available ? 'local' : undefined;
    const replica = this.replica;
    return FOLLOWING.has(this.state) && replica?.isSubscribed === true ? replica : undefined;
  }

  private routeChange(timeoutMs: number): Promise<void> {
    return this.routing.changeOrTimeout(timeoutMs);
  }

  private routeChanged(): void {
    this.routing.changed();
  }

  // ---------------------------------------------------------------- reports

  replicationStats(): { state: NodeState; leader: string | undefined; commitPosition: number; replicas: ReplicaStats[] } {
    return { state: this.state, leader: this.leaderId, commitPosition: this.commit, replicas: this.sessions.stats() };
  }

  /** The replication group of /stats: this node's state and, on the leader, each replica's progress. */
  replicationTree(): Record<string, string | number | boolean | Record<string, Record<string, string | number | boolean>>> {
    const storage = this.deps.host.available ? this.deps.host.storage : undefined;
    const durable = storage?.durablePosition ?? 0;
    const replicas: Record<string, Record<string, string | number | boolean>> = {};
    const nowMs = this.nowMs();
    for (const r of this.sessions.stats()) {
      replicas[r.instanceId] = {
        remoteAddress: r.remoteAddress, isReadOnlyReplica: r.isReadOnlyReplica, subscriptionPosition: r.subscriptionPosition,
        sentPosition: r.sentPosition, ackedPosition: r.ackedPosition, lagBytes: Math.max(0, durable - r.ackedPosition),
        caughtUp: r.caughtUp, connectedSeconds: Math.round((nowMs - r.connectedSinceMs) / 1000),
      };
    }
    return {
      state: this.state, leaderInstanceId: this.leaderId ?? '', writerCheckpoint: durable,
      commitPosition: LEADING.has(this.state) ? this.commit : (storage?.committedPosition ?? 0),
      replicaSubscribed: this.replica?.isSubscribed ?? false, replicas,
    };
  }
}

/**
 * A cluster member: gossip, elections, the role (VNodeState) and replication, driven together.
 * The pure parts decide (cluster-view.ts, elections.ts, commit-tracker.ts, divergence.ts); this
 * class owns the timers, the connections and the storage, and carries their decisions out.
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
import {
  INITIAL_ELECTION_STATE, majorityOf, step as electionStep,
  type Candidate, type ElectionContext, type ElectionEffect, type ElectionInput, type ElectionMessage, type ElectionState,
} from './elections/elections.js';
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

/** States in which this node leads (accepts replicas and, as Leader, writes). */
const LEADING: ReadonlySet<NodeState> = new Set<NodeState>(['PreLeader', 'Leader', 'ResigningLeader']);
const FOLLOWING: ReadonlySet<NodeState> = new Set<NodeState>(['PreReplica', 'CatchingUp', 'Follower', 'PreReadOnlyReplica', 'ReadOnlyReplica']);
/** Pause between attempts of a failed leadership preparation. */
const PREPARE_RETRY_MS = 200;

export class ClusterNode implements WriteRouter {
  private state: NodeState;
  private readonly view: ClusterView;
  private elections: ElectionState = INITIAL_ELECTION_STATE;
  private electionsChain: Promise<void> = Promise.resolve();
  private readonly electionTimers = new Set<ClockTimer>();
  private leaderId: string | undefined;
  private priority: number;
  private resigning = false;
  /** Leader: end of this term's epoch record, once durable; the commit position waits for it. */
  private epochRecord: { position: number; end: number; number: number } | undefined;
  private commit = 0;
  private gateValue = Number.NEGATIVE_INFINITY;
  private noQuorumSinceMs: number | undefined;
  private readonly sessions: LeaderSessions;
  private replica: ReplicaSession | undefined;
  private replicaFailures = 0;
  private reconnectTimer: ClockTimer | undefined;
  private gossipTimer: ClockTimer | undefined;
  private discoveryTimer: ClockTimer | undefined;
  private server: net.Server | undefined;
  private endpoints: AdvertisedEndpoints | undefined;
  private stopped = false;
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
    this.priority = deps.settings.nodePriority;
    this.localDb = new ClusterEventDb(deps.host, { write: (op) => writeLocally(deps.host.engine, op) });
    this.routing = new WriteRouting({
      log: deps.log, clock: this.clock, host: deps.host,
      writeLimitMs: deps.settings.prepareTimeoutMs + deps.settings.commitTimeoutMs,
      route: () => this.writeRoute(), isLeader: () => this.state === 'Leader',
      isStopped: () => this.stopped, describe: () => this.state,
    });
    this.state = deps.settings.readOnlyReplica ? 'ReadOnlyLeaderless' : 'DiscoverLeader';
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
    this.stopped = true;
    this.setState('ShuttingDown');
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

  private setState(state: NodeState): void {
    if (state === this.state) return;
    const previous = this.state;
    this.state = state;
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
      nodePriority: this.priority, isReadOnlyReplica: this.deps.settings.readOnlyReplica, esVersion: this.deps.version,
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

  /** Reacts to what gossip now says: a leader to follow, a leader lost, a quorum lost. */
  private evaluate(): void {
    if (this.stopped) return;
    const nowMs = this.nowMs();
    // The leader of the latest epoch gossip shows, and only one whose epoch is not older than this
    // node's own last epoch (a cut-off old leader may still say Leader; following it would cut back
    // what this node took from a later one).
    const ownEpoch = this.deps.host.available ? (this.deps.host.storage.epochs(1)[0]?.epochNumber ?? -1) : -1;
    const liveLeader = this.view.snapshot(nowMs)
      .filter((m) => m.isAlive && m.state === 'Leader' && m.instanceId !== this.deps.instanceId && m.epochNumber >= ownEpoch)
      .sort((a, b) => b.epochNumber - a.epochNumber)[0];
    if ((this.state === 'DiscoverLeader' || this.state === 'Unknown' || this.state === 'ReadOnlyLeaderless') && liveLeader) {
      // A leader others follow: join it rather than elect (a restarted node would otherwise keep
      // starting views until it pulled the whole cluster into a needless election).
      if (this.elections.electing) this.runElections({ kind: 'leader-found' });
      this.follow(liveLeader.instanceId);
      return;
    }
    if (LEADING.has(this.state)) {
      this.checkQuorum(nowMs);
      if (liveLeader && liveLeader.epochNumber > (this.epochRecord?.number ?? -1)) {
        this.log.warn({ otherLeader: liveLeader.instanceId, epochNumber: liveLeader.epochNumber }, 'another leader of a later epoch: stepping down');
        void this.stepDown('a leader of a later epoch exists').then(() => this.follow(liveLeader.instanceId));
      }
      return;
    }
    if (FOLLOWING.has(this.state) && this.leaderId !== undefined && !this.replica?.isSubscribed && !this.view.isAlive(this.leaderId, nowMs)) {
      this.leaderLost('the leader is not alive in gossip');
    }
  }

  /** While this node takes part in an election: its log end when the election began (see electionEnded). */
  private electionAckLimit = Number.POSITIVE_INFINITY;

  /** Gossip rounds completed since start (discovery waits for two before electing). */
  private gossipRounds = 0;

  private discover(): void {
    if (this.stopped || this.state !== 'DiscoverLeader') return;
    this.evaluate();
    if (this.state !== 'DiscoverLeader') return;
    if (this.gossipRounds < 2) {
      this.discoveryTimer = this.clock.setTimer(this.deps.settings.gossipIntervalMs, () => this.discover());
      return;
    }
    this.startElections('no leader found');
  }

  // ---------------------------------------------------------------- elections

  private startElections(reason: string): void {
    if (this.deps.settings.readOnlyReplica || this.stopped) return;
    if (this.state !== 'ResigningLeader' && !LEADING.has(this.state) && this.state !== 'Unknown' && this.state !== 'DiscoverLeader') this.setState('Unknown');
    this.log.info({ reason, view: this.elections.lastAttemptedView + 1 }, 'starting an election');
    this.runElections({ kind: 'start' });
  }

  /** An election message from another node (`POST /elections`). */
  receiveElectionMessage(message: ElectionMessage): void {
    if (this.deps.settings.readOnlyReplica || this.stopped) return;
    const fromOwnReplica = LEADING.has(this.state) && this.sessions.hasReplica(message.from);
    if (!this.elections.electing && message.from !== this.leaderId && !fromOwnReplica && this.hasHealthyLeader()) {
      // Like EventStoreDB's refusal of proposals against a live leader: a node that lags or was cut
      // off cannot pull a working cluster into elections (and, while they ran, hold its commits back).
      // A leader does join an election one of its own replicas started: that replica acknowledges
      // no further until an election ends, and the leader, the best candidate, is simply re-elected.
      this.log.debug({ from: message.from, type: message.type, view: message.view }, 'election message ignored: the leader is alive');
      return;
    }
    this.runElections({ kind: 'message', message });
  }

  /** This node leads with a quorum, or follows a leader it heard from within the dead-member time. */
  private hasHealthyLeader(): boolean {
    if (this.state === 'Leader' || this.state === 'PreLeader') return this.noQuorumSinceMs === undefined;
    const replica = this.replica;
    if (!FOLLOWING.has(this.state) || replica === undefined || !replica.isSubscribed) return false;
    const { gossipIntervalMs, gossipTimeoutMs } = this.deps.settings;
    return replica.silentMs <= 2 * gossipIntervalMs + gossipTimeoutMs;
  }

  private electionContext(): ElectionContext {
    const storage = this.deps.host.storage;
    const epoch = storage.epochs(1)[0];
    const nowMs = this.nowMs();
    const self: Candidate = {
      instanceId: this.deps.instanceId, epochNumber: epoch?.epochNumber ?? -1, epochPosition: epoch?.epochPosition ?? -1,
      epochId: epoch?.epochId ?? ZERO_GUID, epochLeaderInstanceId: epoch?.leaderInstanceId ?? '',
      writerCheckpoint: storage.durablePosition, chaserCheckpoint: storage.chaserPosition, nodePriority: this.priority,
      proposalNumber: storage.proposalNumber, resigning: this.resigning,
    };
    const members = this.view.snapshot(nowMs);
    const voters = members.filter((m) => m.isAlive && isVoter(m)).map((m) => m.instanceId);
    const resigning = this.resigning ? this.deps.instanceId : members.find((m) => m.state === 'ResigningLeader' && m.isAlive)?.instanceId;
    return {
      self, voters, clusterSize: this.deps.settings.clusterSize, electionTimeoutMs: this.deps.settings.leaderElectionTimeoutMs,
      ...(resigning === undefined ? {} : { resigningLeaderId: resigning }),
    };
  }

  private runElections(input: ElectionInput): void {
    this.electionsChain = this.electionsChain.then(async () => {
      if (this.stopped || !this.deps.host.available) return;
      const { state, effects } = electionStep(this.elections, input, this.electionContext());
      const wasElecting = this.elections.electing;
      if (!wasElecting && state.electing) this.electionAckLimit = this.deps.host.storage.durablePosition;
      this.elections = state;
      for (const effect of effects) await this.carryOut(effect);
      if (wasElecting && !this.elections.electing) this.electionEnded();
    }).catch((err: unknown) => this.log.error({ err }, 'election step failed'));
  }

  private async carryOut(effect: ElectionEffect): Promise<void> {
    switch (effect.kind) {
      case 'broadcast':
        for (const m of this.view.snapshot(this.nowMs())) {
          if (m.instanceId !== this.deps.instanceId && isVoter(m)) this.sendElectionMessage(httpEndpointOf(m), effect.message);
        }
        return;
      case 'send': {
        const to = this.view.member(effect.to);
        if (to) this.sendElectionMessage(httpEndpointOf(to), effect.message);
        return;
      }
      case 'schedule-timeout': {
        const timer = this.clock.setTimer(effect.delayMs, () => {
          this.electionTimers.delete(timer);
          this.runElections({ kind: 'timeout', view: effect.view });
        });
        this.electionTimers.add(timer);
        return;
      }
      case 'persist-proposal':
        await this.deps.host.storage.writeProposalNumber(effect.proposalNumber);
        return;
      case 'elected':
        this.log.info({ view: effect.view, leader: effect.leader.instanceId, epochNumber: effect.proposalNumber }, 'election done');
        await this.onElected(effect.leader.instanceId, effect.proposalNumber);
        return;
    }
  }

  /**
   * While a node takes part in an election it acknowledges its leader's data no further than its
   * log end when the election began (replica), and does not move the commit position (leader): what it told the voters of its log must stay an upper
   * bound of what it helped commit, or the elected node could lack an acknowledged write (found by
   * the seeded simulation, test/sim). When the election ends, both resume.
   */
  private electionEnded(): void {
    this.electionAckLimit = Number.POSITIVE_INFINITY;
    this.replica?.acknowledge();
    this.onReplicaProgress();
  }

  private sendElectionMessage(endpoint: string, message: ElectionMessage): void {
    this.deps.peers.post(endpoint, '/elections', message, this.deps.settings.gossipTimeoutMs).catch((err: unknown) => {
      this.log.debug({ err, endpoint, type: message.type }, 'election message not delivered');
    });
  }

  private async onElected(leaderId: string, epochNumber: number): Promise<void> {
    if (leaderId === this.deps.instanceId) {
      if (this.state === 'Leader' || this.state === 'PreLeader') return; // re-elected: the term goes on
      await this.lead(epochNumber);
      return;
    }
    if (LEADING.has(this.state)) await this.stepDown('another node was elected');
    if (this.leaderId === leaderId && this.replica !== undefined) return; // following it already
    this.follow(leaderId);
  }

  // ---------------------------------------------------------------- leading

  private async lead(epochNumber: number): Promise<void> {
    this.replica?.close();
    this.replica = undefined;
    this.leaderId = this.deps.instanceId;
    this.resigning = false;
    this.epochRecord = undefined;
    this.gateValue = Number.NEGATIVE_INFINITY;
    this.setState('PreLeader');
    const storage = this.deps.host.storage;
    this.commit = storage.committedPosition;
    storage.setCommitGate(() => this.gateValue);
    const epoch = await storage.becomeLeader(epochNumber, this.deps.instanceId);
    this.epochRecord = { position: epoch.epochPosition, end: storage.durablePosition, number: epochNumber };
    this.log.info({ epochNumber, epochPosition: epoch.epochPosition }, 'epoch record written');
    this.noQuorumSinceMs = undefined;
    this.onReplicaProgress();
  }

  /** Replicas acknowledged (or this log grew): move the commit position and apply. */
  private onReplicaProgress(): void {
    if (!LEADING.has(this.state) || this.epochRecord === undefined || this.elections.electing) return;
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
        if (first && this.state === 'PreLeader') this.prepareThenLead(this.epochRecord);
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
  private prepareThenLead(epoch: { readonly number: number }): void {
    if (this.preparingEpoch === epoch.number) return;
    this.preparingEpoch = epoch.number;
    const sameTerm = (): boolean => !this.stopped && this.state === 'PreLeader' && this.epochRecord === epoch;
    void (async () => {
      for (let attempt = 1; sameTerm(); attempt++) {
        try {
          await this.deps.prepareLeadership?.(this.localDb);
          if (sameTerm()) this.setState('Leader');
          return;
        } catch (err: unknown) {
          if (!sameTerm()) return;
          this.log.warn({ err, attempt, epochNumber: epoch.number }, 'leadership preparation failed: trying again');
          await this.sleep(PREPARE_RETRY_MS);
        }
      }
    })().finally(() => {
      if (this.preparingEpoch === epoch.number) this.preparingEpoch = undefined;
    });
  }

  private checkQuorum(nowMs: number): void {
    const voting = 1 + this.sessions.progress().filter((p) => p.votes).length;
    if (voting >= majorityOf(this.deps.settings.clusterSize)) {
      this.noQuorumSinceMs = undefined;
      return;
    }
    this.noQuorumSinceMs ??= nowMs;
    const limitMs = Math.max(3000, 3 * this.deps.settings.leaderElectionTimeoutMs);
    if (nowMs - this.noQuorumSinceMs < limitMs) return;
    this.log.warn({ votingMembers: voting, clusterSize: this.deps.settings.clusterSize }, 'the leader sees no quorum: stepping down');
    void this.stepDown('no quorum').then(() => this.startElections('the leader lost its quorum'));
  }

  private async stepDown(reason: string): Promise<void> {
    if (!LEADING.has(this.state)) return;
    this.log.info({ reason }, 'stepping down');
    this.setState('Unknown');
    this.leaderId = undefined;
    this.epochRecord = undefined;
    this.gateValue = Number.NEGATIVE_INFINITY;
    this.noQuorumSinceMs = undefined;
    const storage = this.deps.host.storage;
    await storage.stopLeading(notLeader(`this node stopped leading: ${reason}`));
    storage.setCommitGate(() => Number.NEGATIVE_INFINITY);
    this.sessions.closeAll(reason);
  }

  /** `POST /admin/node/resign`: the leader steps down in favour of another node. */
  resign(): { accepted: boolean; message: string } {
    if (this.state !== 'Leader') return { accepted: false, message: `only the leader resigns; this node is ${this.state}` };
    this.resigning = true;
    this.setState('ResigningLeader');
    void this.completeResignation();
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
    // Let the replicas catch up, so that another node ranks as high as this one.
    const deadline = this.nowMs() + Math.max(2000, 2 * this.deps.settings.leaderElectionTimeoutMs);
    while (this.nowMs() < deadline && this.sessions.progress().some((p) => p.votes && p.position < storage.durablePosition)) {
      await this.sleep(20);
    }
    this.startElections('the leader resigned');
  }

  setPriority(priority: number): void {
    this.priority = priority;
    this.view.updateSelf(this.selfInfo());
    this.log.info({ nodePriority: priority }, 'node priority changed');
  }

  // ---------------------------------------------------------------- following

  private follow(leaderId: string): void {
    this.clock.clearTimer(this.reconnectTimer);
    this.replica?.close();
    this.replica = undefined;
    this.leaderId = leaderId;
    this.resigning = false;
    this.setState(this.deps.settings.readOnlyReplica ? 'PreReadOnlyReplica' : 'PreReplica');
    this.connectToLeader();
  }

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
        this.replicaFailures = 0;
        this.routeChanged();
        if (this.state === 'PreReplica') this.setState('CatchingUp');
      },
      onProgress: (local, leaderDurable) => {
        if (local < leaderDurable) return;
        if (this.state === 'CatchingUp') this.setState('Follower');
        if (this.state === 'PreReadOnlyReplica') this.setState('ReadOnlyReplica');
      },
      onEnd: (end) => void this.onReplicaEnd(session, end),
      acknowledgeLimit: () => this.electionAckLimit,
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
    if (end.kind === 'reset') {
      // Planned (connection-reset interval): not a failure; reconnect with the certificates in force.
      if (FOLLOWING.has(this.state)) this.connectToLeader();
      return;
    }
    if (end.kind === 'refused') {
      this.leaderLost(`the leader refused: ${end.reason}`);
      return;
    }
    this.replicaFailures += 1;
    if (this.replicaFailures >= 3 && this.leaderId !== undefined && !this.view.isAlive(this.leaderId, this.nowMs())) {
      this.leaderLost('the leader is unreachable');
      return;
    }
    if (this.replicaFailures >= 3) {
      // Reachable in gossip but not for replication, or gone: let an election decide.
      this.leaderLost('replication from the leader keeps failing');
      return;
    }
    this.reconnectTimer = this.clock.setTimer(200 * this.replicaFailures, () => {
      if (FOLLOWING.has(this.state) && this.replica === undefined) this.connectToLeader();
    });
  }

  private leaderLost(reason: string): void {
    this.log.warn({ leader: this.leaderId, reason }, 'leader lost');
    this.replica?.close();
    this.replica = undefined;
    this.leaderId = undefined;
    this.replicaFailures = 0;
    if (this.deps.settings.readOnlyReplica) {
      this.setState('ReadOnlyLeaderless');
      return;
    }
    this.setState('Unknown');
    this.startElections(reason);
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

/**
 * Leader elections, after EventStoreDB's ElectionsService (Paxos-like), as a pure state machine:
 * `step(state, input, context)` returns the next state and the effects to carry out (messages,
 * a timer, persisting a proposal number, the result). It touches no network, timer or disk, so
 * the same code runs in the node and in the simulation tier (test/sim).
 *
 * A round ("view"):
 * 1. a node that wants a leader shifts to view v+1 and sends ViewChange(v+1) to the voters;
 *    nodes join the highest view they hear of;
 * 2. with ViewChanges from a majority for v, the view's leader of elections (the voters, sorted
 *    by instance id, at v mod count) sends Prepare(v);
 * 3. voters answer PrepareOk with what ranks them: last epoch, writer and chaser checkpoints,
 *    priority, and the highest proposal number they accepted (proposal.chk);
 * 4. with PrepareOks from a majority, the leader of elections picks the best candidate among them
 *    (`bestCandidate`) and a proposal number above every epoch and proposal they reported, and
 *    sends Proposal(v, candidate, n);
 * 5. a voter accepts a proposal of its view's leader of elections whose candidate is not behind
 *    itself (epoch, then writer checkpoint), persisting n before it answers Accept to all;
 * 6. Accepts from a majority for the same (candidate, n) elect it: n is the new epoch's number.
 * A view that does not finish within the election timeout gives way to the next one.
 *
 * Why it is safe: a write acknowledged to a client is on a majority; the elected candidate is
 * not behind any of the majority that accepted it, which shares a member with the write's
 * majority. Proposal numbers are persisted by a majority before they elect, and every later
 * proposal is computed from a majority's reports, so no two leaders get the same epoch number.
 */

/** What ranks a node as a leader candidate (sent in PrepareOk, carried in Proposal). */
export interface Candidate {
  readonly instanceId: string;
  readonly epochNumber: number;
  readonly epochPosition: number;
  readonly epochId: string;
  /** The node that led this candidate's last epoch. */
  readonly epochLeaderInstanceId: string;
  readonly writerCheckpoint: number;
  readonly chaserCheckpoint: number;
  readonly nodePriority: number;
  /** The highest proposal number this node accepted (proposal.chk). */
  readonly proposalNumber: number;
  /** This node is a leader that resigned: any other equal candidate wins over it. */
  readonly resigning?: boolean;
}

export type ElectionMessage =
  | { readonly type: 'ViewChange'; readonly from: string; readonly view: number }
  | { readonly type: 'Prepare'; readonly from: string; readonly view: number }
  | { readonly type: 'PrepareOk'; readonly from: string; readonly view: number; readonly candidate: Candidate }
  | { readonly type: 'Proposal'; readonly from: string; readonly view: number; readonly leader: Candidate; readonly proposalNumber: number }
  | { readonly type: 'Accept'; readonly from: string; readonly view: number; readonly leaderId: string; readonly proposalNumber: number };

export type ElectionInput =
  /** Find a leader: start the next view. */
  | { readonly kind: 'start' }
  /** A leader was found otherwise (gossip): stop electing; later views still pull this node in. */
  | { readonly kind: 'leader-found' }
  | { readonly kind: 'message'; readonly message: ElectionMessage }
  | { readonly kind: 'timeout'; readonly view: number };

export type ElectionEffect =
  | { readonly kind: 'broadcast'; readonly message: ElectionMessage }
  | { readonly kind: 'send'; readonly to: string; readonly message: ElectionMessage }
  | { readonly kind: 'schedule-timeout'; readonly view: number; readonly delayMs: number }
  /** Persist (proposal.chk) before any later effect of the same step is carried out. */
  | { readonly kind: 'persist-proposal'; readonly proposalNumber: number }
  | { readonly kind: 'elected'; readonly view: number; readonly leader: Candidate; readonly proposalNumber: number };

export interface ElectionContext {
  /** This node, as it would be reported now. */
  readonly self: Candidate;
  /** The voters this node knows to be alive, itself included (instance ids). */
  readonly voters: readonly string[];
  readonly clusterSize: number;
  readonly electionTimeoutMs: number;
  /** A leader that asked to step down: ranked below every other candidate. */
  readonly resigningLeaderId?: string;
}

export interface ElectionState {
  readonly electing: boolean;
  readonly lastAttemptedView: number;
  readonly lastInstalledView: number;
  readonly viewChanges: ReadonlySet<string>;
  readonly prepareOks: ReadonlyMap<string, Candidate>;
  /** The proposal this node accepted in lastAttemptedView. */
  readonly accepted: { readonly leader: Candidate; readonly proposalNumber: number } | undefined;
  /** Accepts heard in lastAttemptedView, by `leaderId/proposalNumber`. */
  readonly accepts: ReadonlyMap<string, ReadonlySet<string>>;
  /** The proposals sent in lastAttemptedView (by its leader of elections), by the same key. */
  readonly proposals: ReadonlyMap<string, Candidate>;
  readonly elected: { readonly view: number; readonly leaderId: string; readonly proposalNumber: number } | undefined;
}

export const INITIAL_ELECTION_STATE: ElectionState = {
  electing: false, lastAttemptedView: -1, lastInstalledView: -1, viewChanges: new Set(), prepareOks: new Map(),
  accepted: undefined, accepts: new Map(), proposals: new Map(), elected: undefined,
};

export function majorityOf(clusterSize: number): number {
  return Math.floor(clusterSize / 2) + 1;
}

/** The voter that runs the prepare phase of `view`. */
export function leaderOfElections(view: number, voters: readonly string[]): string | undefined {
  const sorted = [...new Set(voters)].sort();
  return sorted.length === 0 ? undefined : sorted[view % sorted.length];
}

/**
 * The best leader among candidates: epoch number, writer checkpoint (each higher first), then not
 * the resigning leader, higher chaser checkpoint, higher priority, higher instance id. (The
 * original ranks the chaser before resignation; the chaser is written about once a second, so
 * with it first a resigning leader whose chaser happened to be ahead would win again.) Then, if
 * the node that led the best candidate's epoch is itself a candidate with the same log and is not
 * resigning, it is preferred: leadership does not move without need.
 */
export function bestCandidate(candidates: readonly Candidate[], resigningLeaderId?: string): Candidate | undefined {
  const resigning = (c: Candidate): number => Number(c.resigning === true || c.instanceId === resigningLeaderId);
  const ranked = [...candidates].sort((a, b) =>
    b.epochNumber - a.epochNumber
    || b.writerCheckpoint - a.writerCheckpoint
    || resigning(a) - resigning(b)
    || b.chaserCheckpoint - a.chaserCheckpoint
    || b.nodePriority - a.nodePriority
    || (b.instanceId < a.instanceId ? -1 : b.instanceId > a.instanceId ? 1 : 0));
  const best = ranked[0];
  if (best === undefined) return undefined;
  const previous = candidates.find((c) => c.instanceId === best.epochLeaderInstanceId);
  if (previous !== undefined && resigning(previous) === 0
    && previous.epochNumber === best.epochNumber && previous.epochId === best.epochId
    && previous.writerCheckpoint === best.writerCheckpoint) {
    return previous;
  }
  return best;
}

/** Whether `self` may accept `candidate`: it must not be behind (epoch, then writer checkpoint). */
export function isLegitimate(candidate: Candidate, self: Candidate): boolean {
  if (candidate.epochNumber !== self.epochNumber) return candidate.epochNumber > self.epochNumber;
  return candidate.writerCheckpoint >= self.writerCheckpoint;
}

function proposalKey(leaderId: string, proposalNumber: number): string {
  return `${leaderId}/${proposalNumber}`;
}

type Step = { state: ElectionState; effects: ElectionEffect[] };

export function step(state: ElectionState, input: ElectionInput, ctx: ElectionContext): Step {
  const out: Step = { state, effects: [] };
  switch (input.kind) {
    case 'start':
      shiftToView(out, state.lastAttemptedView + 1, ctx);
      return out;
    case 'leader-found':
      out.state = { ...state, electing: false };
      return out;
    case 'timeout':
      if (out.state.electing && input.view === out.state.lastAttemptedView) shiftToView(out, input.view + 1, ctx);
      return out;
    case 'message':
      onMessage(out, input.message, ctx);
      return out;
  }
}

function shiftToView(out: Step, view: number, ctx: ElectionContext): void {
  out.state = {
    ...out.state, electing: true, lastAttemptedView: view, viewChanges: new Set([ctx.self.instanceId]),
    prepareOks: new Map(), accepted: undefined, accepts: new Map(), proposals: new Map(),
  };
  out.effects.push({ kind: 'broadcast', message: { type: 'ViewChange', from: ctx.self.instanceId, view } });
  out.effects.push({ kind: 'schedule-timeout', view, delayMs: ctx.electionTimeoutMs });
  checkViewChanges(out, ctx);
}

function onMessage(out: Step, message: ElectionMessage, ctx: ElectionContext): void {
  if (message.from === ctx.self.instanceId) return;
  // A message of a later view pulls this node into that view.
  if (message.view > out.state.lastAttemptedView) shiftToView(out, message.view, ctx);
  if (message.view !== out.state.lastAttemptedView) return;
  switch (message.type) {
    case 'ViewChange': {
      const viewChanges = new Set(out.state.viewChanges);
      viewChanges.add(message.from);
      out.state = { ...out.state, viewChanges };
      checkViewChanges(out, ctx);
      return;
    }
    case 'Prepare':
      if (message.from !== leaderOfElections(message.view, ctx.voters)) return;
      out.effects.push({ kind: 'send', to: message.from, message: { type: 'PrepareOk', from: ctx.self.instanceId, view: message.view, candidate: ctx.self } });
      return;
    case 'PrepareOk':
      onPrepareOk(out, message.from, message.candidate, ctx);
      return;
    case 'Proposal':
      onProposal(out, message, ctx);
      return;
    case 'Accept':
      onAccept(out, message.from, message.leaderId, message.proposalNumber, ctx);
      return;
  }
}

function checkViewChanges(out: Step, ctx: ElectionContext): void {
  const s = out.state;
  if (!s.electing || s.viewChanges.size < majorityOf(ctx.clusterSize) || s.lastInstalledView >= s.lastAttemptedView) return;
  const view = s.lastAttemptedView;
  out.state = { ...s, lastInstalledView: view };
  if (leaderOfElections(view, ctx.voters) !== ctx.self.instanceId) return;
  out.state = { ...out.state, prepareOks: new Map([[ctx.self.instanceId, ctx.self]]) };
  out.effects.push({ kind: 'broadcast', message: { type: 'Prepare', from: ctx.self.instanceId, view } });
  checkPrepareOks(out, ctx);
}

function onPrepareOk(out: Step, from: string, candidate: Candidate, ctx: ElectionContext): void {
  const s = out.state;
  if (!s.electing || leaderOfElections(s.lastAttemptedView, ctx.voters) !== ctx.self.instanceId || s.prepareOks.size === 0) return;
  if (s.proposals.size > 0) return; // proposed already in this view
  const prepareOks = new Map(s.prepareOks);
  prepareOks.set(from, candidate);
  out.state = { ...s, prepareOks };
  checkPrepareOks(out, ctx);
}

function checkPrepareOks(out: Step, ctx: ElectionContext): void {
  const s = out.state;
  if (s.prepareOks.size < majorityOf(ctx.clusterSize) || s.proposals.size > 0) return;
  const candidates = [...s.prepareOks.values()];
  const leader = bestCandidate(candidates, ctx.resigningLeaderId);
  if (leader === undefined) return;
  // A resigning leader is chosen only once every alive voter has answered: a majority that holds
  // it and a replica still catching up would elect it again (its log is ahead), although another
  // alive voter has caught up and ranks above it. A voter gossip no longer shows alive is not
  // waited for; an alive one that does not answer lets the view time out into the next one.
  const resigning = leader.resigning === true || leader.instanceId === ctx.resigningLeaderId;
  if (resigning && ctx.voters.some((voter) => !s.prepareOks.has(voter))) return;
  const proposalNumber = Math.max(...candidates.map((c) => Math.max(c.epochNumber, c.proposalNumber))) + 1;
  const view = s.lastAttemptedView;
  const proposal: ElectionMessage = { type: 'Proposal', from: ctx.self.instanceId, view, leader, proposalNumber };
  out.state = { ...s, proposals: new Map([[proposalKey(leader.instanceId, proposalNumber), leader]]) };
  out.effects.push({ kind: 'broadcast', message: proposal });
  acceptProposal(out, leader, proposalNumber, ctx);
}

function onProposal(out: Step, message: Extract<ElectionMessage, { type: 'Proposal' }>, ctx: ElectionContext): void {
  if (message.from !== leaderOfElections(message.view, ctx.voters)) return;
  const key = proposalKey(message.leader.instanceId, message.proposalNumber);
  out.state = { ...out.state, proposals: new Map(out.state.proposals).set(key, message.leader) };
  acceptProposal(out, message.leader, message.proposalNumber, ctx);
  checkAccepts(out, ctx);
}

function acceptProposal(out: Step, leader: Candidate, proposalNumber: number, ctx: ElectionContext): void {
  const s = out.state;
  if (!s.electing || s.accepted !== undefined) return; // one proposal per view
  if (leader.instanceId !== ctx.self.instanceId && !isLegitimate(leader, ctx.self)) return;
  if (proposalNumber <= ctx.self.proposalNumber) return; // a stale proposal
  out.state = { ...s, accepted: { leader, proposalNumber } };
  out.effects.push({ kind: 'persist-proposal', proposalNumber });
  const view = s.lastAttemptedView;
  out.effects.push({ kind: 'broadcast', message: { type: 'Accept', from: ctx.self.instanceId, view, leaderId: leader.instanceId, proposalNumber } });
  recordAccept(out, ctx.self.instanceId, leader.instanceId, proposalNumber);
  checkAccepts(out, ctx);
}

function onAccept(out: Step, from: string, leaderId: string, proposalNumber: number, ctx: ElectionContext): void {
  recordAccept(out, from, leaderId, proposalNumber);
  checkAccepts(out, ctx);
}

function recordAccept(out: Step, from: string, leaderId: string, proposalNumber: number): void {
  const key = proposalKey(leaderId, proposalNumber);
  const accepts = new Map(out.state.accepts);
  accepts.set(key, new Set([...(accepts.get(key) ?? []), from]));
  out.state = { ...out.state, accepts };
}

function checkAccepts(out: Step, ctx: ElectionContext): void {
  const s = out.state;
  if (!s.electing) return;
  for (const [key, voters] of s.accepts) {
    if (voters.size < majorityOf(ctx.clusterSize)) continue;
    const leader = s.proposals.get(key);
    if (leader === undefined) continue; // the proposal itself has not arrived yet
    const proposalNumber = Number(key.slice(key.lastIndexOf('/') + 1));
    out.state = { ...s, electing: false, elected: { view: s.lastAttemptedView, leaderId: leader.instanceId, proposalNumber } };
    out.effects.push({ kind: 'elected', view: s.lastAttemptedView, leader, proposalNumber });
    return;
  }
}

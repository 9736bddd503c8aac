/**
 * Cluster behaviour of the streams API that clients see:
 * - `ES-RequireLeader: true` (also `ES-RequiresMaster`, `ES-RequireMaster`, and the `SVC-`
 *   spellings) on a node that is not the leader answers 307 with the same path on the leader;
 *   while no leader is known (an election, a resignation) the request waits for one, and is
 *   answered 503 only when none is known within the node's write time;
 * - a read-only replica refuses writes, naming the leader to send them to.
 * Other writes to a follower are forwarded to the leader by the database layer (cluster-db.ts).
 */
import type { FastifyInstance } from 'fastify';
import { readRequiresMaster } from './streams/request-headers.js';
import { sendStatus } from './streams/stream-http.js';
import { RETRY_AFTER_SECONDS } from './error-handler.js';

export interface LeaderRouting {
  /** undefined when this node is the leader; the leader's client URL (`http://host:port`), or null when none is known. */
  leaderUrl(): string | null | undefined;
  readonly readOnlyReplica: boolean;
  /** Resolves once a leader is known, or when the node stops waiting for one (bounded). */
  whenLeaderKnown?(): Promise<void>;
}

/** The leader's URL, waiting through a hand-over when none is known right now. */
export async function currentLeaderUrl(routing: LeaderRouting): Promise<string | null | undefined> {
  const leader = routing.leaderUrl();
  if (leader !== null || routing.whenLeaderKnown === undefined) return leader;
  await routing.whenLeaderKnown();
  return routing.leaderUrl();
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function registerLeaderRouting(app: FastifyInstance, routing: LeaderRouting): void {
  app.addHook('preHandler', async (request, reply) => {
    if (!request.url.startsWith('/streams/')) return;
    let requiresLeader = false;
    try {
      requiresLeader = readRequiresMaster(request);
    } catch {
      return; // a malformed header: the route answers 400
    }
    const write = !READS.has(request.method);
    if (!requiresLeader && !(write && routing.readOnlyReplica)) return;
    if (write && routing.readOnlyReplica && !requiresLeader) {
      const leader = routing.leaderUrl();
      if (leader === undefined) return;
      const where = leader === null ? 'no leader is known right now' : `send them to the leader at ${leader}`;
      sendStatus(reply, 400, 'Bad Request', `This node is a read-only replica and accepts no writes; ${where}.`);
      return reply;
    }
    const leader = await currentLeaderUrl(routing);
    if (leader === undefined) return;
    if (leader === null) {
      reply.header('retry-after', RETRY_AFTER_SECONDS);
      sendStatus(reply, 503, 'Server Is Not Ready', 'No leader is known right now.');
      return reply;
    }
    reply.header('location', `${leader}${request.url}`);
    sendStatus(reply, 307, 'Temporary Redirect', `Not the leader: ${leader}${request.url}`);
    return reply;
  });
}

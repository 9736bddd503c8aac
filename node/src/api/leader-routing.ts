/**
 * Cluster behaviour of the streams API that clients see:
 * - `ES-RequireLeader: true` (also `ES-RequiresMaster`, `ES-RequireMaster`, and the `SVC-`
 *   spellings) on a node that is not the leader answers 307 with the same path on the leader
 *   (503 while no leader is known);
 * - a read-only replica refuses writes, naming the leader to send them to.
 * Other writes to a follower are forwarded to the leader by the database layer (cluster-db.ts).
 */
import type { FastifyInstance } from 'fastify';
import { readRequiresMaster } from './streams/request-headers.js';
import { sendStatus } from './streams/stream-http.js';

export interface LeaderRouting {
  /** undefined when this node is the leader; the leader's client URL (`http://host:port`), or null when none is known. */
  leaderUrl(): string | null | undefined;
  readonly readOnlyReplica: boolean;
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function registerLeaderRouting(app: FastifyInstance, routing: LeaderRouting): void {
  app.addHook('preHandler', (request, reply, done) => {
    if (!request.url.startsWith('/streams/')) return done();
    let requiresLeader = false;
    try {
      requiresLeader = readRequiresMaster(request);
    } catch {
      return done(); // a malformed header: the route answers 400
    }
    const write = !READS.has(request.method);
    if (!requiresLeader && !(write && routing.readOnlyReplica)) return done();
    const leader = routing.leaderUrl();
    if (leader === undefined) return done();
    if (write && routing.readOnlyReplica && !requiresLeader) {
      const where = leader === null ? 'no leader is known right now' : `send them to the leader at ${leader}`;
      sendStatus(reply, 400, 'Bad Request', `This node is a read-only replica and accepts no writes; ${where}.`);
      return done();
    }
    if (leader === null) {
      sendStatus(reply, 503, 'Server Is Not Ready', 'No leader is known right now.');
      return done();
    }
    reply.header('location', `${leader}${request.url}`);
    sendStatus(reply, 307, 'Temporary Redirect', `Not the leader: ${leader}${request.url}`);
    done();
  });
}

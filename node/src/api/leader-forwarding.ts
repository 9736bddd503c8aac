/**
 * Leader-only services behind any node: persistent subscriptions, projections and auto-scavenge run on the
 * leader alone (they are started and stopped with leadership), and EventStoreDB forwards their
 * HTTP requests to the leader when a follower receives them. This hook does the same before the
 * body is read: the request goes to the leader as it came (method, path, headers, including Host,
 * so links in the answer still point at this node and keep being forwarded), and the leader's
 * answer streams back unchanged. While no leader is known (an election, a resignation) the
 * request waits for one, bounded; still none: 503. An unreachable leader is 503 with the reason.
 */
import http from 'node:http';
import https from 'node:https';
import type { FastifyInstance } from 'fastify';
import { currentLeaderUrl, type LeaderRouting } from './leader-routing.js';
import { sendStatus } from './streams/stream-http.js';
import { peerLookup } from '../platform/peer-lookup.js';
import { RETRY_AFTER_SECONDS } from './error-handler.js';

/** The paths served by the leader only. */
export const LEADER_ONLY_PREFIXES = ['/subscriptions', '/projections', '/projection', '/auto-scavenge'] as const;

/** Connection-level headers a proxy must not pass on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export interface LeaderForwardingOptions {
  /** Options for requests to an https leader at `host` (trusted roots, this node's certificate). */
  readonly tls?: (host: string) => https.RequestOptions;
}

export function isLeaderOnlyPath(url: string): boolean {
  const path = url.split('?', 1)[0]!;
  return LEADER_ONLY_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));
}

function withoutHopByHop(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
  return out;
}

export function registerLeaderForwarding(app: FastifyInstance, routing: LeaderRouting, options: LeaderForwardingOptions = {}): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!isLeaderOnlyPath(request.url)) return;
    const leader = await currentLeaderUrl(routing);
    if (leader === undefined) return; // this node leads
    if (leader === null) {
      reply.header('retry-after', RETRY_AFTER_SECONDS);
      sendStatus(reply, 503, 'Server Is Not Ready', 'No leader is known right now; persistent subscriptions, projections and auto-scavenge run on the leader.');
      return reply;
    }
    const target = new URL(request.url, leader);
    reply.hijack();
    const response = reply.raw;
    const headers = withoutHopByHop(request.headers);
    const secure = target.protocol === 'https:';
    const upstream = (secure ? https : http).request(target, {
      method: request.method, headers, lookup: peerLookup().lookup, ...(secure ? options.tls?.(target.hostname) ?? {} : {}),
    }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopByHop(answer.headers));
      answer.pipe(response);
    });
    upstream.on('error', (err) => {
      request.log.warn({ err, leader }, 'forwarding to the leader failed');
      if (!response.headersSent) {
        response.writeHead(503, 'Server Is Not Ready', { 'content-type': 'text/plain; charset=utf-8', 'retry-after': RETRY_AFTER_SECONDS });
        response.end(`The leader at ${leader} could not be reached: ${err.message}`);
      } else {
        response.destroy();
      }
    });
    response.on('close', () => { if (!response.writableFinished) upstream.destroy(); });
    request.raw.pipe(upstream);
    return reply;
  });
}

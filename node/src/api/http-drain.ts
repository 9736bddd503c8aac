/**
 * Connection draining before the HTTP server closes. Closing at once races clients: a keep-alive
 * connection that looks idle here may carry a request already on its way, and that request is
 * lost (the client sees a reset and cannot know whether it was carried out). While draining:
 * - every request is still served, and its answer says `Connection: close`, so the client ends
 *   that connection itself after the answer and opens a new one (in Kubernetes through the
 *   Service, to a pod that is not terminating);
 * - a connection left idle by an earlier keep-alive answer is not closed by the server until it
 *   has been idle for `idleMs`: with `idleMs` at the keep-alive timeout the server announces
 *   (`Keep-Alive: timeout=N`), a client that honours it (undici, Go, browsers) has closed the
 *   connection first.
 * The drain ends when every connection is closed or idle that long (and none busy), or after
 * `maxMs`; then the server closes (see main.ts).
 */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

interface Connection {
  busy: number;
  idleSinceMs: number;
}

interface DrainState {
  draining: boolean;
  readonly connections: Map<Socket, Connection>;
  /** Drain started: long polls answer now rather than hold their connection. */
  readonly onDrain: () => void;
}

const states = new WeakMap<FastifyInstance, DrainState>();

/** Tracks the server's connections and marks answers `Connection: close` once draining starts. */
export function registerHttpDrain(app: FastifyInstance, options: { onDrain?: () => void; nowMs?: () => number } = {}): void {
  const nowMs = options.nowMs ?? Date.now;
  const state: DrainState = { draining: false, connections: new Map(), onDrain: options.onDrain ?? (() => {}) };
  states.set(app, state);
  const track = (socket: Socket): Connection => {
    let connection = state.connections.get(socket);
    if (connection === undefined) {
      connection = { busy: 0, idleSinceMs: nowMs() };
      state.connections.set(socket, connection);
      socket.once('close', () => state.connections.delete(socket));
    }
    return connection;
  };
  // TLS servers report the TLS socket on 'secureConnection', which is also the request's socket.
  const secure = typeof (app.server as { setSecureContext?: unknown }).setSecureContext === 'function';
  app.server.on(secure ? 'secureConnection' : 'connection', (socket: Socket) => track(socket));
  app.addHook('onRequest', async (request, reply) => {
    const connection = track(request.raw.socket);
    connection.busy += 1;
    // 'close' also fires for hijacked replies (forwarded to the leader) and aborted requests.
    reply.raw.once('close', () => {
      connection.busy -= 1;
      connection.idleSinceMs = nowMs();
    });
    // HTTP/2 has no Connection header: its sessions get GOAWAY instead (transport/http2-multiplex.ts).
    if (state.draining && request.raw.httpVersionMajor < 2) reply.header('connection', 'close');
  });
  // Requests still arriving on open connections while the server closes are served the same way.
  app.addHook('preClose', async () => { state.draining = true; });
}

/** Starts draining; resolves once every connection is closed or idle for `idleMs`, at most after `maxMs`. */
export async function drainHttp(app: FastifyInstance, options: { idleMs: number; maxMs: number }, nowMs: () => number = Date.now): Promise<void> {
  const state = states.get(app);
  if (state === undefined) return;
  state.draining = true;
  state.onDrain();
  const startedMs = nowMs();
  const settled = (): boolean => [...state.connections.values()].every((c) => c.busy === 0 && nowMs() - c.idleSinceMs >= options.idleMs);
  while (!settled() && nowMs() - startedMs < options.maxMs) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

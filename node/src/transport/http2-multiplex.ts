/**
 * HTTP/2 beside HTTP/1.1 on the node's one port, as the original serves gRPC and its HTTP API on
 * 2113. The listening server stays fastify's own (http or https); this module takes over its
 * connection hand-off:
 * - with TLS, ALPN decides: a connection that negotiated `h2` goes to an HTTP/2 server, any
 *   other (`http/1.1`, or none) to the HTTP/1.1 server as before;
 * - without TLS (--insecure), the first bytes decide: the HTTP/2 client connection preface
 *   (h2c with prior knowledge, what gRPC clients send) goes to HTTP/2, anything else to
 *   HTTP/1.1. The bytes read to decide are put back on the socket before the hand-off.
 * HTTP/2 requests are routed one by one (`onRequest`), not by connection: curl negotiating `h2`
 * and asking `/health/live` on the same connection as a gRPC call is fine.
 *
 * The HTTP/2 server never listens; it only gets connections. It answers the clients' keep-alive
 * pings itself (Node's HTTP/2 stack does), and pings idle sessions every `keepAliveIntervalMs`,
 * closing those whose answer does not come within `keepAliveTimeoutMs`.
 */
import http2 from 'node:http2';
import { Duplex } from 'node:stream';
import type { Server as NetServer, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** How long a new cleartext connection may stay silent before it is closed. */
const SILENT_CONNECTION_TIMEOUT_MS = 60_000;

export type Http2RequestHandler = (request: http2.Http2ServerRequest, response: http2.Http2ServerResponse) => void;

export interface Http2MultiplexOptions {
  readonly secure: boolean;
  readonly log: Logger;
  readonly onRequest: Http2RequestHandler;
  /** Server-side keep-alive ping interval (the original's default: 10 s). */
  readonly keepAliveIntervalMs?: number;
  /** A ping unanswered this long closes the session (the original's default: 10 s). */
  readonly keepAliveTimeoutMs?: number;
}

export interface Http2Multiplex {
  /** Every open HTTP/2 session: closed gracefully (GOAWAY) when the node stops. */
  readonly sessions: ReadonlySet<http2.ServerHttp2Session>;
  /**
   * Sends GOAWAY to every session: calls in flight may finish for `graceMs`, then the sessions
   * are destroyed (a live subscription never ends by itself; its client reconnects elsewhere).
   */
  closeSessions(graceMs: number): void;
}

/** What a connection's first bytes say: HTTP/2, HTTP/1.1, or not yet known (need more bytes). */
export function classifyPreface(firstBytes: Buffer): 'h2' | 'http1' | 'undecided' {
  const n = Math.min(firstBytes.length, PREFACE.length);
  if (firstBytes.subarray(0, n).compare(PREFACE.subarray(0, n)) !== 0) return 'http1';
  return n === PREFACE.length ? 'h2' : 'undecided';
}

export function attachHttp2(server: NetServer, options: Http2MultiplexOptions): Http2Multiplex {
  const intervalMs = options.keepAliveIntervalMs ?? 10_000;
  const timeoutMs = options.keepAliveTimeoutMs ?? 10_000;
  const log = options.log.child({ component: 'http2' });
  const h2 = options.secure
    ? http2.createSecureServer({ allowHTTP1: false }, options.onRequest)
    : http2.createServer({}, options.onRequest);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    const timer = setInterval(() => {
      if (session.closed || session.destroyed) return;
      const pingTimeout = setTimeout(() => {
        log.debug('keep-alive ping unanswered: closing the HTTP/2 session');
        session.destroy();
      }, timeoutMs);
      pingTimeout.unref();
      const sent = session.ping((err) => {
        clearTimeout(pingTimeout);
        if (err !== null && !session.destroyed) session.destroy();
      });
      if (!sent) clearTimeout(pingTimeout);
    }, intervalMs);
    timer.unref();
    session.once('close', () => {
      clearInterval(timer);
      sessions.delete(session);
    });
    session.on('error', (err) => log.debug({ err }, 'HTTP/2 session error'));
  });

  // The HTTP/1.1 hand-off: the listeners the server registered for its own connections.
  const event = options.secure ? 'secureConnection' : 'connection';
  const http1Listeners = server.listeners(event) as ((socket: Socket) => void)[];
  server.removeAllListeners(event);
  const toHttp1 = (socket: Socket): void => {
    for (const listener of http1Listeners) listener.call(server, socket);
  };
  if (options.secure) {
    server.on(event, (socket: TLSSocket) => {
      if (socket.alpnProtocol === 'h2') h2.emit('secureConnection', socket);
      else toHttp1(socket);
    });
  } else {
    // Node's HTTP/2 session reads the socket's native handle, past bytes already read in JS: it
    // gets a JS stream that replays them first (Node wraps such a stream itself).
    server.on(event, (socket: Socket) => sniff(socket, toHttp1, (s) => h2.emit('connection', new ReplayingSocket(s))));
  }
  return {
    sessions,
    closeSessions(graceMs) {
      for (const session of sessions) {
        if (!session.closed) session.close();
        const timer = setTimeout(() => session.destroy(), graceMs);
        timer.unref();
        session.once('close', () => clearTimeout(timer));
      }
    },
  };
}

/** Reads until the preface decides, puts the bytes back, and hands the socket on. */
function sniff(socket: Socket, toHttp1: (socket: Socket) => void, toHttp2: (socket: Socket) => void): void {
  let seen = Buffer.alloc(0);
  // A connection that sends nothing is closed as the HTTP/1.1 server closes one without headers.
  const silent = setTimeout(() => socket.destroy(), SILENT_CONNECTION_TIMEOUT_MS);
  silent.unref();
  const onData = (chunk: Buffer): void => {
    seen = Buffer.concat([seen, chunk]);
    const kind = classifyPreface(seen);
    if (kind === 'undecided') return;
    clearTimeout(silent);
    socket.off('data', onData);
    socket.off('close', onClose);
    socket.pause();
    socket.unshift(seen);
    if (kind === 'h2') toHttp2(socket);
    else toHttp1(socket);
    socket.resume();
  };
  const onClose = (): void => {
    clearTimeout(silent);
    socket.off('data', onData);
  };
  socket.on('data', onData);
  socket.once('close', onClose);
}

/**
 * A socket seen through a JS stream: what was put back on it (the preface) is read first. Reads
 * follow the HTTP/2 session's demand (the socket pauses while the session does not read), so a
 * slow session applies back-pressure to the client as on a plain socket.
 */
class ReplayingSocket extends Duplex {
  constructor(private readonly socket: Socket) {
    super({ allowHalfOpen: false });
    socket.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) socket.pause();
    });
    socket.once('end', () => this.push(null));
    socket.once('error', (err) => this.destroy(err));
    socket.once('close', () => this.destroy());
  }

  get remoteAddress(): string | undefined { return this.socket.remoteAddress; }
  get remotePort(): number | undefined { return this.socket.remotePort; }
  get remoteFamily(): string | undefined { return this.socket.remoteFamily; }
  get localAddress(): string | undefined { return this.socket.localAddress; }
  get localPort(): number | undefined { return this.socket.localPort; }
  setNoDelay(noDelay?: boolean): this { this.socket.setNoDelay(noDelay); return this; }
  setKeepAlive(enable?: boolean, delayMs?: number): this { this.socket.setKeepAlive(enable, delayMs); return this; }
  setTimeout(timeoutMs: number, callback?: () => void): this { this.socket.setTimeout(timeoutMs, callback); return this; }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.socket.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.socket.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.socket.destroy();
    callback(error);
  }
}

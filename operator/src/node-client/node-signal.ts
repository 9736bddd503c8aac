/**
 * SIGHUP to a node through the pods/exec API (tls.reload: Signal). The node image's launcher
 * execs node, so the node is PID 1 of its container; `sh -c 'kill -HUP 1'` runs in the same
 * container (the shell's builtin kill, no extra binary). Behind a small interface so the
 * controller's tests pass a fake; the real one is @kubernetes/client-node's Exec over a
 * WebSocket (ws) whose failed upgrade is read here: the apiserver's answer (a V1Status with the
 * reason, e.g. RBAC's "cannot create resource pods/exec") becomes the error's message, with a
 * stable code, instead of the bare ErrorEvent client-node rejects with.
 */
import { Writable } from 'node:stream';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { describeError } from '../runtime/describe-error.js';

export interface NodeSignaller {
  /** Sends SIGHUP to the node of `pod`; rejects (with a NodeSignalError) when the exec fails or the command fails. */
  hangUp(namespace: string, pod: string): Promise<void>;
}

export const NODE_CONTAINER = 'eventdb';
export const HANG_UP_COMMAND: readonly string[] = ['sh', '-c', 'kill -HUP 1'];

export type NodeSignalErrorCode =
  /** The apiserver refused the exec: 401 or 403 (RBAC without pods/exec create). */
  | 'EDBOP_EXEC_DENIED'
  /** The WebSocket upgrade failed otherwise (another HTTP answer, TLS, connection). */
  | 'EDBOP_EXEC_UPGRADE_FAILED'
  /** The command ran and failed (its V1Status Failure). */
  | 'EDBOP_EXEC_COMMAND_FAILED'
  /** The stream closed before the command's status came. */
  | 'EDBOP_EXEC_CLOSED'
  /** No status within the time limit. */
  | 'EDBOP_EXEC_TIMEOUT';

export class NodeSignalError extends Error {
  override readonly name = 'NodeSignalError';
  constructor(
    readonly code: NodeSignalErrorCode,
    message: string,
    /** The HTTP status of a refused upgrade. */
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

/** The failed upgrade's answer in words: its V1Status when it sent one, else the first of its body. */
export function upgradeRefusal(statusCode: number, body: string): NodeSignalError {
  let detail = body.trim().slice(0, 500);
  try {
    const parsed = JSON.parse(body) as unknown;
    if (typeof parsed === 'object' && parsed !== null) detail = describeError(parsed);
  } catch {
    // not JSON: the text itself
  }
  const code: NodeSignalErrorCode = statusCode === 401 || statusCode === 403 ? 'EDBOP_EXEC_DENIED' : 'EDBOP_EXEC_UPGRADE_FAILED';
  return new NodeSignalError(code, `the apiserver answered the exec upgrade with HTTP ${statusCode}${detail === '' ? '' : `: ${detail}`}`, statusCode);
}

const MAX_BODY_BYTES = 8192;
const BODY_WAIT_MS = 2000;
/** channel.k8s.io framing: the first byte of a binary message is its stream; v5 adds the close frame. */
const CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const CLOSE_STREAM = 255;

type WebSocketConnector = NonNullable<ConstructorParameters<typeof Exec>[1]>;

/**
 * What client-node's Exec needs to open its stream (its WebSocketInterface): a WebSocket to the
 * apiserver with the kubeconfig's TLS and credentials (a service account token in the cluster, a
 * client certificate or token outside), whose refused upgrade rejects with the apiserver's answer.
 */
export class ReadingConnector implements WebSocketConnector {
  readonly #kubeConfig: KubeConfig;
  readonly #timeoutMs: number;
  /** The socket of the last connect (one connector per exec). */
  socket: WebSocket | undefined;

  constructor(kubeConfig: KubeConfig, timeoutMs: number) {
    this.#kubeConfig = kubeConfig;
    this.#timeoutMs = timeoutMs;
  }

  async connect(path: string, _textHandler: ((text: string) => boolean) | null, binaryHandler: ((stream: number, buff: Buffer) => boolean) | null): Promise<WebSocket> {
    const cluster = this.#kubeConfig.getCurrentCluster();
    if (cluster === null) throw new NodeSignalError('EDBOP_EXEC_UPGRADE_FAILED', 'the kubeconfig has no current cluster');
    const server = cluster.server.replace(/\/+$/, '');
    const uri = `${server.startsWith('https://') ? 'wss' : 'ws'}://${server.replace(/^https?:\/\//, '')}${path}`;
    const options: WebSocket.ClientOptions = {};
    await this.#kubeConfig.applyToHTTPSOptions(options as never);
    const ws = new WebSocket(uri, CHANNEL_PROTOCOLS, { ...options, handshakeTimeout: this.#timeoutMs });
    this.socket = ws;
    return await new Promise<WebSocket>((resolve, reject) => {
      let refusal: NodeSignalError | undefined;
      ws.on('unexpected-response', (_request: ClientRequest, response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = (): void => {
          clearTimeout(timer);
          refusal ??= upgradeRefusal(response.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'));
          // ends the handshake: 'error' follows, and the refusal read here is the error
          ws.terminate();
        };
        const timer = setTimeout(finish, BODY_WAIT_MS);
        response.on('data', (chunk: Buffer) => {
          if (size < MAX_BODY_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        response.once('end', finish);
        response.once('error', finish);
      });
      ws.once('open', () => resolve(ws));
      ws.on('error', (err: Error) => {
        if (ws.readyState !== WebSocket.OPEN) reject(refusal ?? new NodeSignalError('EDBOP_EXEC_UPGRADE_FAILED', `the exec upgrade failed: ${describeError(err)}`));
      });
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        if (!isBinary || data.length === 0 || binaryHandler === null) return;
        const stream = data.readUInt8(0);
        if (stream === CLOSE_STREAM) return;
        if (!binaryHandler(stream, data.subarray(1))) ws.close();
      });
    });
  }
}

export class ExecNodeSignaller implements NodeSignaller {
  readonly #kubeConfig: KubeConfig;
  readonly #timeoutMs: number;

  constructor(kubeConfig: KubeConfig, timeoutMs = 15_000) {
    this.#kubeConfig = kubeConfig;
    this.#timeoutMs = timeoutMs;
  }

  hangUp(namespace: string, pod: string): Promise<void> {
    const timeoutMs = this.#timeoutMs;
    const connector = new ReadingConnector(this.#kubeConfig, timeoutMs);
    const exec = new Exec(this.#kubeConfig, connector);
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let stderr = '';
      const settle = (err?: NodeSignalError): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err === undefined) resolve();
        else {
          connector.socket?.terminate();
          reject(err);
        }
      };
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          stderr += chunk.toString('utf8');
          done();
        },
      });
      const timer = setTimeout(() => settle(new NodeSignalError('EDBOP_EXEC_TIMEOUT', `exec in ${pod}: no status within ${timeoutMs} ms`)), timeoutMs);
      const onStatus = (status: V1Status): void => {
        if (status.status === 'Success') settle();
        else settle(new NodeSignalError('EDBOP_EXEC_COMMAND_FAILED', `'${HANG_UP_COMMAND.join(' ')}' in ${pod} failed: ${describeError(status)}${stderr.trim() === '' ? '' : `; stderr: ${stderr.trim().slice(0, 300)}`}`));
      };
      exec
        .exec(namespace, pod, NODE_CONTAINER, [...HANG_UP_COMMAND], null, sink, null, false, onStatus)
        .then((ws) => {
          ws.on('close', (code: number, reason: Buffer) => {
            // the status comes before the close; a close without one is a failure
            setImmediate(() => settle(new NodeSignalError('EDBOP_EXEC_CLOSED', `exec in ${pod}: the stream closed (code ${code}${reason.length === 0 ? '' : `: ${reason.toString('utf8')}`}) before the command's status`)));
          });
        })
        .catch((err: unknown) => settle(err instanceof NodeSignalError ? err : new NodeSignalError('EDBOP_EXEC_UPGRADE_FAILED', `exec in ${pod}: ${describeError(err)}`)));
    });
  }
}

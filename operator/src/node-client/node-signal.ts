/**
 * SIGHUP to a node through the pods/exec API (tls.reload: Signal). The node image's launcher
 * execs node, so the node is PID 1 of its container; `sh -c 'kill -HUP 1'` runs in the same
 * container (the shell's builtin kill, no extra binary). Behind a small interface so the
 * controller's tests pass a fake; the real one is @kubernetes/client-node's Exec.
 */
import { Writable } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';

export interface NodeSignaller {
  /** Sends SIGHUP to the node of `pod`; rejects when the exec fails or the command fails. */
  hangUp(namespace: string, pod: string): Promise<void>;
}

export const NODE_CONTAINER = 'eventdb';
export const HANG_UP_COMMAND: readonly string[] = ['sh', '-c', 'kill -HUP 1'];

export class ExecNodeSignaller implements NodeSignaller {
  readonly #exec: Exec;
  readonly #timeoutMs: number;

  constructor(kubeConfig: KubeConfig, timeoutMs = 15_000) {
    this.#exec = new Exec(kubeConfig);
    this.#timeoutMs = timeoutMs;
  }

  hangUp(namespace: string, pod: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let stderr = '';
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          stderr += chunk.toString('utf8');
          done();
        },
      });
      const timer = setTimeout(() => reject(new Error(`exec in ${pod}: no status within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      const onStatus = (status: V1Status): void => {
        clearTimeout(timer);
        if (status.status === 'Success') resolve();
        else reject(new Error(`exec '${HANG_UP_COMMAND.join(' ')}' in ${pod} failed: ${status.message ?? status.reason ?? 'unknown'} ${stderr}`.trim()));
      };
      this.#exec
        .exec(namespace, pod, NODE_CONTAINER, [...HANG_UP_COMMAND], null, sink, null, false, onStatus)
        .catch((err: unknown) => {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        });
    });
  }
}

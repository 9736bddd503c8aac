/**
 * Spawns a real node process for integration tests and benches, the way the product starts it
 * (node/bin/eventdb, which sets the malloc environment and execs dist/node/src/main.js under
 * this Node), waits for its `ready` log line, and stops it with a signal. `make build` must have
 * run first.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';

// From the TypeScript source (vitest) or from the build itself (dist/test/support, e.g. benches).
export const MAIN_JS = import.meta.dirname.includes(`${sep}dist${sep}`)
  ? resolve(import.meta.dirname, '../../node/src/main.js')
  : resolve(import.meta.dirname, '../../dist/node/src/main.js');

/** The launcher (a shell script that execs Node: the child's pid is the node's). */
export const LAUNCHER = import.meta.dirname.includes(`${sep}dist${sep}`)
  ? resolve(import.meta.dirname, '../../../node/bin/eventdb')
  : resolve(import.meta.dirname, '../../node/bin/eventdb');

/** Spawns the launcher with `args`, under this process's Node. */
/** Spawns the launcher with `args`; `prefix` runs it through another command (`ip netns exec NS`). */
export function spawnLauncher(args: readonly string[], options: SpawnOptions = {}, prefix: readonly string[] = []): ChildProcess {
  const command = [...prefix, '/bin/sh', LAUNCHER, ...args];
  return spawn(command[0]!, command.slice(1), { ...options, env: { ...(options.env ?? process.env), NODE: process.execPath } });
}

export interface NodeProcess {
  readonly baseUrl: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** stdout and stderr lines so far. */
  readonly output: string[];
  /** Sends `signal` (default SIGTERM) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code once the process has exited by itself. */
  exited(): Promise<number | null>;
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Runs main.js with `args` and no port waiting; for startup failures. */
export function runNode(
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
): Promise<{ code: number | null; output: string }> {
  const child = spawnLauncher(args, {
    env: { ...process.env, ...env },
    stdio: 'pipe',
    ...(cwd === undefined ? {} : { cwd }),
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolveRun) => child.on('exit', (code) => resolveRun({ code, output })));
}

export async function startNode(
  options: {
    args?: string[];
    memDb?: boolean;
    env?: Record<string, string>;
    /** Default true: plain HTTP. false: the node serves TLS, `args` must name its certificates. */
    insecure?: boolean;
    /** A fixed port (default: a free one). */
    port?: number;
    /** Words before the node command (e.g. `ip netns exec <ns>`). */
    prefix?: readonly string[];
  } = {},
): Promise<NodeProcess> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run \`make build\` first`);
  const port = options.port ?? (await freePort());
  const args = [
    ...(options.memDb === false ? [] : ['--mem-db']),
    ...(options.insecure === false ? [] : ['--insecure']),
    '--http-port',
    String(port),
    ...(options.args ?? []),
  ];
  const child = spawnLauncher(args, {
    env: { ...process.env, ...options.env },
    stdio: 'pipe',
  }, options.prefix);
  const output: string[] = [];
  const exit = new Promise<number | null>((resolveExit) =>
    child.on('exit', (code) => resolveExit(code)),
  );
  const address = await new Promise<string>((resolveReady, reject) => {
    const timer = setTimeout(() => {
      // the caller gets no handle on a node that never became ready: stop it here, or it outlives the test
      child.kill('SIGKILL');
      reject(new Error(`node did not become ready:\n${output.join('\n')}`));
    }, 60_000);
    const onLine = (line: string): void => {
      output.push(line);
      if (line.includes('"msg":"ready"')) {
        clearTimeout(timer);
        resolveReady(String((JSON.parse(line) as { address: unknown }).address));
      }
    };
    let pending = '';
    const onData = (chunk: Buffer): void => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      lines.forEach(onLine);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`node exited with ${code} before ready:\n${output.join('\n')}`));
    });
  });
  const listening = new URL(address);
  const listeningPort = Number(listening.port);
  const host = listening.hostname === '0.0.0.0' ? '127.0.0.1' : listening.hostname;
  return {
    baseUrl: `${listening.protocol}//${host}:${listeningPort}`,
    port: listeningPort,
    child,
    output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exit;
    },
    exited: () => exit,
  };
}

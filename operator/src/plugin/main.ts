/**
 * `kubectl-eventdb` (kubectl finds it on PATH as `kubectl eventdb`): parses the command line,
 * connects with the user's kubeconfig, runs the verb. Exit codes: 0 ok, 1 failure or bad
 * verdict, 2 usage error. Started by operator/bin/kubectl-eventdb.
 */
import { readFileSync } from 'node:fs';
import { parseCommandLine, UsageError } from './args.js';
import { connect, PluginError } from './io.js';
import { runVerb, type Terminal } from './verbs.js';
import { KubeApiError } from '../runtime/kube-api.js';

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  let outcome;
  try {
    outcome = parseCommandLine(argv);
  } catch (err: unknown) {
    if (err instanceof UsageError) {
      process.stderr.write(`kubectl eventdb: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (outcome.kind === 'help') {
    process.stdout.write(`${outcome.text}\n`);
    return 0;
  }
  if (outcome.kind === 'version') {
    process.stdout.write(`kubectl-eventdb ${version()}\n`);
    return 0;
  }
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const term: Terminal = {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    tty: process.stdout.isTTY === true,
    signal: controller.signal,
    nowMs: () => Date.now(),
  };
  try {
    const io = connect({ context: outcome.command.context, namespace: outcome.command.namespace });
    try {
      return await runVerb(outcome.command, io, term);
    } finally {
      await io.close();
    }
  } catch (err: unknown) {
    if (err instanceof PluginError) process.stderr.write(`kubectl eventdb ${outcome.command.verb}: ${err.message}\n`);
    else if (err instanceof KubeApiError) process.stderr.write(`kubectl eventdb ${outcome.command.verb}: the Kubernetes API answered ${err.statusCode} ${err.reason}: ${err.message}\n`);
    else process.stderr.write(`kubectl eventdb ${outcome.command.verb}: ${(err as Error).message ?? String(err)}\n`);
    return 1;
  } finally {
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Port-forward sockets and watches may keep the loop alive; the verb is over.
    setTimeout(() => process.exit(code), 100).unref();
  },
  (err: unknown) => {
    process.stderr.write(`kubectl eventdb: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);

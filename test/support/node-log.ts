/** The JSON log lines a node process printed (its pino output), and waiting for one of them. */
import type { NodeProcess } from './node-process.js';

/** The node's log lines from index `from` on that are JSON objects. */
export function logLines(node: NodeProcess, from: number): Array<Record<string, unknown>> {
  return node.output.slice(from).flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/** The first log line from index `from` on whose `msg` is `msg` (a string) or matches it; polls until `timeoutMs`. */
export async function waitForLogLine(
  node: NodeProcess,
  from: number,
  msg: string | RegExp,
  timeoutMs = 10_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
    const found = logLines(node, from).find((l) => (typeof msg === 'string' ? l['msg'] === msg : msg.test(String(l['msg']))));
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no log line ${String(msg)} within ${timeoutMs} ms:\n${node.output.slice(from).join('\n')}`);
}

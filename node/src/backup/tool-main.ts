/**
 * Entry point of `eventdb backup` / `eventdb restore` when the launcher (node/bin/eventdb) sees
 * one of them as its first argument: the same program as the node, without loading the node's
 * modules (HTTP server, projections, cluster), which cost seconds of start-up on a busy machine.
 * `node dist/node/src/main.js backup ...` reaches the same code through main.ts.
 */
import { runTool } from './cli.js';

runTool(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`eventdb ${process.argv[2] ?? ''}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

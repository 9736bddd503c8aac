/**
 * Crash-test child: opens the engine on --dir and runs one scavenge (resuming any unfinished
 * one), logging JSON lines to stdout (including 'scavenge stage' transitions) until done or
 * killed. Exits 0 after a successful run.
 */
import pino from 'pino';
import { openEngine } from '../../node/src/storage/event-db.js';
import type { ScavengeListener } from '../../node/src/storage/scavenge/scavenge-types.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
}

const noop = async (): Promise<void> => {};
const listener: ScavengeListener = { started: noop, chunkExecuted: noop, chunksMerged: noop, indexExecuted: noop, completed: noop };

async function main(): Promise<void> {
  const dir = arg('dir', '');
  const log = pino({ level: 'info' });
  const db = await openEngine({
    dbPath: `${dir}/db`, indexPath: `${dir}/index`, memDb: false, chunkSizeBytes: Number(arg('chunk-size', '65536')),
    maxMemTableSize: Number(arg('max-mem-table-size', '2000')), maxEventSizeBytes: 1 << 20,
    streamExistenceFilterSizeBytes: 1 << 16, hashCollisionReadLimit: 100,
  }, { log, onFatal: (err) => { log.fatal({ err }, 'fatal'); process.exit(1); } });
  const handle = db.startScavenge(crypto.randomUUID(), {
    threads: Number(arg('threads', '1')), threshold: 0, throttlePercent: Number(arg('throttle', '100')), syncOnly: false,
  }, listener);
  const outcome = await handle.done;
  await db.close();
  process.exit(outcome.result === 'Success' ? 0 : 3);
}

main().catch((err: unknown) => {
  process.stderr.write(`scavenge driver failed: ${String((err as Error).stack ?? err)}\n`);
  process.exit(2);
});

/**
 * Crash-test child process: opens the engine on --dir and appends from many concurrent writers
 * until killed. Writer k appends to stream `w-k` with exact expected versions, so every event's
 * number is known; each acknowledged append is reported on stdout as one JSON line, only after
 * the engine resolved it (i.e. after fsync of data and writer.chk).
 */
import pino from 'pino';
import { openEngine } from '../../node/src/storage/event-db.js';

interface Args { dir: string; writers: number; chunkSizeBytes: number; maxMemTableSize: number; batch: number }

function parseArgs(argv: string[]): Args {
  const get = (name: string, dflt: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : dflt;
  };
  return {
    dir: get('dir', ''), writers: Number(get('writers', '32')), chunkSizeBytes: Number(get('chunk-size', '65536')),
    maxMemTableSize: Number(get('max-mem-table-size', '500')), batch: Number(get('batch', '3')),
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!args.dir) throw new Error('--dir is required');
  const log = pino({ level: 'warn' }, pino.destination(2));
  const db = await openEngine({
    dbPath: `${args.dir}/db`, indexPath: `${args.dir}/index`, memDb: false, chunkSizeBytes: args.chunkSizeBytes,
    maxMemTableSize: args.maxMemTableSize, maxEventSizeBytes: 1 << 20, streamExistenceFilterSizeBytes: 1 << 16, hashCollisionReadLimit: 100,
  }, { log, onFatal: (err) => { log.fatal({ err }, 'fatal'); process.exit(1); } });
  process.stdout.write(JSON.stringify({ ready: true }) + '\n');
  const writer = async (k: number): Promise<void> => {
    const stream = `w-${k}`;
    const state = await db.streamState(stream);
    let next = state.kind === 'exists' ? state.lastEventNumber + 1 : 0;
    for (;;) {
      const count = 1 + ((next + k) % args.batch);
      const events = Array.from({ length: count }, (_, i) => ({
        eventId: crypto.randomUUID(), eventType: 'Tick', isJson: true, metadata: Buffer.alloc(0),
        data: Buffer.from(JSON.stringify({ writer: k, n: next + i, pad: 'p'.repeat((next * 7 + k) % 300) })),
      }));
      const r = await db.append(stream, next - 1, events);
      if (r.kind !== 'success') throw new Error(`writer ${k}: unexpected ${JSON.stringify(r)}`);
      process.stdout.write(JSON.stringify({ stream, first: next, ids: events.map((e) => e.eventId) }) + '\n');
      next += count;
    }
  };
  await Promise.all(Array.from({ length: args.writers }, (_, k) => writer(k)));
}

main().catch((err: unknown) => {
  process.stderr.write(`driver failed: ${String((err as Error).stack ?? err)}\n`);
  process.exit(2);
});

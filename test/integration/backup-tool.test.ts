/**
 * `eventdb backup` / `eventdb restore` / `eventdb backup --verify` on real directories with real
 * node processes (the launcher, as a user runs it):
 * - full and differential backups taken while 16 writers append over HTTP; each restored into new
 *   directories, a node started on them serves every event acknowledged before the backup
 *   started (each stream a gap-free prefix of what was acknowledged) and takes new writes at the
 *   right version;
 * - a backup taken while a scavenge runs stops it through the admin API and resumes it after;
 * - a differential backup after a scavenge removes the replaced chunks and merged-away index
 *   files from the backup, and renames/removes the last chunk via `.old`;
 * - a corrupted backup file is reported by --verify (exit 1) and refused by restore;
 * - restore onto a running node is refused and changes nothing; a differential backup of another
 *   node into a backup is refused; bad options exit 2 naming the option.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { httpClient, type Http } from '../support/http-client.js';
import { runNode, startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const NODE_ARGS = ['--chunk-size', '262144', '--max-mem-table-size', '500', '--stream-existence-filter-size', '65536'];
const EVENTS_JSON = 'application/vnd.eventstore.events+json';
const JSON_ACCEPT = { accept: 'application/json' };

interface Dirs { readonly db: string; readonly index: string }

interface Writers {
  /** Per stream: event ids in acknowledged order, with the time of each acknowledgement. */
  readonly acked: Map<string, { id: string; ackedMs: number }[]>;
  stop(): Promise<void>;
  /** Resolves when every writer has written its `maxEventsEach` events. */
  finished(): Promise<void>;
}

/** `count` writers, each appending one ~1 KiB event per request to its own stream, with the exact expected version. */
function startWriters(http: Http, prefix: string, count: number, maxEventsEach = 5000): Writers {
  const acked = new Map<string, { id: string; ackedMs: number }[]>();
  let stopping = false;
  const loops = Array.from({ length: count }, async (_, k) => {
    const stream = `${prefix}-${k}`;
    const list: { id: string; ackedMs: number }[] = [];
    acked.set(stream, list);
    while (!stopping && list.length < maxEventsEach) {
      const id = randomUUID();
      const response = await http('POST', `/streams/${stream}`, {
        headers: { 'content-type': EVENTS_JSON, 'ES-ExpectedVersion': String(list.length - 1) },
        body: JSON.stringify([{ eventId: id, eventType: 'written', data: { k, n: list.length, pad: 'p'.repeat(1000) } }]),
      });
      if (response.status !== 201) throw new Error(`append to ${stream} answered ${response.status}: ${response.text}`);
      list.push({ id, ackedMs: performance.now() });
    }
  });
  // A writer cut off by the end of a test (its node killed) ends quietly; otherwise errors count.
  const all = Promise.all(loops.map((loop) => loop.catch((err: unknown) => { if (!stopping) throw err; })));
  return { acked, stop: async () => { stopping = true; await all; }, finished: async () => void (await all) };
}

function ackedCount(writers: Writers): number {
  return [...writers.acked.values()].reduce((sum, list) => sum + list.length, 0);
}

/** Waits (at most 60 s) until `count` events are acknowledged in all. */
async function waitForAcked(writers: Writers, count: number): Promise<void> {
  const deadline = performance.now() + 60_000;
  while (ackedCount(writers) < count) {
    if (performance.now() > deadline) throw new Error(`only ${ackedCount(writers)} of ${count} events acknowledged in 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function readIds(http: Http, stream: string): Promise<string[]> {
  const ids: string[] = [];
  for (let from = 0; ; from += 1000) {
    const r = await http('GET', `/streams/${stream}/${from}/forward/1000?embed=body`, { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    if (r.status === 404) return ids;
    expect(r.status, r.text).toBe(200);
    const entries = (r.json() as { entries: { eventId: string; eventNumber: number }[] }).entries
      .sort((a, b) => a.eventNumber - b.eventNumber);
    entries.forEach((e, i) => expect(e.eventNumber).toBe(from + i));
    ids.push(...entries.map((e) => e.eventId));
    if (entries.length < 1000) return ids;
  }
}

async function tool(args: string[]): Promise<{ code: number | null; output: string }> {
  return runNode(args);
}

/**
 * Starts a node on restored directories and checks each writer's stream: a gap-free prefix of what
 * was acknowledged, holding at least every event acknowledged before `backupStartedMs`; then a
 * new write at the next version. Returns the number of events restored.
 */
async function checkRestored(node: NodeProcess, writers: Writers, backupStartedMs: number): Promise<{ restored: number; ackedBefore: number }> {
  const http = httpClient(node.baseUrl);
  let restored = 0;
  let ackedBefore = 0;
  for (const [stream, acked] of writers.acked) {
    const ids = await readIds(http, stream);
    const before = acked.filter((a) => a.ackedMs < backupStartedMs).length;
    expect(ids.length, `${stream}: restored ${ids.length}, acknowledged before the backup ${before}`).toBeGreaterThanOrEqual(before);
    expect(ids).toEqual(acked.slice(0, ids.length).map((a) => a.id));
    restored += ids.length;
    ackedBefore += before;
  }
  const [first] = writers.acked.keys();
  const length = (await readIds(http, first!)).length;
  const next = await http('POST', `/streams/${first!}`, {
    headers: { 'content-type': EVENTS_JSON, 'ES-ExpectedVersion': String(length - 1) },
    body: JSON.stringify([{ eventId: randomUUID(), eventType: 'after-restore', data: {} }]),
  });
  expect(next.status, next.text).toBe(201);
  return { restored, ackedBefore };
}

function manifestOf(dir: string): { kind: string; nodeId: string; writerPosition: number; chaserPosition: number; writerAtStartPosition: number; files: { path: string }[] } {
  return JSON.parse(readFileSync(join(dir, 'backup-manifest.json'), 'utf8')) as ReturnType<typeof manifestOf>;
}

function chunkFiles(dir: string): string[] {
  return readdirSync(dir).filter((n) => /^chunk-\d{6}\.\d{6}(\.old)?$/.test(n)).sort();
}

function tableFiles(dir: string): string[] {
  return readdirSync(dir).filter((n) => /^[0-9a-f-]{36}(\.bloomfilter)?$/.test(n)).sort();
}

describe('eventdb backup and restore', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function dirs(): Dirs & { root: string } {
    const dir = tempDir('edb-backup-tool-');
    cleanups.push(() => dir.remove());
    return { root: dir.path, db: join(dir.path, 'db'), index: join(dir.path, 'index') };
  }

  async function start(d: Dirs, extra: string[] = []): Promise<NodeProcess> {
    const node = await startNode({ memDb: false, args: ['--db', d.db, '--index', d.index, ...NODE_ARGS, ...extra] });
    cleanups.push(async () => void (await node.stop('SIGKILL')));
    return node;
  }

  it('takes full and differential backups while 16 writers append; each restores every acknowledged event', async () => {
    const src = dirs();
    const node = await start(src);
    const http = httpClient(node.baseUrl);
    const writers = startWriters(http, 'bk-w', 16);
    cleanups.push(() => writers.stop().catch(() => undefined));
    try {
      await waitForAcked(writers, 300);
      const backup = dirs().root;
      const fullStartedMs = performance.now();
      const full = await tool(['backup', '--db', src.db, '--index', src.index, '--to', backup]);
      expect(full.code, full.output).toBe(0);
      expect(full.output).toContain('(running)');
      expect(full.output).toMatch(/copied db\/chunk-000000\.000000/);
      // Writes go on between the backups, across several chunks.
      await waitForAcked(writers, ackedCount(writers) + 600);
      const fullCopy = dirs().root;
      // Keep the full backup for its own restore: a copy of it, verified.
      const copied = await tool(['restore', '--from', backup, '--db', join(fullCopy, 'db'), '--index', join(fullCopy, 'index')]);
      expect(copied.code, copied.output).toBe(0);
      expect(copied.output).toContain('copied chaser.chk over truncate.chk');

      const diffStartedMs = performance.now();
      const diff = await tool(['backup', '--db', src.db, '--index', src.index, '--to', backup, '--differential']);
      expect(diff.code, diff.output).toBe(0);
      expect(diff.output).toMatch(/renamed db\/chunk-\d{6}\.000000 to db\/chunk-\d{6}\.000000\.old/);
      expect(diff.output).toMatch(/removed db\/chunk-\d{6}\.000000\.old/);
      expect(chunkFiles(join(backup, 'db')).some((n) => n.endsWith('.old'))).toBe(false);
      expect(manifestOf(backup).kind).toBe('differential');
      const verify = await tool(['backup', '--verify', backup]);
      expect(verify.code, verify.output).toBe(0);
      await writers.stop();

      // The simple restore (full backup), started as a node.
      const fullNode = await start({ db: join(fullCopy, 'db'), index: join(fullCopy, 'index') });
      const fromFull = await checkRestored(fullNode, writers, fullStartedMs);
      await fullNode.stop();

      // The differential restore.
      const dst = dirs();
      const restore = await tool(['restore', '--from', backup, '--db', dst.db, '--index', dst.index]);
      expect(restore.code, restore.output).toBe(0);
      expect(restore.output).not.toContain('copied chaser.chk over truncate.chk');
      const diffNode = await start(dst);
      const fromDiff = await checkRestored(diffNode, writers, diffStartedMs);
      expect(fromFull.ackedBefore).toBeGreaterThanOrEqual(300);
      expect(fromDiff.restored).toBeGreaterThan(fromFull.restored);
      const total = [...writers.acked.values()].reduce((s, l) => s + l.length, 0);
      process.stdout.write(`backup under load: ${total} events acknowledged; full restore ${fromFull.restored} (>= ${fromFull.ackedBefore} acknowledged before it), differential restore ${fromDiff.restored} (>= ${fromDiff.ackedBefore})\n`);
    } finally {
      await writers.stop();
    }
  }, 420_000);

  it('stops a running scavenge through the admin API, backs up (full, then differential), and resumes it; the backups restore', async () => {
    const src = dirs();
    const node = await start(src);
    const http = httpClient(node.baseUrl);
    const writers = startWriters(http, 'bk-s', 8, 150);
    await writers.finished();
    for (let k = 0; k < 4; k++) {
      const deleted = await http('DELETE', `/streams/bk-s-${k}`, { headers: { 'ES-HardDelete': 'true' } });
      expect(deleted.status).toBe(204);
    }
    const restoredDirs: Dirs[] = [];
    for (const kind of ['full', 'differential'] as const) {
      // A slow run (throttlePercent=1: it rests 99 times as long as it works after each chunk);
      // a run the previous backup resumed (at full speed) is stopped first.
      await http('DELETE', '/admin/scavenge/current', { headers: JSON_ACCEPT });
      const started = await http('POST', '/admin/scavenge?throttlePercent=1', { headers: JSON_ACCEPT });
      expect(started.status, started.text).toBe(200);
      const scavengeId = (started.json() as { scavengeId: string }).scavengeId;
      const backup = dirs().root;
      const result = await tool([
        'backup', '--db', src.db, '--index', src.index, '--to', backup, ...(kind === 'differential' ? ['--differential'] : []),
        '--node-url', node.baseUrl, '--username', 'admin', '--password', 'changeit',
      ]);
      expect(result.code, result.output).toBe(0);
      expect(result.output).toContain(`stopped scavenge ${scavengeId}`);
      const resumedId = /resumed the stopped scavenge as (\S+)/.exec(result.output)?.[1];
      expect(resumedId).toMatch(/^[0-9a-f-]{36}$/);
      expect(resumedId).not.toBe(scavengeId);
      // The stopped run is recorded as Stopped; the resumed one ran after the backup.
      const stoppedRun = await http('GET', `/admin/scavenge/${scavengeId}`, { headers: JSON_ACCEPT });
      expect((stoppedRun.json() as { scavengeResult: string }).scavengeResult).toBe('Stopped');
      const resumedRun = await http('GET', `/admin/scavenge/${resumedId!}`, { headers: JSON_ACCEPT });
      expect(resumedRun.status).toBe(200);
      expect(['InProgress', 'Success']).toContain((resumedRun.json() as { scavengeResult: string }).scavengeResult);
      expect((await tool(['backup', '--verify', backup])).code).toBe(0);
      const dst = dirs();
      expect((await tool(['restore', '--from', backup, '--db', dst.db, '--index', dst.index])).code).toBe(0);
      restoredDirs.push(dst);
    }
    await node.stop();
    for (const dst of restoredDirs) {
      const restored = await start(dst);
      const rhttp = httpClient(restored.baseUrl);
      for (const [stream, acked] of writers.acked) {
        const k = Number(stream.split('-').at(-1));
        if (k < 4) {
          expect((await rhttp('GET', `/streams/${stream}`, { headers: { accept: 'application/vnd.eventstore.atom+json' } })).status).toBe(410);
        } else {
          expect(await readIds(rhttp, stream)).toEqual(acked.map((a) => a.id));
        }
      }
      await restored.stop();
    }
  }, 300_000);

  it('a differential backup after a scavenge removes the replaced chunks and index files from the backup', async () => {
    const src = dirs();
    const node = await start(src);
    const http = httpClient(node.baseUrl);
    const writers = startWriters(http, 'bk-x', 8, 200);
    await writers.finished();
    for (let k = 0; k < 6; k++) {
      expect((await http('DELETE', `/streams/bk-x-${k}`, { headers: { 'ES-HardDelete': 'true' } })).status).toBe(204);
    }
    const backup = dirs().root;
    const first = await tool(['backup', '--db', src.db, '--index', src.index, '--to', backup, '--differential']);
    expect(first.code, first.output).toBe(0);
    const chunksBefore = chunkFiles(join(backup, 'db'));
    const tablesBefore = tableFiles(join(backup, 'index'));
    expect(chunksBefore.length).toBeGreaterThan(3);
    expect(tablesBefore.length).toBeGreaterThan(0);

    const started = await http('POST', '/admin/scavenge', { headers: JSON_ACCEPT });
    const id = (started.json() as { scavengeId: string }).scavengeId;
    for (let i = 0; i < 600; i++) {
      const run = await http('GET', `/admin/scavenge/${id}`, { headers: JSON_ACCEPT });
      if ((run.json() as { scavengeResult: string }).scavengeResult === 'Success') break;
      expect(i).toBeLessThan(599);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await http('POST', '/admin/mergeindexes', { headers: JSON_ACCEPT })).status).toBe(200);
    await node.stop(); // a stopped node: the source's files stay as listed below
    const sourceChunks = chunkFiles(src.db);
    const sourceTables = tableFiles(src.index);
    const replaced = chunksBefore.filter((n) => !sourceChunks.includes(n));
    expect(replaced.length, 'the scavenge replaced chunks').toBeGreaterThan(0);
    const mergedAway = tablesBefore.filter((n) => !sourceTables.includes(n));
    expect(mergedAway.length, 'the merge replaced tables').toBeGreaterThan(0);

    const second = await tool(['backup', '--db', src.db, '--index', src.index, '--to', backup, '--differential']);
    expect(second.code, second.output).toBe(0);
    expect(chunkFiles(join(backup, 'db'))).toEqual(sourceChunks);
    expect(tableFiles(join(backup, 'index'))).toEqual(sourceTables);
    for (const name of replaced.filter((n) => n !== chunksBefore.at(-1))) expect(second.output).toContain(`removed db/${name}`);
    for (const name of mergedAway) expect(second.output).toContain(`removed index/${name}`);
    // Chunks already in the backup (and unchanged) were not copied again.
    const kept = chunksBefore.slice(0, -1).filter((n) => sourceChunks.includes(n));
    for (const name of kept) expect(second.output).not.toContain(`copied db/${name}`);
    expect((await tool(['backup', '--verify', backup])).code).toBe(0);

    const dst = dirs();
    expect((await tool(['restore', '--from', backup, '--db', dst.db, '--index', dst.index])).code).toBe(0);
    const restored = await start(dst);
    const rhttp = httpClient(restored.baseUrl);
    for (const [stream, acked] of writers.acked) {
      const k = Number(stream.split('-').at(-1));
      if (k >= 6) expect(await readIds(rhttp, stream)).toEqual(acked.map((a) => a.id));
      else expect((await rhttp('GET', `/streams/${stream}`, { headers: { accept: 'application/vnd.eventstore.atom+json' } })).status).toBe(410);
    }
  }, 300_000);

  it('reports a corrupted backup file, refuses to restore it, refuses a running target and another node\'s backup', async () => {
    const src = dirs();
    const node = await start(src);
    const writers = startWriters(httpClient(node.baseUrl), 'bk-c', 4, 100);
    await writers.finished();
    const backup = dirs().root;
    expect((await tool(['backup', '--db', src.db, '--index', src.index, '--to', backup])).code).toBe(0);
    expect((await tool(['backup', '--verify', backup])).code).toBe(0);

    // Restore onto the running node: refused, nothing changed.
    const before = chunkFiles(src.db).map((n) => readFileSync(join(src.db, n)).length);
    const onto = await tool(['restore', '--from', backup, '--db', src.db, '--index', src.index, '--overwrite']);
    expect(onto.code).toBe(1);
    expect(onto.output).toContain('EDB_RESTORE_REFUSED');
    expect(onto.output).toContain(`pid ${node.child.pid}`);
    expect(chunkFiles(src.db).map((n) => readFileSync(join(src.db, n)).length)).toEqual(before);
    expect(await readIds(httpClient(node.baseUrl), 'bk-c-0')).toHaveLength(100);

    // Another node's differential backup into this backup: refused.
    const other = dirs();
    const otherNode = await start(other);
    await otherNode.stop();
    const mixed = await tool(['backup', '--db', other.db, '--index', other.index, '--to', backup, '--differential']);
    expect(mixed.code).toBe(1);
    expect(mixed.output).toContain('EDB_BACKUP_NODE_MISMATCH');

    // A flipped byte in a chunk of the backup.
    const chunk = join(backup, 'db', 'chunk-000000.000000');
    const bytes = readFileSync(chunk);
    bytes[200] = (bytes[200] ?? 0) ^ 0xff;
    writeFileSync(chunk, bytes);
    const verify = await tool(['backup', '--verify', backup]);
    expect(verify.code).toBe(1);
    expect(verify.output).toContain('BAD db/chunk-000000.000000: checksum');
    const dst = dirs();
    const restore = await tool(['restore', '--from', backup, '--db', dst.db, '--index', dst.index]);
    expect(restore.code).toBe(1);
    expect(restore.output).toContain("the backup's db/chunk-000000.000000 does not match its manifest");
    expect(existsSync(join(dst.db, 'chunk-000000.000000'))).toBe(false);
  }, 120_000);

  it('names bad options and exits 2', async () => {
    const cases: [string[], string][] = [
      [['backup', '--db', 'a', '--index', 'b'], 'option --to is required'],
      [['backup', '--db', 'a', '--index', 'b', '--to', 'c', '--bogus'], 'unknown option --bogus'],
      [['backup', '--verify', 'x', '--differential'], 'option --differential cannot be combined with --verify'],
      [['backup', '--db', 'a', '--index', 'b', '--to', 'c', '--node-url', 'http://x'], 'option --node-url needs --password'],
      [['restore', '--from'], 'option --from needs a value'],
      [['restore', '--from', 'a', '--db', 'b'], 'option --index is required'],
    ];
    for (const [args, message] of cases) {
      const result = await tool(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.output).toContain(message);
    }
  }, 60_000);
});

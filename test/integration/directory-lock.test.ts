/**
 * The lock on the data and index directories, with real node processes: a second node on a
 * directory a running node owns is refused at once with a message naming the directory and the
 * holder's pid, the first node goes on appending, and after a SIGKILL of the holder a restart
 * succeeds at once.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appendEvents, httpClient, newEvent, readFeed, type HttpResponse } from '../support/http-client.js';
import { runNode, startNode, tempDir, type NodeProcess } from '../support/node-process.js';

function eventTypes(feed: HttpResponse): string[] {
  expect(feed.status).toBe(200);
  return feed.json<{ entries: { eventType: string }[] }>().entries.map((entry) => entry.eventType).sort();
}

describe('data directory lock', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function dirs(): { db: string; index: string } {
    const dir = tempDir('edb-lock-');
    cleanups.push(() => dir.remove());
    return { db: join(dir.path, 'db'), index: join(dir.path, 'index') };
  }

  async function start(db: string, index: string): Promise<NodeProcess> {
    const node = await startNode({ memDb: false, args: ['--db', db, '--index', index] });
    cleanups.push(async () => void (await node.stop('SIGKILL')));
    return node;
  }

  it('refuses a second node on the directories, keeps the first appending, and lets a restart in after SIGKILL', async () => {
    const { db, index } = dirs();
    const first = await start(db, index);
    const http = httpClient(first.baseUrl);
    await appendEvents(http, 'locked-1', [newEvent('before', { n: 1 })]);

    const second = await runNode(['--insecure', '--db', db, '--index', index, '--http-port', '0']);
    expect(second.code).not.toBe(0);
    expect(second.output).toContain(`the data directory ${db} is in use by another process (pid ${first.child.pid}`);

    expect((await appendEvents(http, 'locked-1', [newEvent('after', { n: 2 })])).status).toBe(201);
    expect(eventTypes(await readFeed(http, '/streams/locked-1?embed=body'))).toEqual(['after', 'before']);

    expect(await first.stop('SIGKILL')).toBeNull();
    const restarted = await start(db, index);
    expect(eventTypes(await readFeed(httpClient(restarted.baseUrl), '/streams/locked-1?embed=body'))).toEqual(['after', 'before']);
  });

  it('locks a separate index directory too', async () => {
    const { db, index } = dirs();
    const first = await start(db, index);
    const other = dirs();
    const second = await runNode(['--insecure', '--db', other.db, '--index', index, '--http-port', '0']);
    expect(second.code).not.toBe(0);
    expect(second.output).toContain(`the index directory ${index} is in use by another process (pid ${first.child.pid}`);
    // The refused node took nothing: its own data directory is free again.
    const third = await start(other.db, other.index);
    expect(third.child.pid).toBeGreaterThan(0);
  });
});

/**
 * Issue 29, item 10: the progress of a running scavenge (stage, chunks done of the chunks below
 * the scavenge point, percent) is in `GET /admin/scavenge/current` and `/admin/scavenge/{id}`,
 * in JSON, XML and text, not only in the log; a scavenge that is not running has none.
 * A throttled run (`throttlePercent=1`) over a log of small chunks is slow enough to watch.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpClient, type Http } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const JSON_ACCEPT = { accept: 'application/json' };
const dirs = tempDir('edb-scavenge-progress-');
let node: NodeProcess;
let http: Http;

interface Progress { stage: string; chunksDone: number; chunksTotal: number; percent: number }
interface Current { scavengeId: string; scavengeLink: string; progress?: Progress }

async function writeRemovableEvents(streamCount: number): Promise<void> {
  const headers = { 'content-type': 'application/vnd.eventstore.events+json' };
  for (let streamIndex = 0; streamIndex < streamCount; streamIndex++) {
    const stream = `progress-${randomUUID().slice(0, 8)}`;
    const metadata = await http('POST', `/streams/${stream}/metadata`, {
      headers, body: JSON.stringify([{ eventId: randomUUID(), eventType: '$metadata', data: { $maxCount: 1 } }]),
    });
    expect(metadata.status).toBe(201);
    for (let batch = 0; batch < 4; batch++) {
      const events = Array.from({ length: 5 }, () => ({ eventId: randomUUID(), eventType: 'load', data: { padding: 'x'.repeat(800) } }));
      expect((await http('POST', `/streams/${stream}`, { headers, body: JSON.stringify(events) })).status).toBe(201);
    }
  }
}

async function current(): Promise<Current> {
  const response = await http('GET', '/admin/scavenge/current', { headers: JSON_ACCEPT });
  expect(response.status).toBe(200);
  return response.json<Current>();
}

async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  node = await startNode({ memDb: false, args: ['--db', `${dirs.path}/db`, '--index', `${dirs.path}/index`, '--chunk-size', '16384'] });
  http = httpClient(node.baseUrl);
  await writeRemovableEvents(20);
});

afterAll(async () => {
  expect(await node.stop()).toBe(0);
  dirs.remove();
});

describe('scavenge progress', () => {
  it('has none while no scavenge runs', async () => {
    expect(await current()).toEqual({ scavengeId: '', scavengeLink: '' });
  });

  it('shows the stage and the chunks done of the total while a scavenge runs', async () => {
    const started = await http('POST', '/admin/scavenge?throttlePercent=1', { headers: JSON_ACCEPT });
    expect(started.status).toBe(200);
    const { scavengeId } = started.json<{ scavengeId: string }>();
    const executing = await waitFor('chunk execution under way', async () => {
      const now = await current();
      expect(now.scavengeId).toBe(scavengeId);
      return now.progress?.stage === 'ExecutingChunks' && now.progress.chunksDone > 0 ? now.progress : undefined;
    });
    expect(executing.chunksTotal).toBeGreaterThan(3);
    expect(executing.chunksDone).toBeLessThan(executing.chunksTotal);
    expect(executing.percent).toBeGreaterThan(0);
    expect(executing.percent).toBeLessThan(100);
    expect(executing.percent).toBeCloseTo((executing.chunksDone / executing.chunksTotal) * 100, 0);

    const byId = await http('GET', `/admin/scavenge/${scavengeId}`, { headers: JSON_ACCEPT });
    expect(byId.json()).toMatchObject({ scavengeId, scavengeResult: 'InProgress', progress: { stage: 'ExecutingChunks', chunksTotal: executing.chunksTotal } });
    const text = await http('GET', '/admin/scavenge/current');
    expect(text.text).toMatch(new RegExp(`^ScavengeId: ${scavengeId}, ScavengeLink: \\S+, Stage: ExecutingChunks, ChunksDone: \\d+, ChunksTotal: ${executing.chunksTotal}, Percent: [\\d.]+$`));
    const xml = await http('GET', '/admin/scavenge/current', { headers: { accept: 'application/xml' } });
    expect(xml.text).toContain(`<Stage>ExecutingChunks</Stage>`);
    expect(xml.text).toContain(`<ChunksTotal>${executing.chunksTotal}</ChunksTotal>`);

    // Later looks never go backwards.
    const later = await waitFor('more chunks done', async () => {
      const now = (await current()).progress;
      return now !== undefined && (now.chunksDone > executing.chunksDone || now.stage !== 'ExecutingChunks') ? now : undefined;
    });
    expect(later.chunksDone).toBeGreaterThanOrEqual(executing.chunksDone);

    const stopped = await http('DELETE', '/admin/scavenge/current', { headers: JSON_ACCEPT });
    expect(stopped.status).toBe(200);
    expect(await current()).toEqual({ scavengeId: '', scavengeLink: '' });
    const after = await http('GET', `/admin/scavenge/${scavengeId}`, { headers: JSON_ACCEPT });
    expect(after.json()).toEqual({ scavengeId, scavengeLink: `/admin/scavenge/${scavengeId}`, scavengeResult: 'Stopped' });
  });
});

/**
 * The node process around the streams API: configuration errors, graceful shutdown on
 * signals, and data that survives a restart on disk.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendEvents,
  httpClient,
  newEvent,
  readFeed,
  uniqueStream,
} from '../support/http-client.js';
import { freePort, runNode, startNode, tempDir } from '../support/node-process.js';
import { duplicateJsonKeys } from '../support/json-duplicate-keys.js';

describe('node process', () => {
  it('exits 2 naming the option for unknown or invalid options', async () => {
    const unknown = await runNode(['--mem-db', '--no-such-option', '1']);
    expect(unknown.code).toBe(2);
    expect(unknown.output).toContain('unknown option --no-such-option');
    const invalid = await runNode(['--mem-db', '--http-port', 'abc']);
    expect(invalid.code).toBe(2);
    expect(invalid.output).toContain('--http-port: expected an integer');
    const env = await runNode(['--mem-db'], { SERVICE_MEM_DB: 'yes' });
    expect(env.code).toBe(2);
    expect(env.output).toContain('SERVICE_MEM_DB');
  });

  it('answers --help and --version with exit 0 without touching any file', async () => {
    const dir = tempDir('edb-help-');
    try {
      const help = await runNode(['--help', '--db', 'would-be-created'], {}, dir.path);
      expect(help.code).toBe(0);
      expect(help.output).toContain('Usage: eventdb [options]');
      expect(help.output).toMatch(/--node-port <integer>\n\s+YAML NodePort, env SERVICE_NODE_PORT, default 2113/);
      expect(help.output).toContain('also --http-port, YAML HttpPort, env SERVICE_HTTP_PORT');
      const short = await runNode(['-h'], {}, dir.path);
      expect(short.code).toBe(0);
      expect(short.output).toBe(help.output);
      const version = await runNode(['--version'], {}, dir.path);
      expect(version.code).toBe(0);
      expect(version.output).toBe(`${String(JSON.parse(readFileSync('package.json', 'utf8')).version)}\n`);
      expect(readdirSync(dir.path)).toEqual([]);
    } finally {
      dir.remove();
    }
  });

  it('exits 2 naming the option when a value is out of range', async () => {
    const port = await runNode(['--mem-db', '--http-port', '70000']);
    expect(port.code).toBe(2);
    expect(port.output).toBe('invalid configuration:\n  --http-port: Too big: expected number to be <=65535\n');
    // Issue 29, item 10: a node IP that is no address is a configuration error, not a stack trace.
    const ip = await runNode(['--mem-db', '--insecure', '--node-ip', '999.1.1.1']);
    expect(ip.code).toBe(2);
    expect(ip.output).toBe('invalid configuration:\n  --node-ip: must be an IPv4 or IPv6 address\n');
  });

  it('refuses to start on a port in use with a message, not a stack trace', async () => {
    const first = await startNode();
    const dir = tempDir('edb-busy-port-');
    try {
      const second = await runNode(['--mem-db', '--insecure', '--http-port', String(first.port)]);
      expect(second.code).toBe(1);
      expect(second.output).toContain(`startup refused: address 127.0.0.1:${first.port} is already in use`);
      expect(second.output).not.toContain('"stack"');
      // Issue 29, item 10: refused before anything is created under --db / --index.
      const onDisk = await runNode(['--insecure', '--db', join(dir.path, 'db'), '--index', join(dir.path, 'index'), '--http-port', String(first.port)]);
      expect(onDisk.code).toBe(1);
      expect(onDisk.output).toContain('is already in use');
      expect(readdirSync(dir.path)).toEqual([]);
    } finally {
      dir.remove();
      expect(await first.stop()).toBe(0);
    }
  });

  it('takes options from a YAML file and the environment, flags winning', async () => {
    const dir = tempDir('edb-config-');
    try {
      const port = await freePort();
      const file = join(dir.path, 'node.yaml');
      writeFileSync(file, `MemDb: true\nHttpPort: 1\nLogLevel: debug\n`);
      const node = await startNode({
        args: ['--config', file, '--http-port', String(port)],
        env: { SERVICE_LOG_LEVEL: 'info' },
      });
      try {
        expect(node.port).toBe(port);
        const http = httpClient(node.baseUrl);
        await readFeed(http, '/streams/anything');
        expect(node.output.some((line) => line.includes('"msg":"request completed"'))).toBe(false);
      } finally {
        expect(await node.stop()).toBe(0);
      }
    } finally {
      dir.remove();
    }
  });

  it('logs JSON lines only, without repeated keys or warnings, through a day in the life', async () => {
    const dir = tempDir('edb-logs-');
    try {
      const node = await startNode({
        memDb: false,
        args: ['--db', join(dir.path, 'db'), '--index', join(dir.path, 'index'), '--log-level', 'trace', '--max-mem-table-size', '10'],
      });
      const http = httpClient(node.baseUrl);
      const stream = uniqueStream('logs');
      for (let i = 0; i < 30; i++) await appendEvents(http, stream, [newEvent('e', { i })]);
      await readFeed(http, `/streams/${stream}`);
      await http('DELETE', `/streams/${stream}`);
      const scavenge = await http('POST', '/admin/scavenge', { headers: { accept: 'application/json' } });
      const { scavengeId } = scavenge.json<{ scavengeId: string }>();
      for (let i = 0; i < 200; i++) {
        const last = (await http('GET', '/admin/scavenge/last', { headers: { accept: 'application/json' } })).json();
        if (last.scavengeId === scavengeId && last.scavengeResult !== 'InProgress') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await node.stop()).toBe(0);
      expect(node.output.length).toBeGreaterThan(20);
      for (const line of node.output) {
        expect(line.startsWith('{'), line).toBe(true);
        expect(duplicateJsonKeys(line), line).toEqual([]);
        // The one warning of a day in the life: the node runs --insecure (no TLS) on purpose.
        if (JSON.parse(line).msg?.startsWith('running insecure (--insecure)')) continue;
        expect(JSON.parse(line).level, line).toBeLessThan(40);
      }
    } finally {
      dir.remove();
    }
  });

  it('logs one debug line per request without credentials or bodies', async () => {
    const node = await startNode({ args: ['--log-level', 'debug'] });
    const http = httpClient(node.baseUrl);
    await appendEvents(http, uniqueStream('log'), [
      newEvent('secret-type', { secret: 'body-value' }),
    ]);
    expect(await node.stop()).toBe(0);
    const lines = node.output.filter((line) => line.includes('"msg":"request completed"'));
    expect(lines.length).toBeGreaterThanOrEqual(1);
    // The request logger (made on first use) carries the api component and the request id.
    const line = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    expect(line).toMatchObject({ component: 'api', method: 'POST', statusCode: 201 });
    expect(line['reqId']).toMatch(/^req-/);
    const all = node.output.join('\n');
    expect(all).not.toContain('body-value');
    expect(all).not.toMatch(/Basic [A-Za-z0-9+/=]{8,}/);
  });

  it('shuts down gracefully on SIGINT and SIGTERM (exit 0) and keeps data on disk across restarts', async () => {
    const dir = tempDir('edb-data-');
    try {
      const args = ['--db', join(dir.path, 'db'), '--index', join(dir.path, 'index')];
      const stream = uniqueStream('durable');
      const first = await startNode({ memDb: false, args });
      const written = await appendEvents(httpClient(first.baseUrl), stream, [
        newEvent('a', { n: 1 }),
        newEvent('b', { n: 2 }),
      ]);
      expect(written.status).toBe(201);
      expect(await first.stop('SIGINT')).toBe(0);
      expect(first.output.some((line) => line.includes('"msg":"stopped"'))).toBe(true);

      const second = await startNode({ memDb: false, args });
      const feed = await readFeed(httpClient(second.baseUrl), `/streams/${stream}/0/forward/10`);
      expect(feed.status).toBe(200);
      expect(feed.json().entries.map((e: { title: string }) => e.title)).toEqual([
        `1@${stream}`,
        `0@${stream}`,
      ]);
      expect(await second.stop('SIGTERM')).toBe(0);
    } finally {
      dir.remove();
    }
  });

  it('answers a waiting long poll and exits 0 promptly on SIGTERM', async () => {
    const node = await startNode();
    const http = httpClient(node.baseUrl);
    const stream = uniqueStream('poll-stop');
    await appendEvents(http, stream, [newEvent('a', {})]);
    const waiting = readFeed(http, `/streams/${stream}/1/forward/20`, { 'ES-LongPoll': '60' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const code = await node.stop();
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    const response = await waiting;
    expect(response.status).toBe(200);
    expect(response.json().entries).toEqual([]);
  });

  it('shuts down gracefully on POST /admin/shutdown (200, then exit 0)', async () => {
    const node = await startNode();
    const http = httpClient(node.baseUrl);
    expect((await http('POST', '/admin/shutdown', { auth: false })).status).toBe(401);
    const response = await http('POST', '/admin/shutdown');
    expect(response.status).toBe(200);
    expect(await node.exited()).toBe(0);
  });

  it('serves the other APIs next to streams: ping, info, OpenAPI', async () => {
    const node = await startNode();
    try {
      const http = httpClient(node.baseUrl);
      expect((await http('GET', '/ping', { headers: { accept: 'application/json' } })).status).toBe(
        200,
      );
      expect(
        (await http('GET', '/info', { headers: { accept: 'application/json' } })).json(),
      ).toMatchObject({ state: 'leader' });
      const openapi = (await http('GET', '/openapi.json')).json<{
        paths: Record<string, unknown>;
      }>();
      expect(Object.keys(openapi.paths)).toContain('/streams/{stream}');
    } finally {
      expect(await node.stop()).toBe(0);
    }
  });
});

/**
 * SIGHUP against a real node process: the node re-reads its YAML file, applies the log level
 * live (a debug line per request appears), names changed options that need a restart, keeps
 * running on an invalid file, and still shuts down cleanly afterwards.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { logLines, waitForLogLine } from '../support/node-log.js';
import { startNode, tempDir } from '../support/node-process.js';

const dir = tempDir('eventdb-reload-');
const configFile = join(dir.path, 'eventdb.yaml');
afterAll(() => dir.remove());

describe('SIGHUP reloads the configuration', () => {
  it('applies the log level live, reports options that need a restart, survives a bad file', async () => {
    writeFileSync(configFile, 'LogLevel: info\nMaxMemTableSize: 1000\n');
    const node = await startNode({ args: ['--config', configFile] });
    try {
      const get = async (): Promise<void> => {
        const r = await fetch(`${node.baseUrl}/info`, { headers: { accept: 'application/json' } });
        expect(r.status).toBe(200);
        await r.arrayBuffer();
      };
      let mark = node.output.length;
      await get();
      await new Promise((r) => setTimeout(r, 200));
      expect(logLines(node, mark).some((l) => l['msg'] === 'request completed')).toBe(false);

      // log level: applied; MaxMemTableSize: needs a restart
      writeFileSync(configFile, 'LogLevel: debug\nMaxMemTableSize: 2000\n');
      mark = node.output.length;
      node.child.kill('SIGHUP');
      const reloaded = await waitForLogLine(node, mark, 'configuration reloaded');
      expect(reloaded['changed']).toEqual({ LogLevel: { from: 'info', to: 'debug' } });
      expect(reloaded['needsRestart']).toEqual(['MaxMemTableSize']);
      const restart = await waitForLogLine(node, mark, /MaxMemTableSize changed: the new value needs a restart/);
      expect(restart).toMatchObject({ option: 'MaxMemTableSize', from: 1000, to: 2000 });
      mark = node.output.length;
      await get();
      await waitForLogLine(node, mark, 'request completed');

      // an invalid file changes nothing and the node keeps serving
      writeFileSync(configFile, 'LogLevel: loud\n');
      mark = node.output.length;
      node.child.kill('SIGHUP');
      const failed = await waitForLogLine(node, mark, /configuration reload failed/);
      expect(JSON.stringify(failed['issues'])).toContain('LogLevel');
      mark = node.output.length;
      await get();
      await waitForLogLine(node, mark, 'request completed');
      expect(node.child.exitCode).toBeNull();
    } finally {
      expect(await node.stop()).toBe(0);
    }
  });
});

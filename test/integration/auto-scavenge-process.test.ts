/**
 * Auto-scavenge on single node processes: what a user sees without a licence, with a refused
 * or expired one, with --mem-db or --dev, and the configure endpoint's answers. The cluster
 * behaviour (scheduled cycles, pause, resume, a killed node) is in auto-scavenge-cluster.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { httpClient, type Http } from '../support/http-client.js';
import { basic } from '../support/credentials.js';
import { testLicensing } from '../support/license.js';
import { runNode, startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { issueLicenseKey } from '../../node/src/license/license.js';

const licensing = testLicensing();
const JSON_BODY = { 'content-type': 'application/json' };

function configure(http: Http, body: string, authorization?: string) {
  return http('POST', '/auto-scavenge/configure', { headers: { ...JSON_BODY, ...(authorization === undefined ? {} : { authorization }) }, body });
}

describe('auto-scavenge without a licence', () => {
  let node: NodeProcess;
  let http: Http;
  beforeAll(async () => {
    node = await startNode({ memDb: true });
    http = httpClient(node.baseUrl);
  }, 90_000);
  afterAll(async () => node?.stop());

  it('is not enabled: enabled says false, the other endpoints answer 503 and change nothing', async () => {
    expect((await http('GET', '/auto-scavenge/enabled')).json()).toEqual({ enabled: false });
    for (const [method, path] of [['GET', '/auto-scavenge/status'], ['POST', '/auto-scavenge/pause'], ['POST', '/auto-scavenge/resume']] as const) {
      const response = await http(method, path);
      expect(response.status, path).toBe(503);
      expect(response.text).toBe('AutoScavenge is not enabled');
    }
    expect((await configure(http, '{"schedule":"* * * * *"}')).status).toBe(503);
    expect(node.output.some((l) => l.includes('auto-scavenge is not enabled: no licence key'))).toBe(true);
  });

  it('needs credentials', async () => {
    expect((await http('GET', '/auto-scavenge/enabled', { auth: false })).status).toBe(401);
  });
});

describe('auto-scavenge licence and mode checks at start', () => {
  it('licensed with --mem-db or --dev: the node refuses to start and says how to turn it off', async () => {
    for (const mode of [['--mem-db', '--insecure'], ['--dev']]) {
      const run = await runNode([...mode, '--http-port', '0', ...licensing.args()]);
      expect(run.code, mode[0]).toBe(2);
      expect(run.output).toContain(`auto-scavenge cannot run with ${mode[0]}; turn it off with --auto-scavenge-enabled false`);
    }
  }, 60_000);

  it('licensed with --mem-db and AutoScavenge turned off (env form): starts, not enabled', async () => {
    const node = await startNode({ memDb: true, args: licensing.args(), env: { SERVICE_AUTO_SCAVENGE_ENABLED: 'false' } });
    try {
      expect((await httpClient(node.baseUrl)('GET', '/auto-scavenge/enabled')).json()).toEqual({ enabled: false });
      expect(node.output.some((l) => l.includes('auto-scavenge is disabled by configuration'))).toBe(true);
    } finally {
      await node.stop();
    }
  }, 60_000);

  it('an expired or badly signed licence: the node starts without auto-scavenge and logs why', async () => {
    const foreign = issueLicenseKey({
      licensee: 'x', entitlements: ['AUTO_SCAVENGE'], issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2099-01-01T00:00:00Z',
    }, generateKeyPairSync('ed25519').privateKey);
    const cases = [
      { key: licensing.key({ expiresAt: '2026-01-02T00:00:00.000Z' }), log: 'licence key expired on 2026-01-02T00:00:00.000Z; auto-scavenge is not enabled' },
      { key: foreign, log: 'licence key refused: the signature does not match the licence public key; auto-scavenge is not enabled' },
    ];
    for (const { key, log } of cases) {
      const node = await startNode({ memDb: true, args: licensing.args(key) });
      try {
        expect((await httpClient(node.baseUrl)('GET', '/auto-scavenge/enabled')).json()).toEqual({ enabled: false });
        const line = node.output.find((l) => l.includes(log));
        expect(line, node.output.join('\n')).toBeDefined();
        expect(JSON.parse(line!).level).toBe(50); // error
      } finally {
        await node.stop();
      }
    }
  }, 90_000);
});

describe('auto-scavenge on a licensed node', () => {
  const dir = tempDir('edb-autoscavenge-');
  let node: NodeProcess;
  let http: Http;
  beforeAll(async () => {
    node = await startNode({ memDb: false, args: ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`, ...licensing.args()] });
    http = httpClient(node.baseUrl);
  }, 90_000);
  afterAll(async () => {
    await node?.stop();
    dir.remove();
  });

  it('logs that it is enabled and starts NotConfigured', async () => {
    expect(node.output.some((l) => l.includes('auto-scavenge plugin enabled'))).toBe(true);
    expect((await http('GET', '/auto-scavenge/enabled')).json()).toEqual({ enabled: true });
    const deadline = Date.now() + 20_000;
    let status = await http('GET', '/auto-scavenge/status');
    while (status.status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      status = await http('GET', '/auto-scavenge/status');
    }
    expect(status.json()).toEqual({ state: 'NotConfigured', schedule: null, timeUntilNextCycle: null });
  });

  it('refuses bad configure requests with 400 and the reason, and changes nothing', async () => {
    for (const [body, message] of [
      ['{"schedule":"61 * * * *"}', 'Invalid CRON expression'],
      ['{"schedule":"* * *"}', 'Invalid CRON expression'],
      ['{"schedule":5}', 'CRON expression can only be a string'],
      ['{"cron":"* * * * *"}', 'Invalid payload'],
    ] as const) {
      const response = await configure(http, body);
      expect(response.status, body).toBe(400);
      expect(response.text).toBe(message);
    }
    expect((await http('GET', '/auto-scavenge/status')).json().state).toBe('NotConfigured');
  });

  it('configure needs $ops or $admins; ops may configure; the schedule does not start a cycle at once', async () => {
    expect((await configure(http, '{"schedule":"0 6 * * 6"}', `Basic ${Buffer.from('nobody:x').toString('base64')}`)).status).toBe(401);
    const response = await configure(http, '{"schedule":"0 6 * * 6"}', basic('ops', 'changeit'));
    expect(response.status).toBe(200);
    expect(response.json()).toEqual({});
    const status = (await http('GET', '/auto-scavenge/status')).json();
    expect(status).toMatchObject({ state: 'Waiting', schedule: '0 6 * * 6' });
    expect(status.timeUntilNextCycle).toMatch(/^(\d+\.)?\d{2}:\d{2}:\d{2}(\.\d{7})?$/);
  });

  it('pause while waiting is immediate (200, Paused); resume goes back to Waiting', async () => {
    const paused = await http('POST', '/auto-scavenge/pause');
    expect(paused.status).toBe(200);
    expect((await http('GET', '/auto-scavenge/status')).json().state).toBe('Paused');
    expect((await http('POST', '/auto-scavenge/resume')).status).toBe(200);
    expect((await http('GET', '/auto-scavenge/status')).json().state).toBe('Waiting');
  });

  it('the configuration survives a restart (rebuilt from $auto-scavenge-configuration)', async () => {
    await node.stop();
    node = await startNode({ memDb: false, args: ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`, ...licensing.args()] });
    http = httpClient(node.baseUrl);
    const deadline = Date.now() + 20_000;
    let status = await http('GET', '/auto-scavenge/status');
    while (status.status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      status = await http('GET', '/auto-scavenge/status');
    }
    expect(status.json()).toMatchObject({ state: 'Waiting', schedule: '0 6 * * 6' });
  }, 60_000);
});

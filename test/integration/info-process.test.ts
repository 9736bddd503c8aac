/**
 * GET /info and GET /info/options against a real node: anonymous info; options for ops and
 * admins only, listing every option with its value and source, secrets masked.
 */
import { describe, expect, it } from 'vitest';

import { OPTION_NAMES } from '../../node/src/config/schema.js';
import { useNode } from '../support/use-node.js';
import { basic } from '../support/credentials.js';

const OPS_SECRET = 'Ops-S3cret-Value';
const running = useNode({ args: ['--default-ops-password', OPS_SECRET], env: { SERVICE_LOG_LEVEL: 'debug' } });
const http = running.http;

describe('GET /info', () => {
  it('is anonymous and reports version, state, features and authentication', async () => {
    const info = await http('GET', '/info', { auth: false, headers: { accept: 'application/json' } });
    expect(info.status).toBe(200);
    expect(info.json()).toMatchObject({
      esVersion: expect.any(String),
      state: 'leader',
      features: { userManagement: true, atomPub: true },
      authentication: { type: 'internal', properties: {} },
    });
  });
});

describe('GET /info/options', () => {
  it('is for ops and admins only', async () => {
    expect((await http('GET', '/info/options', { auth: false })).status).toBe(401);
    await http('POST', '/users/', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ LoginName: 'plain', Password: 'plain-pw' }),
    });
    expect((await http('GET', '/info/options', { headers: { authorization: basic('plain', 'plain-pw') } })).status).toBe(401);
    expect((await http('GET', '/info/options', { headers: { authorization: basic('ops', OPS_SECRET) } })).status).toBe(200);
  });

  it('lists every option with value and source, and masks secrets', async () => {
    const response = await http('GET', '/info/options');
    expect(response.status).toBe(200);
    const options = response.json() as Array<Record<string, unknown>>;
    expect(options).toHaveLength(OPTION_NAMES.length);
    for (const option of options) {
      expect(Object.keys(option)).toEqual(['name', 'description', 'group', 'value', 'configurationSource', 'deprecationMessage', 'schema']);
    }
    const byName = new Map(options.map((o) => [o.name, o]));
    expect(byName.get('NodePort')).toMatchObject({ value: String(running.node.port), configurationSource: 'Command Line', group: 'Interface' });
    expect(byName.get('LogLevel')).toMatchObject({ value: 'debug', configurationSource: 'Environment Variables' });
    expect(byName.get('ChunkSize')).toMatchObject({ value: '268435456', configurationSource: 'Default' });
    expect(byName.get('DefaultOpsPassword')).toMatchObject({ value: '****', configurationSource: 'Command Line' });
    expect(byName.get('DefaultAdminPassword')).toMatchObject({ value: '****', configurationSource: 'Default' });
    expect(response.text).not.toContain(OPS_SECRET);
    expect(response.text).not.toContain('changeit');
    expect(running.node.output.join('\n')).not.toContain(OPS_SECRET);
  });
});

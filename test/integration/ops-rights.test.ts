/**
 * Issue 29, item 6 against a real node: the `ops` user has the rights the spec (Authentication 4)
 * and the README give it. It may not create, update or delete persistent-subscription groups,
 * nor create, redefine or delete persistent projections (a projection reads system streams and
 * `$all`, which `$ops` may not); it may still run the operational commands (restart the
 * subscriptions, disable and enable a projection). Admins may do all of it.
 */
import { describe, expect, it } from 'vitest';

import { basic } from '../support/credentials.js';
import { uniqueStream } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode({ args: ['--run-projections', 'All'] });
const OPS = { authorization: basic('ops', 'changeit') };
const JSON_TYPE = { 'content-type': 'application/json' };
const JS = { 'content-type': 'application/javascript' };
const QUERY = "fromStream('x').when({ $any: function (s, e) { return s; } })";

describe('ops rights', () => {
  it('ops cannot create, update or delete a subscription group; admin can', async () => {
    const stream = uniqueStream('ops-ps');
    expect((await running.http('PUT', `/subscriptions/${stream}/g`, { headers: { ...JSON_TYPE, ...OPS }, body: '{}' })).status).toBe(401);
    expect((await running.http('GET', `/subscriptions/${stream}/g/info`, { headers: { accept: 'application/json' } })).status).toBe(404);
    expect((await running.http('PUT', `/subscriptions/${stream}/g`, { headers: JSON_TYPE, body: '{}' })).status).toBe(201);
    expect((await running.http('POST', `/subscriptions/${stream}/g`, { headers: { ...JSON_TYPE, ...OPS }, body: '{"maxRetryCount": 3}' })).status).toBe(401);
    expect((await running.http('DELETE', `/subscriptions/${stream}/g`, { headers: OPS })).status).toBe(401);
    expect((await running.http('GET', `/subscriptions/${stream}/g/info`, { headers: { accept: 'application/json' } })).status).toBe(200);
    expect((await running.http('POST', '/subscriptions/restart', { headers: { ...OPS, accept: 'application/json' } })).status).toBe(200);
  });

  it('ops cannot create, redefine or delete a persistent projection; it may disable and enable one', async () => {
    for (const mode of ['continuous', 'onetime']) {
      const name = uniqueStream(`ops-${mode}`);
      const refused = await running.http('POST', `/projections/${mode}?name=${name}&type=JS`, { headers: { ...JS, ...OPS }, body: QUERY });
      expect(refused.status, mode).toBe(401);
      expect((await running.http('GET', `/projection/${name}`)).status, mode).toBe(404);
    }
    const name = uniqueStream('admins-projection');
    expect((await running.http('POST', `/projections/continuous?name=${name}&type=JS`, { headers: JS, body: QUERY })).status).toBe(201);
    expect((await running.http('PUT', `/projection/${name}/query?type=JS`, { headers: { ...JS, ...OPS }, body: QUERY })).status).toBe(401);
    expect((await running.http('DELETE', `/projection/${name}`, { headers: OPS })).status).toBe(401);
    expect((await running.http('POST', `/projection/${name}/command/disable`, { headers: OPS })).status).toBe(200);
    expect((await running.http('POST', `/projection/${name}/command/enable`, { headers: OPS })).status).toBe(200);
    expect((await running.http('GET', `/projection/${name}`)).status).toBe(200);
  });
});

/**
 * A node started the way a compose file or Helm values written for EventStoreDB/KurrentDB start
 * it: EVENTSTORE_* and KURRENTDB_* variables and the original's option names, on a real process.
 * What it is asked for takes effect (seen over HTTP and gRPC with the official Node client), and
 * an option the node does not have is named in a warning instead of being dropped silently.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KurrentDBClient, binaryEvent } from '@kurrent/kurrentdb-client';

import { startNode, type NodeProcess } from '../support/node-process.js';

const MAX_APPEND_SIZE_BYTES = 4096;

describe("a node configured with the original's variable and option names", () => {
  let node: NodeProcess;
  let client: KurrentDBClient;
  beforeAll(async () => {
    node = await startNode({
      env: {
        EVENTSTORE_MAX_APPEND_SIZE: String(MAX_APPEND_SIZE_BYTES),
        KURRENTDB_ENABLE_ATOM_PUB_OVER_HTTP: 'false',
        EVENTSTORE_RUN_PROJECTIONS: 'System',
        // an option of the original's that this node does not have
        EVENTSTORE_STREAM_INFO_CACHE_CAPACITY: '100000',
      },
    });
    client = KurrentDBClient.connectionString(`kurrentdb://127.0.0.1:${node.port}?tls=false`);
  });
  afterAll(async () => {
    await client?.dispose();
    await node?.stop();
  });

  it('reports them as set from the environment in /info/options, and warns of the unknown one by name', async () => {
    const response = await fetch(`${node.baseUrl}/info/options`, { headers: { authorization: `Basic ${Buffer.from('admin:changeit').toString('base64')}` } });
    expect(response.status).toBe(200);
    const options = (await response.json()) as Array<{ name: string; value: string; source?: string }>;
    const byName = new Map(options.map((option) => [option.name.toLowerCase(), option]));
    expect(byName.get('maxappendsize')?.value).toBe(String(MAX_APPEND_SIZE_BYTES));
    expect(byName.get('enableatompuboverhttp')?.value).toMatch(/^false$/i);
    expect(byName.get('runprojections')?.value).toBe('System');
    expect(node.output.join('\n')).toContain('unknown environment variable EVENTSTORE_STREAM_INFO_CACHE_CAPACITY ignored');
  });

  it('EnableAtomPubOverHttp false: /streams answers 404 while the node, its other routes and gRPC serve', async () => {
    expect((await fetch(`${node.baseUrl}/streams/orders-1`, { headers: { accept: 'application/json' } })).status).toBe(404);
    expect((await fetch(`${node.baseUrl}/health/live`)).status).toBe(204);
    expect((await fetch(`${node.baseUrl}/gossip`)).status).toBe(200);
    const written = await client.appendToStream('orders-1', binaryEvent({ type: 'Placed', data: new Uint8Array(16) }));
    expect(written.success).toBe(true);
  });

  it('MaxAppendSize: an append over it is refused as the original refuses it and writes nothing; one under it is accepted', async () => {
    let refused: unknown;
    try {
      await client.appendToStream('big-1', binaryEvent({ type: 'Big', data: new Uint8Array(MAX_APPEND_SIZE_BYTES + 1) }));
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ type: 'maximum-append-size-exceeded' });
    const under = await client.appendToStream('big-1', binaryEvent({ type: 'Small', data: new Uint8Array(MAX_APPEND_SIZE_BYTES - 512) }));
    expect(under.nextExpectedRevision).toBe(0n);
  });
});

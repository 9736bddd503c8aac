/**
 * One real node per test file (useNode) and the npm client geteventstore-promise pointed at it,
 * used unchanged as an existing EventStoreDB HTTP user would.
 */
import { HTTPClient } from 'geteventstore-promise';
import { beforeAll } from 'vitest';
import type { NodeProcess } from './node-process.js';
import { useNode } from './use-node.js';

export interface GetEventStoreNode {
  /** The node process (available once the file's tests run). */
  readonly node: NodeProcess;
  /** The client with the admin credentials. */
  readonly client: HTTPClient;
  /** A client for the same node with other credentials. */
  clientAs(username: string, password: string): HTTPClient;
}

export function useGetEventStoreClient(options?: Parameters<typeof useNode>[0]): GetEventStoreNode {
  const running = useNode(options);
  const clientAs = (username: string, password: string): HTTPClient =>
    new HTTPClient({ hostname: '127.0.0.1', port: running.node.port, credentials: { username, password } });
  let client: HTTPClient | undefined;
  beforeAll(() => {
    client = clientAs('admin', 'changeit');
  });
  return {
    get node() {
      return running.node;
    },
    get client() {
      if (client === undefined) throw new Error('the node is not started yet: use the client inside a test');
      return client;
    },
    clientAs,
  };
}

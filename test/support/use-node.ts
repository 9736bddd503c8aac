/**
 * One real node per test file: started before the file's tests, stopped after them, and the
 * stop must be a clean exit (code 0). Files that need more set-up add their own beforeAll after
 * calling this ("before" hooks run in the order they are registered, "after" hooks in reverse:
 * an afterAll that must run once the node has stopped is registered before calling this).
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { httpClient, type Http } from './http-client.js';
import { startNode, type NodeProcess } from './node-process.js';

export interface RunningNode {
  /** The node process (available once the file's tests run). */
  readonly node: NodeProcess;
  /** A client for the node, with admin credentials unless told otherwise. */
  readonly http: Http;
}

export function useNode(options?: Parameters<typeof startNode>[0]): RunningNode {
  let node: NodeProcess | undefined;
  let client: Http | undefined;
  beforeAll(async () => {
    node = await startNode(options);
    client = httpClient(node.baseUrl);
  });
  afterAll(async () => {
    if (node) expect(await node.stop()).toBe(0);
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the node is not started yet: use it inside a test or a later hook');
    return value;
  };
  return {
    get node() {
      return started(node);
    },
    http: (method, path, options) => started(client)(method, path, options),
  };
}

/**
 * GET /openapi.json from a real node: an OpenAPI 3 document generated from the zod schemas
 * that validate requests, listing the routes of every module with their parameters and bodies.
 */
import { describe, expect, it } from 'vitest';

import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

describe('GET /openapi.json', () => {
  it('lists the routes with the schemas that validate them', async () => {
    const response = await http('GET', '/openapi.json', { auth: false });
    expect(response.status).toBe(200);
    const doc = response.json();
    expect(doc.openapi).toMatch(/^3\./);
    const paths = Object.keys(doc.paths);
    for (const path of [
      '/streams/{stream}',
      '/streams/{stream}/metadata',
      '/users',
      '/users/{login}',
      '/users/{login}/command/reset-password',
      '/users/{login}/command/change-password',
      '/info',
      '/info/options',
      '/stats',
      '/gossip',
      '/ping',
      '/admin/shutdown',
      '/admin/mergeindexes',
    ]) {
      expect(paths, path).toContain(path);
    }
    const userItem = doc.paths['/users'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(userItem.properties)).toEqual(['LoginName', 'FullName', 'Groups', 'Password']);
    expect(userItem.properties.Groups.type).toBe('array');
    const reset = doc.paths['/users/{login}/command/reset-password'].post;
    expect(reset.parameters.map((p: { name: string; in: string }) => [p.name, p.in])).toEqual([['login', 'path']]);
    expect(doc.paths['/users/{login}'].get.responses['200'].content['application/json'].schema.properties).toHaveProperty('data');
    expect(doc.paths['/streams/{stream}'].get.parameters.some((p: { name: string }) => p.name === 'stream')).toBe(true);
  });
});

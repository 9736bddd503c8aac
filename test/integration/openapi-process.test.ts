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

  it('lists every status code and media type each route answers with', async () => {
    const doc = (await http('GET', '/openapi.json', { auth: false })).json();
    type Operation = { responses: Record<string, { content?: Record<string, unknown> }> };
    const operations = Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(
      ([path, methods]) => Object.entries(methods).map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, op })),
    );
    expect(operations.length).toBeGreaterThan(30);
    for (const { route, op } of operations) {
      const statuses = Object.keys(op.responses);
      expect(statuses, route).toContain('500');
      expect(statuses, route).toContain('503');
      expect(statuses.some((status) => /^2|^3/.test(status)), route).toBe(true);
      // Anonymous routes without input, and trailing-slash redirects, have no client error.
      const noClientError = ['GET /info', 'GET /gossip', 'POST /gossip', 'GET /ping'].includes(route) ||
        statuses.every((status) => status === '307' || status.startsWith('5'));
      if (!noClientError) expect(statuses.some((status) => /^4/.test(status)), route).toBe(true);
    }
    const responses = (path: string, method: string) => doc.paths[path][method].responses;
    const append = responses('/streams/{stream}', 'post');
    expect(Object.keys(append)).toEqual(expect.arrayContaining(['201', '307', '400', '401', '410', '413', '415']));
    // An error's message comes in the type Accept names (api/error-body.ts).
    expect(Object.keys(append['413'].content)).toEqual(['text/plain', 'application/json', 'application/xml']);
    expect(append['413'].content['application/json'].schema.properties).toHaveProperty('message');
    const read = responses('/streams/{stream}', 'get');
    expect(Object.keys(read)).toEqual(expect.arrayContaining(['200', '304', '400', '401', '404', '406', '410']));
    expect(Object.keys(read['200'].content)).toEqual(expect.arrayContaining([
      'application/vnd.eventstore.atom+json', 'application/atom+xml', 'application/json',
      'application/vnd.eventstore.streamdesc+json',
    ]));
    const createUser = responses('/users', 'post');
    expect(Object.keys(createUser)).toEqual(expect.arrayContaining(['201', '400', '401', '409']));
    expect(createUser['409'].content['application/json'].schema.properties).toHaveProperty('success');
    const scavenge = responses('/admin/scavenge', 'post');
    expect(Object.keys(scavenge['200'].content)).toEqual(['text/plain', 'application/json', 'text/xml', 'application/xml']);
    expect(scavenge['200'].content['application/json'].schema.properties).toHaveProperty('scavengeId');
    expect(Object.keys(responses('/admin/scavenge/{scavengeId}', 'get'))).toEqual(expect.arrayContaining(['200', '401', '404', '406']));
    expect(Object.keys(responses('/health/live', 'get'))).toEqual(expect.arrayContaining(['204', '400', '503']));
  });
});

/**
 * Issue 29, item 10: with projections off (RunProjections None, the default) the projection
 * routes are still in the OpenAPI document, since they answer: 404 with a message that says how
 * to turn projections on, as the original answers 404 there.
 */
import { describe, expect, it } from 'vitest';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

describe('projections off', () => {
  it('lists the projection routes in the OpenAPI document', async () => {
    const document = (await http('GET', '/openapi.json')).json<{ paths: Record<string, Record<string, unknown>> }>();
    const paths = Object.keys(document.paths);
    for (const path of ['/projections/any', '/projections/continuous', '/projection/{name}', '/projection/{name}/state', '/projection/{name}/result', '/projection/{name}/config'])
      expect(paths, path).toContain(path);
    expect(Object.keys(document.paths['/projection/{name}/config'] ?? {})).toEqual(expect.arrayContaining(['get', 'put']));
  });

  it('answers them 404 with a message naming --run-projections, also without credentials', async () => {
    for (const [method, path] of [['GET', '/projections/any'], ['GET', '/projection/%24by_category/state'], ['POST', '/projections/continuous?name=x']] as const) {
      for (const auth of [true, false]) {
        const res = await http(method, path, { auth });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.text).toMatch(/^Projections are not running on this node: start it with --run-projections /);
      }
    }
    expect((await http('GET', '/info')).json()).toMatchObject({ features: { projections: false } });
  });
});

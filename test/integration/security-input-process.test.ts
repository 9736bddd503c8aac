/**
 * No client input makes the security-owned endpoints answer 500: malformed Authorization
 * headers, odd login names, junk bodies and content types, odd paths and query strings.
 */
import { describe, expect, it } from 'vitest';

import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

const AUTHORIZATIONS = [
  'Basic',
  'Basic ',
  'Basic ====',
  'Basic !!!',
  `Basic ${Buffer.from('no-colon').toString('base64')}`,
  `Basic ${Buffer.from(':empty-login').toString('base64')}`,
  `Basic ${Buffer.from(`admin:${'x'.repeat(100_000)}`).toString('base64')}`,
  `Basic ${Buffer.from('ünïcødé:pässwörd').toString('base64')}`,
  `Basic ${Buffer.from('admin:changeit\u0000').toString('base64')}`,
  'Bearer abc.def.ghi',
  'Digest username="admin"',
];

const BODIES: Array<[string, string]> = [
  ['application/json', '{'],
  ['application/json', 'null'],
  ['application/json', '"string"'],
  ['application/json', '[1,2,3]'],
  ['application/json', '{"LoginName":{"a":1},"Password":["x"]}'],
  ['application/json', `{"LoginName":"${'l'.repeat(5000)}","Password":"p"}`],
  ['application/json', '{"LoginName":"a/b","Password":"p"}'],
  ['application/json', '{"LoginName":"$current","Password":"p"}'],
  ['application/json', '{"LoginName":" ","Password":"p"}'],
  ['application/json', '{"__proto__":{"admin":true},"LoginName":"proto","Password":"p"}'],
  ['text/plain', 'hello'],
  ['application/xml', '<a/>'],
  ['application/octet-stream', '\u0000\u0001'],
];

const USER_PATHS = [
  ['POST', '/users/'],
  ['PUT', '/users/admin'],
  ['POST', '/users/admin/command/reset-password'],
  ['POST', '/users/admin/command/change-password'],
];

const ODD_PATHS = [
  ['GET', '/users/%00'],
  ['GET', `/users/${'a'.repeat(3000)}`],
  ['GET', '/users/%E0%A4%A'],
  ['PUT', '/users/admin/command/explode'],
  ['GET', '/stats/%2e%2e/%2e%2e'],
  ['GET', `/stats/${'x/'.repeat(600)}`],
  ['GET', '/stats?format=pdf'],
  ['GET', '/stats?group=maybe'],
  ['GET', '/health/live?liveCode=abc'],
  ['GET', '/health/live?liveCode=99999'],
  ['POST', '/gossip'],
  ['DELETE', '/users/'],
  ['GET', '/info/options?x=%ZZ'],
];

describe('hostile input', () => {
  it('malformed credentials are 401 (never 500) on every protected endpoint', async () => {
    for (const authorization of AUTHORIZATIONS) {
      for (const path of ['/users', '/stats', '/info/options', '/streams/some-stream']) {
        const response = await http('GET', path, { headers: { authorization, accept: 'application/json' } });
        expect(response.status, `${authorization.slice(0, 30)} ${path}`).toBeLessThan(500);
      }
    }
  });

  it('junk bodies on user commands are 4xx', async () => {
    for (const [method, path] of USER_PATHS) {
      for (const [contentType, body] of BODIES) {
        const response = await http(method ?? 'POST', path ?? '/', { headers: { 'content-type': contentType }, body });
        expect(response.status, `${method} ${path} ${contentType} ${body.slice(0, 40)}`).toBeLessThan(500);
      }
    }
  });

  it('odd paths and query strings are never 500', async () => {
    for (const [method, path] of ODD_PATHS) {
      const response = await http(method ?? 'GET', path ?? '/', {});
      expect(response.status, `${method} ${path?.slice(0, 60)}`).toBeLessThan(500);
    }
    expect(running.node.child.exitCode).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { describeError } from './describe-error.js';

describe('describeError', () => {
  it('renders an Error by its message, code and cause', () => {
    expect(describeError(new Error('boom'))).toBe('boom');
    expect(describeError(Object.assign(new Error('connect ECONNREFUSED 10.96.0.1:443'), { code: 'ECONNREFUSED' }))).toBe('connect ECONNREFUSED 10.96.0.1:443');
    expect(describeError(Object.assign(new Error('refused'), { code: 'EDBOP_EXEC_DENIED', statusCode: 403 }))).toBe('refused (EDBOP_EXEC_DENIED, HTTP 403)');
    expect(describeError(new Error('outer', { cause: new Error('inner') }))).toBe('outer (cause: inner)');
    expect(describeError(new AggregateError([new Error('a'), new Error('b')], 'both failed'))).toBe('both failed: a; b');
  });

  it('renders a Kubernetes V1Status by its message, reason and code', () => {
    const status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods "hc-0" is forbidden: User "system:serviceaccount:ops:eventdb-operator" cannot create resource "pods/exec" in API group "" in the namespace "db"',
      reason: 'Forbidden',
      details: { name: 'hc-0', kind: 'pods' },
      code: 403,
    };
    expect(describeError(status)).toBe(`${status.message} (Forbidden, HTTP 403)`);
    // the status channel of an exec whose command failed
    expect(describeError({ metadata: {}, status: 'Failure', message: 'command terminated with non-zero exit code: exit status 127', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '127' }] } })).toBe(
      'command terminated with non-zero exit code: exit status 127 (NonZeroExitCode): 127',
    );
  });

  it('renders a WebSocket ErrorEvent by the error it carries, or its message', () => {
    // what ws hands to onerror, and client-node's Exec rejects with
    const target = { readyState: 3, url: 'wss://10.96.0.1/api/v1/namespaces/db/pods/hc-0/exec' };
    expect(describeError({ type: 'error', target, message: 'Unexpected server response: 403', error: new Error('Unexpected server response: 403') })).toBe('Unexpected server response: 403');
    expect(describeError({ type: 'error', target, message: 'getaddrinfo ENOTFOUND kubernetes' })).toBe('getaddrinfo ENOTFOUND kubernetes');
    expect(describeError({ type: 'close', code: 1006, reason: '', wasClean: false })).toBe('the WebSocket closed with code 1006');
  });

  it('never says [object Object]', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular['self'] = circular;
    for (const value of [{}, { a: 1 }, circular, [], null, undefined, 42, '', Object.create(null), new (class Strange {})()]) {
      const text = describeError(value);
      expect(text).not.toContain('[object');
      expect(text.length).toBeGreaterThan(0);
    }
    expect(describeError({ a: 1 })).toBe('{"a":1}');
    expect(describeError(undefined)).toBe('no error detail (undefined)');
    expect(describeError(new (class Strange {})())).toBe('an error of type Strange without a message');
    expect(describeError('x'.repeat(5000)).length).toBe(1000);
  });
});

import { describe, expect, it } from 'vitest';
import { clientErrorResponse, defaultErrorMessage, negotiateErrorFormat, renderErrorBody } from './error-body.js';

describe('negotiateErrorFormat', () => {
  it('answers text when Accept is missing, empty, a wildcard or names nothing it knows', () => {
    expect(negotiateErrorFormat(undefined)).toBe('text');
    expect(negotiateErrorFormat('')).toBe('text');
    expect(negotiateErrorFormat('*/*')).toBe('text');
    expect(negotiateErrorFormat('text/html')).toBe('text');
    expect(negotiateErrorFormat('image/png;q=1')).toBe('text');
  });

  it('maps JSON and XML types, +json and +xml included', () => {
    expect(negotiateErrorFormat('application/json')).toBe('json');
    expect(negotiateErrorFormat('application/vnd.eventstore.atom+json')).toBe('json');
    expect(negotiateErrorFormat('application/vnd.eventstore.events+json')).toBe('json');
    expect(negotiateErrorFormat('application/atom+xml')).toBe('xml');
    expect(negotiateErrorFormat('text/xml')).toBe('xml');
    expect(negotiateErrorFormat('application/xml')).toBe('xml');
  });

  it('takes the highest quality first, then the order, and never q=0', () => {
    expect(negotiateErrorFormat('application/xml;q=0.5, application/json')).toBe('json');
    expect(negotiateErrorFormat('application/json, application/xml')).toBe('json');
    expect(negotiateErrorFormat('text/html, application/xml;q=0.9, */*;q=0.8')).toBe('xml');
    expect(negotiateErrorFormat('application/json;q=0')).toBe('text');
    expect(negotiateErrorFormat(['text/html', 'application/json'])).toBe('json');
  });
});

describe('renderErrorBody', () => {
  it('renders the message as text, JSON and well-formed XML', () => {
    expect(renderErrorBody('text', 404, 'Not Found', 'gone')).toBe('gone');
    expect(JSON.parse(renderErrorBody('json', 404, 'Not Found', 'gone'))).toEqual({ status: 404, error: 'Not Found', message: 'gone' });
    const xml = renderErrorBody('xml', 400, 'Bad Request', 'a <b> & \u0000 c');
    expect(xml).toContain('<message>a &lt;b&gt; &amp; \uFFFD c</message>');
    expect(xml).toContain('<status>400</status>');
  });
});

describe('defaultErrorMessage', () => {
  it('says what went wrong for the statuses routes answer empty', () => {
    expect(defaultErrorMessage(401, 'GET', '/users', false)).toMatch(/credentials/);
    expect(defaultErrorMessage(401, 'GET', '/users', true)).toMatch(/wrong/);
    expect(defaultErrorMessage(404, 'GET', '/x', false)).toBe('Not found: nothing at /x.');
    expect(defaultErrorMessage(410, 'GET', '/streams/s', false)).toMatch(/deleted/);
  });
});

describe('clientErrorResponse', () => {
  it('is a complete text/plain HTTP answer that closes the connection', () => {
    const answer = clientErrorResponse('HPE_INVALID_METHOD');
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toContain('Content-Type: text/plain; charset=utf-8');
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(head).toContain('Connection: close');
    expect(clientErrorResponse('HPE_HEADER_OVERFLOW')).toMatch(/^HTTP\/1\.1 431 /);
  });
});

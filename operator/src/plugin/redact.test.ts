import { describe, expect, it } from 'vitest';
import { REDACTED, redactList, redactObject, redactSecret, redactionNotice, scrubText, secretValues } from './redact.js';
import { readTar, tarGz } from './tar.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const PASSWORD = 'Xk3pQ9vLm2Rt7Wz4Hc8Nb5Yd';
const adminSecret = {
  apiVersion: 'v1',
  kind: 'Secret',
  type: 'kubernetes.io/basic-auth',
  metadata: { name: 'orders-admin', namespace: 'shop', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': `{"data":{"password":"${b64(PASSWORD)}"}}` }, managedFields: [{}] },
  data: { username: b64('admin'), password: b64(PASSWORD) },
};

describe('the report\'s redaction', () => {
  it('keeps a Secret\'s name, type and key names, never its data or its last-applied annotation', () => {
    const redacted = redactSecret(adminSecret);
    expect(redacted).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'orders-admin', namespace: 'shop', labels: undefined, creationTimestamp: undefined },
      type: 'kubernetes.io/basic-auth',
      data: { username: REDACTED, password: REDACTED },
    });
    expect(JSON.stringify(redactList([adminSecret]))).not.toContain(b64(PASSWORD));
    expect(secretValues(adminSecret)).toEqual(['admin', PASSWORD]);
  });

  it('drops managedFields and last-applied from other objects and blanks secret-looking env values', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'orders-0', managedFields: [{ manager: 'x' }], annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', keep: 'yes' } },
      spec: { containers: [{ name: 'eventdb', env: [{ name: 'SERVICE_DB', value: '/data' }, { name: 'SERVICE_DEFAULT_ADMIN_PASSWORD', value: PASSWORD }, { name: 'SERVICE_OPS_PASSWORD', valueFrom: { secretKeyRef: { name: 'orders-ops', key: 'password' } } }] }] },
    };
    const redacted = redactObject(pod) as { metadata: Record<string, unknown>; spec: { containers: { env: unknown[] }[] } };
    expect(redacted.metadata['managedFields']).toBeUndefined();
    expect(redacted.metadata['annotations']).toEqual({ keep: 'yes' });
    expect(redacted.spec.containers[0]?.env).toEqual([
      { name: 'SERVICE_DB', value: '/data' },
      { name: 'SERVICE_DEFAULT_ADMIN_PASSWORD', value: REDACTED },
      { name: 'SERVICE_OPS_PASSWORD', valueFrom: { secretKeyRef: { name: 'orders-ops', key: 'password' } } },
    ]);
  });

  it('scrubs every Secret value from text, plain, base64 and PEM lines, and Basic credentials', () => {
    const pemLine = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7';
    const key = `-----BEGIN PRIVATE KEY-----\n${pemLine}\n-----END PRIVATE KEY-----\n`;
    const log = [`{"msg":"login","password":"${PASSWORD}"}`, `token ${b64(PASSWORD)}`, `key ${pemLine}`, 'authorization: Basic YWRtaW46b3RoZXI=', 'user admin logged in'].join('\n');
    const scrubbed = scrubText(log, [PASSWORD, 'admin', key]);
    expect(scrubbed).not.toContain(PASSWORD);
    expect(scrubbed).not.toContain(b64(PASSWORD));
    expect(scrubbed).not.toContain(pemLine);
    expect(scrubbed).not.toContain('YWRtaW46b3RoZXI=');
    // short values like the user name are names, not secrets: ordinary text stays readable
    expect(scrubbed).toContain('user admin logged in');
    expect(redactionNotice([{ name: 'orders-admin', type: 'kubernetes.io/basic-auth', keys: ['username', 'password'] }])).toContain('orders-admin  kubernetes.io/basic-auth  keys: username, password');
  });

  it('writes a tar.gz that reads back file by file, long names included', () => {
    const long = `report-orders-20261202-020000/nodes/${'x'.repeat(90)}/stats.json`;
    const archive = tarGz([
      { name: 'report/a.txt', content: 'hello\n' },
      { name: long, content: Buffer.alloc(1025, 7) },
      { name: 'report/empty', content: '' },
    ]);
    expect(archive[0]).toBe(0x1f);
    const files = readTar(archive);
    expect([...files.keys()]).toEqual(['report/a.txt', long, 'report/empty']);
    expect(files.get('report/a.txt')?.toString()).toBe('hello\n');
    expect(files.get(long)?.length).toBe(1025);
  });
});

/**
 * PURE: what keeps secrets out of a support bundle. Secrets go in as their name, type and key
 * names only; every other object loses its managedFields and the last-applied annotation (which
 * can carry a Secret's data), and env values whose names say they are secret. Then every file of
 * the bundle (logs included) is scrubbed of every value that was in a Secret (as text and in
 * base64), in case a node or the operator ever logged one.
 */

export const REDACTED = '<redacted>';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const SECRET_ENV = /PASSWORD|SECRET|TOKEN|PRIVATE|CREDENTIAL|LICEN[CS]E/i;

type Json = Record<string, unknown>;

export interface RedactedSecret {
  readonly name: string;
  readonly type: string | undefined;
  readonly keys: readonly string[];
}

/** A Secret as the bundle holds it: no data, the key names only. */
export function redactSecret(secret: Json): Json {
  const metadata = (secret['metadata'] ?? {}) as Json;
  const keys = [...Object.keys((secret['data'] ?? {}) as Json), ...Object.keys((secret['stringData'] ?? {}) as Json)];
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: metadata['name'], namespace: metadata['namespace'], labels: metadata['labels'], creationTimestamp: metadata['creationTimestamp'] },
    type: secret['type'],
    data: Object.fromEntries(keys.map((key) => [key, REDACTED])),
  };
}

/** Every value a Secret holds (decoded), so the bundle can be scrubbed of them. */
export function secretValues(secret: Json): string[] {
  const values: string[] = [];
  for (const value of Object.values((secret['data'] ?? {}) as Json)) if (typeof value === 'string') values.push(Buffer.from(value, 'base64').toString('utf8'));
  for (const value of Object.values((secret['stringData'] ?? {}) as Json)) if (typeof value === 'string') values.push(value);
  return values;
}

function redactEnv(container: Json): Json {
  const env = container['env'];
  if (!Array.isArray(env)) return container;
  return {
    ...container,
    env: env.map((entry: Json) => (typeof entry['value'] === 'string' && SECRET_ENV.test(String(entry['name'] ?? '')) ? { ...entry, value: REDACTED } : entry)),
  };
}

/** Any object of the bundle: Secrets by redactSecret, the rest without managedFields, last-applied, secret env values. */
export function redactObject(object: Json): Json {
  if (object['kind'] === 'Secret') return redactSecret(object);
  const metadata = { ...((object['metadata'] ?? {}) as Json) };
  delete metadata['managedFields'];
  if (metadata['annotations'] !== undefined) {
    const annotations = { ...(metadata['annotations'] as Json) };
    delete annotations[LAST_APPLIED];
    metadata['annotations'] = annotations;
  }
  const result: Json = { ...object, metadata };
  const spec = object['spec'] as Json | undefined;
  if (spec !== undefined && (Array.isArray(spec['containers']) || Array.isArray(spec['initContainers']))) {
    result['spec'] = {
      ...spec,
      ...(Array.isArray(spec['containers']) ? { containers: (spec['containers'] as Json[]).map(redactEnv) } : {}),
      ...(Array.isArray(spec['initContainers']) ? { initContainers: (spec['initContainers'] as Json[]).map(redactEnv) } : {}),
    };
  }
  const template = (spec?.['template'] as Json | undefined)?.['spec'] as Json | undefined;
  if (template !== undefined && Array.isArray(template['containers'])) {
    result['spec'] = { ...(result['spec'] as Json), template: { ...(spec?.['template'] as Json), spec: { ...template, containers: (template['containers'] as Json[]).map(redactEnv) } } };
  }
  return result;
}

/** A list object (`kind: List`) of redacted items. */
export function redactList(items: readonly Json[]): Json {
  return { apiVersion: 'v1', kind: 'List', items: items.map(redactObject) };
}

/**
 * Replaces every secret value (at least 6 characters: shorter ones, like `admin`, are names
 * rather than secrets and would blank out ordinary words), and its base64 form, with <redacted>.
 */
export function scrubText(text: string, secrets: readonly string[]): string {
  let result = text;
  const needles = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < 6) continue;
    needles.add(secret);
    needles.add(Buffer.from(secret).toString('base64'));
    // Multi-line values (PEM keys): each long line on its own too.
    for (const line of secret.split('\n')) if (line.length >= 16) needles.add(line);
  }
  for (const needle of [...needles].sort((a, b) => b.length - a.length)) result = result.split(needle).join(REDACTED);
  // Basic credentials in anything logged, whatever the password.
  return result.replace(/(authorization["']?\s*[:=]\s*["']?Basic )[A-Za-z0-9+/=]+/gi, `$1${REDACTED}`);
}

/** The bundle's REDACTED.txt: which Secrets exist and that their data is not in the archive. */
export function redactionNotice(secrets: readonly RedactedSecret[]): string {
  return [
    'Secrets are never included in this report. These Secrets of the cluster exist; their data is redacted',
    '(only names, types and key names are in secrets.yaml), and every value they hold was scrubbed from every',
    'file of this archive (logs included) as text and as base64.',
    '',
    ...secrets.map((secret) => `${secret.name}  ${secret.type ?? '-'}  keys: ${secret.keys.join(', ') || '-'}`),
    '',
  ].join('\n');
}

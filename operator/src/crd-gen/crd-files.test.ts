import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GENERATED_HEADER, renderCrdFiles } from './crd-files.js';

const CRDS_DIRS = [
  fileURLToPath(new URL('../../../crds/', import.meta.url)),
  fileURLToPath(new URL('../../../charts/eventdb-operator/files/crds/', import.meta.url)),
];

type Json = { [key: string]: unknown };

/** Every schema node of a structural schema, with its path. */
function* schemaNodes(node: Json, path: string): Generator<[string, Json]> {
  yield [path, node];
  for (const [name, child] of Object.entries((node['properties'] ?? {}) as Record<string, Json>)) {
    yield* schemaNodes(child, `${path}.${name}`);
  }
  if (node['items'] !== undefined) yield* schemaNodes(node['items'] as Json, `${path}[]`);
  const additional = node['additionalProperties'];
  if (typeof additional === 'object' && additional !== null) yield* schemaNodes(additional as Json, `${path}{}`);
}

function versionOf(text: string): Json {
  const crd = parse(text) as { spec: { versions: Json[] } };
  return crd.spec.versions[0] as Json;
}

describe('generated CRDs', () => {
  const files = renderCrdFiles();

  it('match the committed crds/*.yaml and the chart\'s copies (run `make crds` after changing operator/src/api)', () => {
    for (const directory of CRDS_DIRS) {
      const committed = readdirSync(directory).filter((name) => name.endsWith('.yaml'));
      expect(committed.sort()).toEqual([...files.keys()].sort());
      for (const [fileName, text] of files) {
        expect(readFileSync(directory + fileName, 'utf8'), `${directory}${fileName} is stale: run make crds`).toBe(text);
      }
    }
  });

  it('are structural: every field has a type, and properties never sit beside additionalProperties', () => {
    for (const [fileName, text] of files) {
      expect(text.startsWith(GENERATED_HEADER)).toBe(true);
      const root = (versionOf(text)['schema'] as { openAPIV3Schema: Json }).openAPIV3Schema;
      for (const [path, node] of schemaNodes(root, fileName)) {
        const typed = node['type'] !== undefined || node['x-kubernetes-int-or-string'] === true;
        expect(typed, `${path} has no type`).toBe(true);
        expect(node['properties'] !== undefined && node['additionalProperties'] !== undefined, path).toBe(false);
        expect(node['$ref'], path).toBeUndefined();
      }
    }
  });

  it('describe every field (kubectl explain prints it): no property of any CRD without a description', () => {
    const missing: string[] = [];
    for (const [fileName, text] of files) {
      const root = (versionOf(text)['schema'] as { openAPIV3Schema: Json }).openAPIV3Schema;
      for (const [path, node] of schemaNodes(root, fileName)) {
        // array items and map values are described by the field that holds them
        if (path.endsWith('[]') || path.endsWith('{}')) continue;
        // the apiserver refuses anything but `type: object` on metadata, and describes it itself
        if (path === `${fileName}.metadata`) continue;
        const description = node['description'];
        if (typeof description !== 'string' || description.trim() === '') missing.push(path);
      }
    }
    expect(missing, `fields without a description (add .describe() in operator/src/api):\n${missing.join('\n')}`).toEqual([]);
  });

  it('carry CEL messages that say what to set instead of an operator-managed node option', () => {
    const all = [...files.values()].join('\n');
    expect(all).toContain('LicenseKey is managed by the operator: a licence key is a secret and does not belong in the resource: set spec.licenseSecret');
    expect(all).not.toContain('does not pass one yet');
    expect(all).not.toContain('the operator sets node priorities');
  });

  it('give BackupSchedule its short name, printer columns, CEL on the name length and an immutable cluster', () => {
    const text = files.get('eventdb.io_backupschedules.yaml') ?? '';
    const crd = parse(text) as { spec: { names: Json } };
    expect(crd.spec.names['shortNames']).toEqual(['edbbackupsched']);
    expect(text).toContain('size(self.metadata.name) <= 40');
    expect(text).toContain('spec.cluster of a BackupSchedule is immutable');
    expect(files.get('eventdb.io_scavengeschedules.yaml')).toContain('spec.cluster of a ScavengeSchedule is immutable');
  });

  it('give EventDBCluster short names, categories, printer columns and the status and scale subresources', () => {
    const text = files.get('eventdb.io_eventdbclusters.yaml') ?? '';
    const crd = parse(text) as { spec: { names: Json } };
    expect(crd.spec.names['shortNames']).toEqual(['edb', 'edbc']);
    expect(crd.spec.names['categories']).toEqual(['eventdb', 'all']);
    const version = versionOf(text);
    expect(version['subresources']).toEqual({
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
    });
    const columns = (version['additionalPrinterColumns'] as { name: string; priority?: number }[])
      .filter((column) => column.priority === undefined)
      .map((column) => column.name);
    expect(columns).toEqual(['Replicas', 'Ready', 'Leader', 'Phase', 'Image', 'Age']);
  });

  it('carry the CEL rules of the contract', () => {
    const all = [...files.values()].join('\n');
    expect(all).toContain('self == 1 || self == 3 || self == 5');
    expect(all).toContain('self.replicas != 1 || self.readOnlyReplicas == 0');
    expect(all).toContain('self.threads == 1 || self.throttlePercent == 100');
    expect(all).toContain('sourceBackup is immutable');
    expect(all).toContain('tls.mode cannot switch between Disabled and SelfSigned or Secret while replicas is 3 or 5');
    expect(all).toContain('a Backup is immutable except spec.ttl');
    // storage: -1Gi and 0 refused, a size only grows, the class never changes
    expect(all).toContain("quantity(string(self)).isGreaterThan(quantity('0'))");
    expect(all).toContain('quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0');
    expect(all).toContain('storageClassName cannot change');
  });

  it('type spec.configuration with the node options (PascalCase), without their defaults', () => {
    const text = files.get('eventdb.io_eventdbclusters.yaml') ?? '';
    const root = (versionOf(text)['schema'] as { openAPIV3Schema: Json }).openAPIV3Schema;
    const spec = (root['properties'] as Record<string, Json>)['spec'] as Json;
    const configuration = (spec['properties'] as Record<string, Json>)['configuration'] as Json;
    const properties = configuration['properties'] as Record<string, Json>;
    expect(properties['MaxMemTableSize']).toMatchObject({ type: 'integer', minimum: 1 });
    expect(properties['MemDb']).toMatchObject({ type: 'boolean' });
    expect(properties['Config']).toBeUndefined();
    for (const [key, property] of Object.entries(properties)) expect(property['default'], key).toBeUndefined();
  });
});

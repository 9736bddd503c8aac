import { describe, expect, it } from 'vitest';
import { compareWithManifest, parseManifest, type Manifest } from './manifest.js';

const SHA_A = 'a'.repeat(64);
const SHA_B = 'b'.repeat(64);
const manifest: Manifest = {
  format: 1, kind: 'full', nodeId: 'n1', source: { db: '/d', index: '/i', host: 'h' },
  startedAt: 't0', completedAt: 't1', writerAtStartPosition: 0, writerPosition: 10, chaserPosition: 5,
  files: [
    { path: 'db/chunk-000000.000000', sizeBytes: 10, sha256: SHA_A, mtimeMs: 1 },
    { path: 'db/writer.chk', sizeBytes: 1024, sha256: SHA_A, mtimeMs: 1 },
    { path: 'index/indexmap', sizeBytes: 5, sha256: SHA_A, mtimeMs: 1 },
  ],
};

describe('backup manifest', () => {
  it('round-trips and rejects a damaged one, naming the field', () => {
    expect(parseManifest(JSON.stringify(manifest))).toEqual(manifest);
    expect(() => parseManifest('{')).toThrow('the manifest is not JSON');
    expect(() => parseManifest(JSON.stringify({ ...manifest, nodeId: '' }))).toThrow('nodeId');
    expect(() => parseManifest(JSON.stringify({ ...manifest, files: [{ ...manifest.files[0], path: '../etc/passwd' }] }))).toThrow('files.0.path');
    expect(() => parseManifest(JSON.stringify({ ...manifest, files: [{ ...manifest.files[0], path: 'db/../../etc/passwd' }] }))).toThrow('files.0.path');
  });

  it('reports a changed, resized, missing or unexpected file', () => {
    expect(compareWithManifest(manifest, [
      { path: 'db/chunk-000000.000000', sizeBytes: 10, sha256: SHA_A },
      { path: 'db/writer.chk', sizeBytes: 1024, sha256: SHA_A },
      { path: 'index/indexmap', sizeBytes: 5, sha256: SHA_A },
    ])).toEqual([]);
    const problems = compareWithManifest(manifest, [
      { path: 'db/chunk-000000.000000', sizeBytes: 10, sha256: SHA_B },
      { path: 'db/writer.chk', sizeBytes: 1000, sha256: SHA_A },
      { path: 'index/extra', sizeBytes: 1, sha256: SHA_A },
    ]);
    expect(problems.map((p) => [p.path, p.problem])).toEqual([
      ['db/chunk-000000.000000', 'checksum'],
      ['db/writer.chk', 'size'],
      ['index/extra', 'unexpected'],
      ['index/indexmap', 'missing'],
    ]);
  });
});

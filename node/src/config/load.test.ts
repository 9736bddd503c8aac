import { describe, expect, it } from 'vitest';
import { ConfigError, describeModifiedOptions, loadConfig } from './load.js';
import { envName, flagName, yamlKey } from './option-names.js';

const noFile = (): string => {
  throw new Error('no file expected');
};

function load(
  argv: string[],
  env: Record<string, string> = {},
  files: Record<string, string> = {},
) {
  return loadConfig({
    argv,
    env,
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  });
}

function issuesOf(run: () => unknown): string[] {
  try {
    run();
  } catch (err: unknown) {
    if (err instanceof ConfigError) return [...err.issues];
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('AutoScavenge: {Enabled: false} in YAML, --auto-scavenge-enabled and SERVICE_AUTO_SCAVENGE(_)_ENABLED all set one option', () => {
    expect(load([]).config.autoScavengeEnabled).toBe(true);
    const yaml = load(['--config', 'c.yaml'], {}, { 'c.yaml': 'AutoScavenge:\n  Enabled: false\n' });
    expect(yaml.config.autoScavengeEnabled).toBe(false);
    expect(yaml.sources.autoScavengeEnabled).toBe('file');
    expect(load(['--auto-scavenge-enabled', 'false']).config.autoScavengeEnabled).toBe(false);
    expect(load([], { SERVICE_AUTO_SCAVENGE_ENABLED: 'false' }).config.autoScavengeEnabled).toBe(false);
    expect(load([], { SERVICE_AUTO_SCAVENGE__ENABLED: 'false' }).config.autoScavengeEnabled).toBe(false);
    expect(issuesOf(() => load(['--config', 'c.yaml'], {}, { 'c.yaml': 'AutoScavenge:\n  Enable: false\n' })))
      .toEqual([expect.stringContaining('unknown option AutoScavengeEnable')]);
  });

  it("takes the original's EVENTSTORE_* and KURRENTDB_* variables as SERVICE_*, SERVICE_ over KURRENTDB_ over EVENTSTORE_, and says which one it ignored", () => {
    const original = load([], { EVENTSTORE_CHUNK_SIZE: '8192', KURRENTDB_RUN_PROJECTIONS: 'all', EVENTSTORE_AUTO_SCAVENGE__ENABLED: 'false' });
    expect(original.config.chunkSize).toBe(8192);
    expect(original.config.runProjections).toBe('All');
    expect(original.config.autoScavengeEnabled).toBe(false);
    expect(original.sources.chunkSize).toBe('env');
    expect(original.warnings).toEqual([]);
    for (const order of [
      { EVENTSTORE_CHUNK_SIZE: '4096', KURRENTDB_CHUNK_SIZE: '8192', SERVICE_CHUNK_SIZE: '16384' },
      { SERVICE_CHUNK_SIZE: '16384', KURRENTDB_CHUNK_SIZE: '8192', EVENTSTORE_CHUNK_SIZE: '4096' },
    ]) {
      const all = load([], order);
      expect(all.config.chunkSize).toBe(16384);
      expect(all.warnings).toEqual(expect.arrayContaining([
        'KURRENTDB_CHUNK_SIZE ignored: SERVICE_CHUNK_SIZE sets the same option and takes precedence',
        expect.stringMatching(/^EVENTSTORE_CHUNK_SIZE ignored: (SERVICE|KURRENTDB)_CHUNK_SIZE sets the same option/),
      ]));
    }
    const two = load([], { KURRENTDB_CHUNK_SIZE: '8192', EVENTSTORE_CHUNK_SIZE: '4096' });
    expect(two.config.chunkSize).toBe(8192);
    // the same value twice is no conflict
    expect(load([], { KURRENTDB_CHUNK_SIZE: '8192', EVENTSTORE_CHUNK_SIZE: '8192' }).warnings).toEqual([]);
    // an option the node does not have is named, not fatal (Kubernetes injects EVENTSTORE_PORT for a Service named eventstore)
    expect(load([], { EVENTSTORE_STREAM_INFO_CACHE_CAPACITY: '10', EVENTSTORE_PORT: 'tcp://10.0.0.1:2113' }).warnings).toEqual([
      'unknown environment variable EVENTSTORE_STREAM_INFO_CACHE_CAPACITY ignored',
      'unknown environment variable EVENTSTORE_PORT ignored',
    ]);
    // a bad value is named by the variable the user wrote
    expect(issuesOf(() => load([], { EVENTSTORE_CHUNK_SIZE: 'big' }))).toEqual([expect.stringContaining('EVENTSTORE_CHUNK_SIZE')]);
  });

  it("accepts the original's MaxAppendEventSize, MaxAppendSize and EnableAtomPubOverHttp", () => {
    const loaded = load(['--config', 'c.yaml'], { EVENTSTORE_ENABLE_ATOM_PUB_OVER_HTTP: 'false' }, { 'c.yaml': 'MaxAppendEventSize: 2048\nMaxAppendSize: 65536\n' });
    expect(loaded.config.maxEventSize).toBe(2048);
    expect(loaded.config.maxAppendSize).toBe(65536);
    expect(loaded.config.enableAtomPubOverHttp).toBe(false);
    expect(load([]).config).toMatchObject({ maxAppendSize: 1_048_576, enableAtomPubOverHttp: true });
    expect(issuesOf(() => load(['--max-append-size', '0']))).toEqual([expect.stringContaining('--max-append-size')]);
  });

  it('derives flag, YAML and env names from the key', () => {
    expect(flagName('maxMemTableSize')).toBe('--max-mem-table-size');
    expect(yamlKey('maxMemTableSize')).toBe('MaxMemTableSize');
    expect(envName('maxMemTableSize')).toBe('SERVICE_MAX_MEM_TABLE_SIZE');
  });

  it('returns the defaults with source default when nothing is given', () => {
    const { config, sources } = loadConfig({ argv: [], env: {}, readFile: noFile });
    expect(config).toMatchObject({
      db: 'db',
      index: 'index',
      memDb: false,
      chunkSize: 268_435_456,
      maxMemTableSize: 1_000_000,
      maxEventSize: 4_194_304,
      hashCollisionReadLimit: 100,
      nodeIp: '127.0.0.1',
      nodePort: 2113,
      scavengeHistoryMaxAge: 30,
      scavengeBackendPageSize: 16,
      scavengeBackendCacheSize: 67_108_864,
      scavengeHashUsersCacheCapacity: 100_000,
      disableScavengeMerging: false,
      alwaysKeepScavenged: false,
    });
    expect(sources.nodePort).toBe('default');
  });

  it('applies defaults < file < env < flags', () => {
    const files = {
      '/etc/node.yaml': 'HttpPort: 1000\nDb: /file/db\nIndex: /file/index\nMemDb: true\n',
    };
    const env = {
      SERVICE_CONFIG: '/etc/node.yaml',
      SERVICE_HTTP_PORT: '2000',
      SERVICE_DB: '/env/db',
    };
    const { config, sources } = load(['--http-port', '3000'], env, files);
    expect(config.nodePort).toBe(3000);
    expect(config.db).toBe('/env/db');
    expect(config.index).toBe('/file/index');
    expect(config.memDb).toBe(true);
    expect(sources).toMatchObject({
      nodePort: 'flag',
      db: 'env',
      index: 'file',
      memDb: 'file',
      chunkSize: 'default',
    });
  });

  it('parses booleans explicitly from flags and env', () => {
    expect(load(['--mem-db']).config.memDb).toBe(true);
    expect(load(['--mem-db', 'false']).config.memDb).toBe(false);
    expect(load(['--mem-db=False']).config.memDb).toBe(false);
    expect(load([], { SERVICE_MEM_DB: 'false' }).config.memDb).toBe(false);
    expect(load([], { SERVICE_INSECURE: 'TRUE' }).config.insecure).toBe(true);
    expect(issuesOf(() => load([], { SERVICE_MEM_DB: 'yes' }))).toEqual([
      "SERVICE_MEM_DB: expected true or false, got 'yes'",
    ]);
  });

  it('rejects unknown flags and file keys, naming them', () => {
    expect(issuesOf(() => load(['--no-such-option', '1']))).toContain(
      'unknown option --no-such-option',
    );
    const files = { 'c.yaml': 'HttpPrt: 1\n' };
    expect(issuesOf(() => load(['--config', 'c.yaml'], {}, files))).toEqual([
      'config file c.yaml: unknown option HttpPrt',
    ]);
  });

  it('reports every invalid value with the option name of its source', () => {
    const issues = issuesOf(() =>
      load(['--http-port', 'abc', '--chunk-size=12'], { SERVICE_LOG_LEVEL: 'loud' }),
    );
    expect(issues).toHaveLength(3);
    expect(issues.join('\n')).toMatch(/--http-port: expected an integer/);
    expect(issues.join('\n')).toMatch(/--chunk-size:/);
    expect(issues.join('\n')).toMatch(/SERVICE_LOG_LEVEL:/);
  });

  it('warns about unknown SERVICE_ variables and deprecated options without failing', () => {
    const loaded = load(['--always-keep-scavenged'], { SERVICE_X_SERVICE_HOST: '10.0.0.1' });
    expect(loaded.warnings.join('\n')).toMatch(/SERVICE_X_SERVICE_HOST/);
    expect(loaded.warnings.join('\n')).toMatch(/--always-keep-scavenged: .*deprecated/);
  });

  it('masks secrets when describing modified options', () => {
    const loaded = load(['--default-admin-password', 's3cret', '--http-port', '1']);
    const described = describeModifiedOptions(loaded);
    expect(described.defaultAdminPassword).toEqual({ value: '****', source: 'flag' });
    expect(described.nodePort).toEqual({ value: 1, source: 'flag' });
    expect(JSON.stringify(described)).not.toContain('s3cret');
  });
});

describe('loadConfig with overridden values', () => {
  it('still rejects an invalid value that a flag overrides', () => {
    expect(() => load(['--mem-db'], { SERVICE_MEM_DB: 'yes' })).toThrow(/SERVICE_MEM_DB/);
  });
});

describe('loadConfig ranges', () => {
  it('rejects values out of an option range, naming the option as given', () => {
    expect(issuesOf(() => load(['--http-port', '70000']))).toEqual([
      '--http-port: Too big: expected number to be <=65535',
    ]);
    expect(issuesOf(() => load([], { SERVICE_HTTP_PORT: '-1' }))[0]).toMatch(/^SERVICE_HTTP_PORT: Too small/);
    expect(issuesOf(() => load(['--scavenge-backend-page-size', '24']))).toEqual([
      '--scavenge-backend-page-size: must be a power of two (1, 2, 4, ... 64)',
    ]);
    expect(issuesOf(() => load(['--max-event-size', '20000000']))[0]).toMatch(/^--max-event-size: Too big/);
    expect(issuesOf(() => load(['--chunk-size', '4294967296']))[0]).toMatch(/^--chunk-size: Too big/);
    expect(load(['--http-port', '65535']).config.nodePort).toBe(65535);
  });
});

describe('loadConfig aliases and cluster options', () => {
  it('takes an alias in every source, naming it as given', () => {
    expect(load(['--http-port', '3001']).config.nodePort).toBe(3001);
    expect(load([], { SERVICE_HTTP_IP: '0.0.0.0' }).config.nodeIp).toBe('0.0.0.0');
    expect(load(['--config', 'f.yaml'], {}, { 'f.yaml': 'HttpPort: 3002\n' }).config.nodePort).toBe(3002);
    expect(load(['--node-port', '3003']).config.nodePort).toBe(3003);
    expect(issuesOf(() => load(['--http-port', '99999']))).toEqual(['--http-port: Too big: expected number to be <=65535']);
    expect(issuesOf(() => load([], { SERVICE_HTTP_PORT: 'x' }))).toEqual(["SERVICE_HTTP_PORT: expected an integer, got 'x'"]);
  });

  it('parses the cluster options and refuses a read-only replica outside a cluster', () => {
    const { config } = load([
      '--cluster-size', '3', '--node-priority', '-5', '--gossip-seed', 'a:2113,b:2113', '--read-only-replica',
      '--replication-port', '0', '--gossip-interval-ms', '100',
    ]);
    expect(config).toMatchObject({
      clusterSize: 3, nodePriority: -5, gossipSeed: 'a:2113,b:2113', readOnlyReplica: true, replicationPort: 0, gossipIntervalMs: 100,
    });
    expect(issuesOf(() => load(['--read-only-replica']))).toEqual([
      '--read-only-replica: a read-only replica follows a cluster: it needs --cluster-size 3 or more',
    ]);
    expect(issuesOf(() => load(['--cluster-size', '0']))[0]).toMatch(/^--cluster-size: Too small/);
  });
});

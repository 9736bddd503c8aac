/**
 * The node's options: one table, one zod schema. This is the only place defaults live.
 *
 * Names are derived mechanically from the camelCase key (see option-names.ts):
 * `chunkSize` <-> flag `--chunk-size` <-> YAML `ChunkSize` <-> env `SERVICE_CHUNK_SIZE`.
 * Each entry records its value kind so string sources (env, flags) are parsed explicitly;
 * booleans accept only true/false, never JS truthiness.
 */
import { isIP } from 'node:net';

import { z } from 'zod';
import { directoryProblem } from './paths.js';

export type OptionKind = 'boolean' | 'integer' | 'string';

export type OptionGroup =
  | 'Application'
  | 'Certificate'
  | 'Cluster'
  | 'Database'
  | 'Interface'
  | 'Logging'
  | 'Scavenge'
  | 'Projections'
  | 'Licensing';

export interface OptionSpec {
  readonly kind: OptionKind;
  readonly group: OptionGroup;
  readonly schema: z.ZodType;
  /** Value never printed in logs or /info/options. */
  readonly secret?: boolean;
  /** Set for deprecated options; logged as a warning when the option is given. */
  readonly deprecationMessage?: string;
  /** Other camelCase names accepted for it in every source (`httpPort` for `nodePort`). */
  readonly aliases?: readonly string[];
}

// The helpers' return types are inferred so the schema keeps each option's value type.
function integerOption(
  group: OptionGroup,
  defaultValue: number,
  description: string,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
) {
  const schema = z.number().int().min(min).max(max);
  return {
    kind: 'integer' as const,
    group,
    schema: schema.default(defaultValue).describe(description),
  };
}

function booleanOption(group: OptionGroup, defaultValue: boolean, description: string) {
  return {
    kind: 'boolean' as const,
    group,
    schema: z.boolean().default(defaultValue).describe(description),
  };
}

function stringOption(group: OptionGroup, defaultValue: string, description: string) {
  return {
    kind: 'string' as const,
    group,
    schema: z.string().min(1).default(defaultValue).describe(description),
  };
}

/** A directory the node keeps files in: refused under /proc or /sys (config/paths.ts). */
function directoryOption(group: OptionGroup, defaultValue: string, description: string) {
  return {
    kind: 'string' as const,
    group,
    schema: z
      .string()
      .min(1)
      .superRefine((value, ctx) => {
        const problem = directoryProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .default(defaultValue)
      .describe(description),
  };
}

/** A string option that may be empty (empty = not set; the description says what applies). */
function textOption(group: OptionGroup, description: string) {
  return {
    kind: 'string' as const,
    group,
    schema: z.string().default('').describe(description),
  };
}

const PORT_MAX = 65_535;

const LOG_FORMATS = ['json', 'pretty'] as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const RUN_PROJECTIONS = ['None', 'System', 'All'] as const;

/** `none`, `SYSTEM`, ... as the original parses enums: case-insensitively. */
function runProjectionsValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return RUN_PROJECTIONS.find((v) => v.toLowerCase() === value.trim().toLowerCase()) ?? value;
}

/** Every option of the node. Keys are camelCase; units are stated in the description. */
export const NODE_OPTIONS = {
  config: {
    kind: 'string' as const,
    group: 'Application' as const,
    schema: z
      .string()
      .min(1)
      .optional()
      .describe('Path of a YAML configuration file (PascalCase keys).'),
  },
  logLevel: {
    kind: 'string' as const,
    group: 'Logging' as const,
    schema: z
      .enum(LOG_LEVELS)
      .default('info')
      .describe(`Log level: ${LOG_LEVELS.join(', ')}.`),
  },
  logFormat: {
    kind: 'string' as const,
    group: 'Logging' as const,
    schema: z
      .enum(LOG_FORMATS)
      .default('json')
      .describe('Log format: json (one JSON object a line, for collectors) or pretty (one readable line an entry, for terminals).'),
  },
  insecure: booleanOption(
    'Application',
    false,
    'Serve plain HTTP without TLS and without certificates (logged as a warning). Without it the ' +
      'node needs --certificate-file, --certificate-private-key-file and --trusted-root-certificates-path.',
  ),
  certificateFile: textOption(
    'Certificate',
    'Node certificate, PEM (intermediate CA certificates may follow it in the file) or DER. ' +
      'Required unless --insecure; re-read on reload.',
  ),
  certificatePrivateKeyFile: textOption(
    'Certificate',
    'Private key of the node certificate, unencrypted PEM or DER (PKCS#8). Required unless --insecure; re-read on reload.',
  ),
  trustedRootCertificatesPath: textOption(
    'Certificate',
    'Folder of trusted root CA certificates (.crt, .cert, .cer, .pem, .der): every CA in it is ' +
      'trusted, so an old and a new CA can be trusted side by side. Required unless --insecure; re-read on reload.',
  ),
  certificateReservedNodeCommonName: textOption(
    'Certificate',
    'Common name other nodes\' certificates must carry to be accepted as nodes of this cluster ' +
      '(a wildcard such as *.cluster.test covers node-1.cluster.test). Empty: this node certificate\'s ' +
      'common name. Applied on reload.',
  ),
  connectionResetIntervalSec: {
    ...integerOption(
      'Certificate',
      600,
      'Node-to-node connections are re-established after this long, in seconds, so that ' +
        'certificates replaced by a reload reach every link (EventStoreDB: 10 minutes).',
      1,
      86_400,
    ),
    aliases: ['connectionResetInterval'],
  },
  defaultAdminPassword: {
    ...stringOption(
      'Application',
      'changeit',
      'Password of the default admin user, used when it is first created.',
    ),
    secret: true as const,
  },
  defaultOpsPassword: {
    ...stringOption(
      'Application',
      'changeit',
      'Password of the default ops user, used when it is first created.',
    ),
    secret: true as const,
  },
  dev: booleanOption(
    'Application',
    false,
    'Development mode: implies --insecure (plain HTTP, logged as a warning); licensed features ' +
      'such as auto-scavenge refuse to run in it.',
  ),
  allowAnonymousStreamAccess: booleanOption(
    'Application',
    false,
    'Let requests without credentials use streams whose ACL grants $all.',
  ),
  db: directoryOption('Database', 'db', 'Data directory: chunk files and checkpoints.'),
  index: directoryOption(
    'Database',
    'index',
    'Index directory: index tables, indexmap, stream existence filter.',
  ),
  memDb: booleanOption(
    'Database',
    false,
    'Keep the whole database in memory; nothing is written to disk.',
  ),
  chunkSize: integerOption(
    'Database',
    268_435_456,
    'Logical data size of one chunk file, in bytes.',
    4096,
    1_073_741_824,
  ),
  maxMemTableSize: integerOption(
    'Database',
    1_000_000,
    'Index entries kept in memory before they are written to a table.',
    1,
    100_000_000,
  ),
  maxEventSize: {
    ...integerOption(
      'Database',
      4_194_304,
      'Largest accepted event (data plus metadata), in bytes.',
      1,
      16_767_216, // a log record holds at most 16 MiB - 10,000 bytes, as in the original
    ),
    // the original's newer name for the same limit (KurrentDB's MaxAppendEventSize)
    aliases: ['maxAppendEventSize'],
  },
  maxAppendSize: integerOption(
    'Database',
    1_048_576,
    'Largest accepted gRPC append (the data and metadata of all its events), in bytes: a larger one ' +
      'fails with MaximumAppendSizeExceeded and writes nothing, as the original\'s MaxAppendSize.',
    1,
    16_767_216,
  ),
  streamExistenceFilterSize: integerOption(
    'Database',
    // EventStoreDB defaults to 256 MB; 32 MiB keeps a node's memory small and still answers
    // "no such stream" for about 30 million streams at ~2% false positives.
    33_554_432,
    'Size of the stream existence bloom filter, in bytes (0 disables it).',
    0,
    4_294_967_296,
  ),
  hashCollisionReadLimit: integerOption(
    'Database',
    100,
    'Index entries of other streams walked on a stream hash collision before the read gives up.',
    1,
    1_000_000,
  ),
  nodeIp: {
    kind: 'string' as const,
    group: 'Interface' as const,
    // An address, not a name: a bad one is a configuration error (exit 2), not a failed listen.
    schema: z
      .string()
      .min(1)
      .refine((value) => isIP(value) !== 0, { message: 'must be an IPv4 or IPv6 address' })
      .default('127.0.0.1')
      .describe('IP address the HTTP API listens on (0.0.0.0: every interface).'),
    aliases: ['httpIp'],
  },
  nodePort: {
    ...integerOption('Interface', 2113, 'TCP port of the HTTP API (0 picks a free port).', 0, PORT_MAX),
    aliases: ['httpPort'],
  },
  nodeHostAdvertiseAs: textOption(
    'Interface',
    'Host name or address other nodes use for this node\'s HTTP API (empty: the node IP, or the ' +
      'machine\'s first address when it listens on every interface).',
  ),
  nodePortAdvertiseAs: integerOption('Interface', 0, 'Port other nodes use for the HTTP API (0: the node port).', 0, PORT_MAX),
  advertiseHostToClientAs: textOption(
    'Interface',
    'Host name or address clients are told to use for this node in gossip (empty: as other nodes see it).',
  ),
  advertiseNodePortToClientAs: {
    ...integerOption('Interface', 0, 'HTTP port clients are told to use in gossip (0: as other nodes see it).', 0, PORT_MAX),
    aliases: ['advertiseHttpPortToClientAs'],
  },
  replicationIp: textOption('Interface', 'IP address of the node-to-node (replication) listener (empty: the node IP).'),
  replicationPort: integerOption(
    'Interface',
    1112,
    'TCP port of the node-to-node listener: replication and forwarded writes (0 picks a free port).',
    0,
    PORT_MAX,
  ),
  replicationHostAdvertiseAs: textOption(
    'Interface',
    'Host name or address other nodes use to reach the replication listener (empty: as for the HTTP API).',
  ),
  replicationPortAdvertiseAs: integerOption(
    'Interface',
    0,
    'Port other nodes use to reach the replication listener (0: the replication port).',
    0,
    PORT_MAX,
  ),
  clusterSize: integerOption(
    'Cluster',
    1,
    'Voting members of the cluster (1, 3, 5...); a write is acknowledged once cluster-size/2+1 hold it.',
    1,
    31,
  ),
  nodePriority: integerOption(
    'Cluster',
    0,
    'Preference for this node in elections among otherwise equal candidates (higher wins).',
    -2_147_483_648,
    2_147_483_647,
  ),
  gossipSeed: textOption(
    'Cluster',
    'Other nodes to find the cluster through: host:port of their HTTP API, comma-separated ' +
      '(orders-0.orders-headless:2113,...). Empty: discover through DNS.',
  ),
  discoverViaDns: booleanOption(
    'Cluster',
    true,
    'Without gossip seeds, find the other nodes by resolving --cluster-dns.',
  ),
  clusterDns: stringOption('Cluster', 'fake.dns', 'DNS name whose addresses are the cluster\'s nodes.'),
  clusterGossipPort: integerOption('Cluster', 2113, 'HTTP port of the nodes found through DNS.', 1, PORT_MAX),
  readOnlyReplica: booleanOption(
    'Cluster',
    false,
    'Follow the leader without voting or counting for quorum; refuses client writes.',
  ),
  gossipIntervalMs: integerOption('Cluster', 2000, 'Time between gossip rounds, in ms.', 10, 3_600_000),
  gossipTimeoutMs: integerOption('Cluster', 2500, 'Time a gossip request may take, in ms.', 10, 3_600_000),
  leaderElectionTimeoutMs: integerOption(
    'Cluster',
    1000,
    'Time an election round may take before the next one starts, in ms.',
    10,
    3_600_000,
  ),
  commitTimeoutMs: integerOption(
    'Cluster',
    2000,
    'Time a write may wait for a quorum before the client is answered "Write timeout", in ms.',
    10,
    3_600_000,
  ),
  prepareTimeoutMs: integerOption(
    'Cluster',
    2000,
    'Time a write may wait to be written on the leader, in ms (forwarded writes included).',
    10,
    3_600_000,
  ),
  deadMemberRemovalPeriodSec: integerOption(
    'Cluster',
    1800,
    'Time after which a dead member is dropped from gossip, in seconds.',
    1,
    31_536_000,
  ),
  disableScavengeMerging: booleanOption(
    'Scavenge',
    false,
    'Do not merge small scavenged chunks into one physical chunk of about 256 MB.',
  ),
  scavengeHistoryMaxAge: integerOption(
    'Scavenge',
    30,
    'How long scavenge history streams are kept, in days.',
    0,
    36_500,
  ),
  alwaysKeepScavenged: {
    ...booleanOption(
      'Scavenge',
      false,
      'Always keep the newer chunk written by a scavenge (deprecated).',
    ),
    deprecationMessage: 'AlwaysKeepScavenged is deprecated and has no effect.',
  },
  scavengeBackendPageSize: {
    kind: 'integer' as const,
    group: 'Scavenge' as const,
    schema: z
      .number()
      .int()
      .min(1)
      .max(64)
      .refine((kib) => (kib & (kib - 1)) === 0, 'must be a power of two (1, 2, 4, ... 64)')
      .default(16)
      .describe('Page size of the scavenge database, in KiB (a power of two, 1 to 64).'),
  },
  scavengeBackendCacheSize: integerOption(
    'Scavenge',
    67_108_864,
    'Cache size of the scavenge database, in bytes.',
    0,
    17_179_869_184,
  ),
  scavengeHashUsersCacheCapacity: integerOption(
    'Scavenge',
    100_000,
    'Stream hashes remembered for collision checks during accumulation.',
    1,
    100_000_000,
  ),
  autoScavengeEnabled: booleanOption(
    'Scavenge',
    true,
    'Auto-scavenge (scheduled cluster scavenges; needs a licence key with the AUTO_SCAVENGE ' +
      'entitlement): on by default when licensed; false turns it off. YAML also as AutoScavenge: {Enabled: false}. ' +
      'Refused together with --dev or --mem-db.',
  ),
  licenseKey: {
    ...textOption('Licensing', 'Licence key (a signed token with entitlements and an expiry), verified offline at start.'),
    secret: true as const,
  },
  licensePublicKey: textOption(
    'Licensing',
    'Ed25519 public key licence keys are verified with (PEM, or base64 of its SPKI DER). Empty: the key the node ships.',
  ),
  enableAtomPubOverHttp: booleanOption(
    'Interface',
    true,
    'Serve the AtomPub HTTP API (/streams/*). On by default here (the original turns it off by ' +
      'default since 20.6); false: /streams/* answers 404, as the original without it. The gRPC ' +
      'protocol, the admin, user, projection and subscription routes are served either way.',
  ),
  runProjections: {
    kind: 'string' as const,
    group: 'Projections' as const,
    schema: z
      .preprocess(runProjectionsValue, z.enum(RUN_PROJECTIONS))
      .default('None')
      .describe(
        'Which projections run: None (the projections subsystem is off), System (the system ' +
          'projections), All (system and user projections).',
      ),
  },
  startStandardProjections: booleanOption(
    'Projections',
    false,
    'Start the system projections ($streams, $stream_by_category, $by_category, $by_event_type, ' +
      '$by_correlation_id) when the node starts.',
  ),
  projectionsQueryExpiry: integerOption(
    'Projections',
    5,
    'Minutes a transient projection (query) may go unused before it is deleted.',
    1,
  ),
  projectionCompilationTimeout: integerOption(
    'Projections',
    500,
    'Longest time the definition of a user projection (its top-level code) may run, in milliseconds.',
    1,
  ),
  projectionExecutionTimeout: integerOption(
    'Projections',
    250,
    'Longest time a user projection may spend on one event, in milliseconds (a projection config ' +
      'can override it).',
    1,
  ),
  maxProjectionStateSize: integerOption(
    'Projections',
    2_147_483_647,
    'Largest state (with its result) of a projection partition, in bytes; a projection whose state ' +
      'grows beyond it faults.',
    1,
  ),
  projectionMemoryLimit: integerOption(
    'Projections',
    128,
    'V8 heap limit of each user projection\'s worker thread, in MiB; a projection that needs more ' +
      'faults and the node goes on.',
    16,
  ),
} satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof NODE_OPTIONS;

type SchemaShape = { [K in OptionName]: (typeof NODE_OPTIONS)[K]['schema'] };

function buildShape(): SchemaShape {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(NODE_OPTIONS)) shape[name] = spec.schema;
  return shape as SchemaShape;
}

/** Unknown keys are errors: a typo must not be silently ignored. */
export const NodeConfigSchema = z
  .object(buildShape())
  .strict()
  .superRefine((config, ctx) => {
    if (config.readOnlyReplica && config.clusterSize < 3) {
      ctx.addIssue({
        code: 'custom',
        path: ['readOnlyReplica'],
        message: 'a read-only replica follows a cluster: it needs --cluster-size 3 or more',
      });
    }
  });

export type NodeConfig = z.infer<typeof NodeConfigSchema>;

export const OPTION_NAMES = Object.keys(NODE_OPTIONS) as OptionName[];

export function optionSpec(name: OptionName): OptionSpec {
  const spec: OptionSpec = NODE_OPTIONS[name];
  return spec;
}

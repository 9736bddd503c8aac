/**
 * The node's options: one table, one zod schema. This is the only place defaults live.
 *
 * Names are derived mechanically from the camelCase key (see option-names.ts):
 * `chunkSize` <-> flag `--chunk-size` <-> YAML `ChunkSize` <-> env `SERVICE_CHUNK_SIZE`.
 * Each entry records its value kind so string sources (env, flags) are parsed explicitly;
 * booleans accept only true/false, never JS truthiness.
 */
import { z } from 'zod';

export type OptionKind = 'boolean' | 'integer' | 'string';

export type OptionGroup = 'Application' | 'Database' | 'Interface' | 'Logging' | 'Scavenge';

export interface OptionSpec {
  readonly kind: OptionKind;
  readonly group: OptionGroup;
  readonly schema: z.ZodType;
  /** Value never printed in logs or /info/options. */
  readonly secret?: boolean;
  /** Set for deprecated options; logged as a warning when the option is given. */
  readonly deprecationMessage?: string;
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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

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
  insecure: booleanOption(
    'Application',
    false,
    'Serve plain HTTP without TLS and without certificates. TLS is not implemented yet, ' +
      'so the node ' +
      'always behaves as if this were true and says so at startup.',
  ),
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
  allowAnonymousStreamAccess: booleanOption(
    'Application',
    false,
    'Let requests without credentials use streams whose ACL grants $all.',
  ),
  db: stringOption('Database', 'db', 'Data directory: chunk files and checkpoints.'),
  index: stringOption(
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
  maxEventSize: integerOption(
    'Database',
    4_194_304,
    'Largest accepted event (data plus metadata), in bytes.',
    1,
    16_767_216, // a log record holds at most 16 MiB - 10,000 bytes, as in the original
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
  httpIp: stringOption('Interface', '127.0.0.1', 'IP address the HTTP API listens on.'),
  httpPort: integerOption(
    'Interface',
    2113,
    'TCP port of the HTTP API (0 picks a free port).',
    0,
    65_535,
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
} satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof NODE_OPTIONS;

type SchemaShape = { [K in OptionName]: (typeof NODE_OPTIONS)[K]['schema'] };

function buildShape(): SchemaShape {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(NODE_OPTIONS)) shape[name] = spec.schema;
  return shape as SchemaShape;
}

/** Unknown keys are errors: a typo must not be silently ignored. */
export const NodeConfigSchema = z.object(buildShape()).strict();

export type NodeConfig = z.infer<typeof NodeConfigSchema>;

export const OPTION_NAMES = Object.keys(NODE_OPTIONS) as OptionName[];

export function optionSpec(name: OptionName): OptionSpec {
  const spec: OptionSpec = NODE_OPTIONS[name];
  return spec;
}

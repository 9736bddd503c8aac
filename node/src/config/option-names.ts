/**
 * Mechanical derivation of an option's external names from its camelCase key, so no mapping
 * table has to be kept in step with the schema.
 */
import { OPTION_NAMES, optionSpec, type OptionName } from './schema.js';

export const ENV_PREFIX = 'SERVICE_';

/**
 * The original's prefixes, accepted beside SERVICE_ so that a compose file or Helm values written
 * for EventStoreDB or KurrentDB start this node unchanged. When one option is given under several
 * prefixes, SERVICE_ wins over KURRENTDB_, which wins over EVENTSTORE_ (the newest name first).
 */
export const ORIGINAL_ENV_PREFIXES = ['KURRENTDB_', 'EVENTSTORE_'] as const;

/** `EVENTSTORE_CHUNK_SIZE` -> `SERVICE_CHUNK_SIZE`; a SERVICE_ name or any other variable as it is. */
export function canonicalEnvName(variable: string): string {
  const prefix = ORIGINAL_ENV_PREFIXES.find((candidate) => variable.startsWith(candidate));
  return prefix === undefined ? variable : ENV_PREFIX + variable.slice(prefix.length);
}

/** 0 for SERVICE_, then the original's prefixes in order of precedence. */
export function envPrefixRank(variable: string): number {
  const index = ORIGINAL_ENV_PREFIXES.findIndex((candidate) => variable.startsWith(candidate));
  return index + 1;
}

function words(name: string): string[] {
  return name.split(/(?=[A-Z])/).map((word) => word.toLowerCase());
}

/** `chunkSize` -> `--chunk-size` (an alias's camelCase name works too) */
export function flagName(name: string): string {
  return `--${words(name).join('-')}`;
}

/** `chunkSize` -> `ChunkSize` */
export function yamlKey(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** `chunkSize` -> `SERVICE_CHUNK_SIZE` */
export function envName(name: string): string {
  return ENV_PREFIX + words(name).join('_').toUpperCase();
}

/** Each option's names: its own and its aliases (`nodePort` and `httpPort`). */
function namesOf(name: OptionName): readonly string[] {
  return [name, ...(optionSpec(name).aliases ?? [])];
}

function lookupTable(
  derive: (name: string) => string,
  fold: (s: string) => string,
): Map<string, OptionName> {
  return new Map(OPTION_NAMES.flatMap((name) => namesOf(name).map((spelling) => [fold(derive(spelling)), name] as const)));
}

const BY_FLAG = lookupTable(flagName, (s) => s);
const BY_YAML_KEY = lookupTable(yamlKey, (s) => s.toLowerCase());
const BY_ENV = lookupTable(envName, (s) => s);

export function optionByFlag(flag: string): OptionName | undefined {
  return BY_FLAG.get(flag);
}

/** YAML keys are matched case-insensitively (`MemDb`, `memDb` and `memdb` are the same key). */
export function optionByYamlKey(key: string): OptionName | undefined {
  return BY_YAML_KEY.get(key.toLowerCase());
}

export function optionByEnvName(variable: string): OptionName | undefined {
  return BY_ENV.get(variable);
}

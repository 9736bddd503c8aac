/**
 * Loads the node's configuration from defaults, a YAML file, SERVICE_* environment variables
 * and command-line flags, in increasing precedence. Pure: argv, env and file access are passed
 * in, so the loader is unit-tested without touching the process.
 *
 * Every problem is collected and reported at once, each naming the option as the user spelled
 * it (`--http-port`, `SERVICE_HTTP_PORT`, `HttpPort` in the file).
 */
import { parse as parseYaml } from 'yaml';
import { EventDbError } from '../errors.js';
import {
  envName,
  ENV_PREFIX,
  canonicalEnvName,
  envPrefixRank,
  flagName,
  optionByEnvName,
  optionByFlag,
  optionByYamlKey,
  yamlKey,
} from './option-names.js';
import {
  NodeConfigSchema,
  OPTION_NAMES,
  optionSpec,
  type NodeConfig,
  type OptionName,
} from './schema.js';

export type ConfigSource = 'default' | 'file' | 'env' | 'flag';

export interface LoadConfigInput {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly readFile: (path: string) => string;
}

export interface LoadedConfig {
  readonly config: NodeConfig;
  readonly sources: Readonly<Record<OptionName, ConfigSource>>;
  /** Non-fatal findings (unknown SERVICE_* variables, deprecated options) for the caller to log. */
  readonly warnings: readonly string[];
}

/** Thrown for any invalid or unknown option; the message lists every problem. */
export class ConfigError extends EventDbError {
  readonly issues: readonly string[];

  constructor(issues: readonly string[]) {
    super('EDB_CONFIG_INVALID', `invalid configuration:\n  ${issues.join('\n  ')}`, {
      httpStatus: 500,
    });
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

interface RawValue {
  readonly value: unknown;
  readonly source: Exclude<ConfigSource, 'default'>;
  /** The option as the user spelled it, for messages. */
  readonly label: string;
}

type RawValues = Map<OptionName, RawValue>;

export function loadConfig(input: LoadConfigInput): LoadedConfig {
  const issues: string[] = [];
  const warnings: string[] = [];
  const flags = loadConfigParseFlags(input.argv, issues);
  const env = loadConfigParseEnv(input.env, warnings);
  const configPath = flags.get('config')?.value ?? env.get('config')?.value;
  const file =
    typeof configPath === 'string'
      ? loadConfigReadFile(configPath, input.readFile, issues)
      : new Map();

  // Every given value is checked, even one a higher-precedence source overrides.
  const merged: RawValues = new Map();
  const candidate: Record<string, unknown> = {};
  for (const source of [file, env, flags]) {
    for (const [name, raw] of source) {
      const converted = convertValue(name, raw, issues);
      merged.set(name, raw);
      if (converted !== undefined) candidate[name] = converted;
    }
  }
  const parsed = NodeConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path[0] as OptionName | undefined;
      const label =
        name === undefined ? 'configuration' : (merged.get(name)?.label ?? flagName(name));
      issues.push(`${label}: ${issue.message}`);
    }
  }
  if (issues.length > 0 || !parsed.success) throw new ConfigError(issues);

  const sources = {} as Record<OptionName, ConfigSource>;
  for (const name of OPTION_NAMES) {
    sources[name] = merged.get(name)?.source ?? 'default';
    const deprecation = optionSpec(name).deprecationMessage;
    if (deprecation !== undefined && merged.has(name))
      warnings.push(`${merged.get(name)?.label}: ${deprecation}`);
  }
  return { config: parsed.data, sources, warnings };
}

/**
 * Flags: `--name=value`, `--name value`; a boolean may stand alone (`--mem-db` is true) or be
 * followed by true/false. Anything else (unknown flags, positional arguments) is an error.
 */
function loadConfigParseFlags(argv: readonly string[], issues: string[]): RawValues {
  const values: RawValues = new Map();
  for (let argIndex = 0; argIndex < argv.length; argIndex++) {
    const arg = argv[argIndex] ?? '';
    const match = /^(--[a-z0-9-]+)(?:=(.*))?$/is.exec(arg);
    const name = match?.[1] === undefined ? undefined : optionByFlag(match[1].toLowerCase());
    if (match === null || name === undefined) {
      issues.push(match === null ? `unexpected argument '${arg}'` : `unknown option ${match[1]}`);
      continue;
    }
    const label = match?.[1]?.toLowerCase() ?? flagName(name);
    let value: string | boolean | undefined = match[2];
    const next = argv[argIndex + 1];
    if (value === undefined && optionSpec(name).kind === 'boolean') {
      if (next !== undefined && /^(true|false)$/i.test(next)) {
        value = next;
        argIndex++;
      } else {
        value = true;
      }
    } else if (value === undefined) {
      if (next === undefined || next.startsWith('--')) {
        issues.push(`${label}: a value is required`);
        continue;
      }
      value = next;
      argIndex++;
    }
    values.set(name, { value, source: 'flag', label });
  }
  return values;
}

/**
 * Unknown SERVICE_* variables are only warned about: Kubernetes injects `<NAME>_SERVICE_HOST`
 * style variables for every Service, and a Service name must not be able to crash the node.
 */
function loadConfigParseEnv(env: LoadConfigInput['env'], warnings: string[]): RawValues {
  const values: RawValues = new Map();
  for (const [variable, value] of Object.entries(env)) {
    // EVENTSTORE_* and KURRENTDB_* are the original's names for the same options.
    const canonical = canonicalEnvName(variable);
    if (!canonical.startsWith(ENV_PREFIX) || value === undefined) continue;
    // `SERVICE_AUTO_SCAVENGE__ENABLED`: a double underscore separates a section, as in the original.
    const name = optionByEnvName(canonical) ?? optionByEnvName(canonical.replaceAll('__', '_'));
    if (name === undefined) {
      warnings.push(`unknown environment variable ${variable} ignored`);
      continue;
    }
    const earlier = values.get(name);
    if (earlier !== undefined) {
      // the earlier value's label is its variable: its prefix says which one wins
      const keepEarlier = envPrefixRank(earlier.label) <= envPrefixRank(variable);
      const [kept, dropped] = keepEarlier ? [earlier.label, variable] : [variable, earlier.label];
      if (String(earlier.value) !== value) warnings.push(`${dropped} ignored: ${kept} sets the same option and takes precedence`);
      if (keepEarlier) continue;
    }
    values.set(name, { value, source: 'env', label: variable });
  }
  return values;
}

function loadConfigReadFile(
  path: string,
  readFile: LoadConfigInput['readFile'],
  issues: string[],
): RawValues {
  const values: RawValues = new Map();
  let document: unknown;
  try {
    document = parseYaml(readFile(path));
  } catch (err: unknown) {
    issues.push(`config file ${path}: ${err instanceof Error ? err.message : String(err)}`);
    return values;
  }
  if (document === null || document === undefined) return values;
  if (typeof document !== 'object' || Array.isArray(document)) {
    issues.push(`config file ${path}: expected a mapping of option names to values`);
    return values;
  }
  for (const [key, value] of flattenSections(document as Record<string, unknown>)) {
    const name = optionByYamlKey(key);
    if (name === undefined || name === 'config') {
      issues.push(`config file ${path}: unknown option ${key}`);
      continue;
    }
    values.set(name, { value, source: 'file', label: `${key} (in ${path})` });
  }
  return values;
}

/**
 * A section of the YAML file (`AutoScavenge: {Enabled: false}`) names the options whose key is
 * the section's name followed by the inner key (`AutoScavengeEnabled`).
 */
function flattenSections(document: Record<string, unknown>): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(document)) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [inner, innerValue] of Object.entries(value as Record<string, unknown>)) entries.push([`${key}${inner}`, innerValue]);
    } else {
      entries.push([key, value]);
    }
  }
  return entries;
}

/** Converts a raw value to the option's kind; strings are parsed explicitly, never coerced. */
function convertValue(name: OptionName, raw: RawValue, issues: string[]): unknown {
  const kind = optionSpec(name).kind;
  const { value, label } = raw;
  if (kind === 'boolean') {
    if (typeof value === 'boolean') return value;
    if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) {
      return value.trim().toLowerCase() === 'true';
    }
    issues.push(`${label}: expected true or false, got '${String(value)}'`);
    return undefined;
  }
  if (kind === 'integer') {
    if (typeof value === 'number') return value;
    if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return Number(value.trim());
    issues.push(`${label}: expected an integer, got '${String(value)}'`);
    return undefined;
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  issues.push(`${label}: expected a string, got '${String(value)}'`);
  return undefined;
}

/** The options whose value differs from the default, secrets masked, for the startup log. */
export function describeModifiedOptions(
  loaded: LoadedConfig,
): Record<string, { value: unknown; source: ConfigSource }> {
  const modified: Record<string, { value: unknown; source: ConfigSource }> = {};
  for (const name of OPTION_NAMES) {
    const source = loaded.sources[name];
    if (source === 'default') continue;
    const value = optionSpec(name).secret === true ? '****' : loaded.config[name];
    modified[name] = { value, source };
  }
  return modified;
}

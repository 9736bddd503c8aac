/**
 * A subscription group's settings: the create/update body (EventStoreDB's SubscriptionConfigData,
 * property names matched case-insensitively), its defaults and validation, and the entry the
 * group is persisted as in `$persistentSubscriptionConfig` (PersistentSubscriptionEntry).
 *
 * Pure: no I/O. Two kinds of refusal, as in the original: `invalid` is the controller's own
 * validation (a plain-text 400), `fail` is the service's (a 400 whose body is the completion
 * message, result `Fail`).
 */
import { z } from 'zod';

export const CONSUMER_STRATEGIES = [
  'RoundRobin',
  'DispatchToSingle',
  'Pinned',
  'PinnedByCorrelation',
] as const;

export type ConsumerStrategyName = (typeof CONSUMER_STRATEGIES)[number];

export interface SubscriptionSettings {
  readonly resolveLinkTos: boolean;
  /** Event number to start from when the group has no checkpoint; -1 = only new events. */
  readonly startFrom: number;
  /** A delivered message not answered within this time is retried; 0 = never. */
  readonly messageTimeoutMs: number;
  /** Track per-consumer acknowledgement latencies (info `extraStatistics`). */
  readonly extraStatistics: boolean;
  /** Retries before a message is parked. */
  readonly maxRetryCount: number;
  readonly liveBufferSize: number;
  /** Messages held in memory ahead of delivery; also each HTTP consumer's in-flight limit. */
  readonly bufferSize: number;
  /** Events per read of the stream. */
  readonly readBatchSize: number;
  /** Time between checkpoints; 0 = only when maxCheckPointCount is reached. */
  readonly checkPointAfterMs: number;
  readonly minCheckPointCount: number;
  readonly maxCheckPointCount: number;
  /** Consumers allowed at once; 0 = no limit. */
  readonly maxSubscriberCount: number;
  readonly namedConsumerStrategy: ConsumerStrategyName;
}

/** SubscriptionConfigData's constructor defaults. */
export const DEFAULT_SETTINGS: SubscriptionSettings = {
  resolveLinkTos: false,
  startFrom: 0,
  messageTimeoutMs: 10_000,
  extraStatistics: false,
  maxRetryCount: 10,
  liveBufferSize: 500,
  bufferSize: 500,
  readBatchSize: 20,
  checkPointAfterMs: 1_000,
  minCheckPointCount: 10,
  maxCheckPointCount: 500,
  maxSubscriberCount: 10,
  namedConsumerStrategy: 'RoundRobin',
};

export type SettingsParse =
  | { readonly kind: 'ok'; readonly settings: SubscriptionSettings }
  /** Controller validation: answered as plain text (SendBadRequest). */
  | { readonly kind: 'invalid'; readonly message: string }
  /** Service refusal: answered as the completion message with result `Fail`. */
  | { readonly kind: 'fail'; readonly message: string };

const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

class BodyError extends Error {}

/** Case-insensitive view of a JSON object's properties (Json.NET matches names that way). */
function fieldsOf(body: Record<string, unknown>): (name: string) => unknown {
  const byLowerName = new Map<string, unknown>();
  for (const [key, value] of Object.entries(body)) byLowerName.set(key.toLowerCase(), value);
  return (name) => byLowerName.get(name.toLowerCase());
}

function readInteger(
  value: unknown,
  name: string,
  fallback: number,
  range: { min: number; max: number },
): number {
  if (value === undefined || value === null) return fallback;
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)
        ? Number(value)
        : Number.NaN;
  if (!Number.isInteger(number) || number < range.min || number > range.max) {
    throw new BodyError(`Invalid value for '${name}': expected an integer, got ${JSON.stringify(value)}`);
  }
  return number;
}

function readBoolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim()))
    return value.trim().toLowerCase() === 'true';
  throw new BodyError(`Invalid value for '${name}': expected true or false, got ${JSON.stringify(value)}`);
}

function readString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new BodyError(`Invalid value for '${name}': expected a string, got ${JSON.stringify(value)}`);
}

const INT32 = { min: INT32_MIN, max: INT32_MAX };
const NON_NEGATIVE_INT32 = { min: 0, max: INT32_MAX };

/**
 * Reads a create/update body (already parsed JSON, or XML converted to the same shape;
 * undefined for an empty body, which means "all defaults").
 */
export function parseSettingsBody(body: unknown): SettingsParse {
  if (body === undefined || body === null) return { kind: 'ok', settings: DEFAULT_SETTINGS };
  if (typeof body !== 'object' || Array.isArray(body)) {
    return { kind: 'invalid', message: 'Invalid subscription settings: expected a JSON object' };
  }
  const field = fieldsOf(body as Record<string, unknown>);
  let settings: SubscriptionSettings;
  let startPosition: string | undefined;
  let strategyText: string | undefined;
  let strategyGiven: boolean;
  let preferRoundRobin: boolean | undefined;
  try {
    startPosition = readString(field('startPosition'), 'startPosition');
    strategyGiven = field('namedConsumerStrategy') !== undefined;
    strategyText = readString(field('namedConsumerStrategy'), 'namedConsumerStrategy');
    const preferRaw = field('preferRoundRobin');
    preferRoundRobin =
      preferRaw === undefined ? undefined : readBoolean(preferRaw, 'preferRoundRobin', false);
    settings = {
      resolveLinkTos: readBoolean(field('resolveLinkTos'), 'resolveLinkTos', false),
      startFrom: readInteger(field('startFrom'), 'startFrom', 0, {
        min: Number.MIN_SAFE_INTEGER,
        max: Number.MAX_SAFE_INTEGER,
      }),
      messageTimeoutMs: readInteger(
        field('messageTimeoutMilliseconds'),
        'messageTimeoutMilliseconds',
        DEFAULT_SETTINGS.messageTimeoutMs,
        NON_NEGATIVE_INT32,
      ),
      extraStatistics: readBoolean(field('extraStatistics'), 'extraStatistics', false),
      maxRetryCount: readInteger(
        field('maxRetryCount'),
        'maxRetryCount',
        DEFAULT_SETTINGS.maxRetryCount,
        NON_NEGATIVE_INT32,
      ),
      liveBufferSize: readInteger(
        field('liveBufferSize'),
        'liveBufferSize',
        DEFAULT_SETTINGS.liveBufferSize,
        INT32,
      ),
      bufferSize: readInteger(field('bufferSize'), 'bufferSize', DEFAULT_SETTINGS.bufferSize, INT32),
      readBatchSize: readInteger(
        field('readBatchSize'),
        'readBatchSize',
        DEFAULT_SETTINGS.readBatchSize,
        INT32,
      ),
      checkPointAfterMs: readInteger(
        field('checkPointAfterMilliseconds'),
        'checkPointAfterMilliseconds',
        DEFAULT_SETTINGS.checkPointAfterMs,
        NON_NEGATIVE_INT32,
      ),
      minCheckPointCount: readInteger(
        field('minCheckPointCount'),
        'minCheckPointCount',
        DEFAULT_SETTINGS.minCheckPointCount,
        NON_NEGATIVE_INT32,
      ),
      maxCheckPointCount: readInteger(
        field('maxCheckPointCount'),
        'maxCheckPointCount',
        DEFAULT_SETTINGS.maxCheckPointCount,
        NON_NEGATIVE_INT32,
      ),
      maxSubscriberCount: readInteger(
        field('maxSubscriberCount'),
        'maxSubscriberCount',
        DEFAULT_SETTINGS.maxSubscriberCount,
        NON_NEGATIVE_INT32,
      ),
      namedConsumerStrategy: 'RoundRobin',
    };
  } catch (err: unknown) {
    if (err instanceof BodyError) return { kind: 'invalid', message: err.message };
    throw err;
  }
  const invalid = validateSizes(settings);
  if (invalid !== undefined) return { kind: 'invalid', message: invalid };
  if (startPosition !== undefined) {
    // `startPosition` (a string) wins over the deprecated `startFrom` when given.
    if (!/^\s*-?\d+\s*$/.test(startPosition) || !Number.isSafeInteger(Number(startPosition))) {
      return {
        kind: 'fail',
        message: `Invalid Start From position: '${startPosition}' is not an event number.`,
      };
    }
    settings = { ...settings, startFrom: Number(startPosition) };
  }
  if (settings.startFrom < -1) {
    return {
      kind: 'fail',
      message: 'Invalid Start From position: event number must be greater than or equal to -1.',
    };
  }
  // Given and empty (or null): the legacy preferRoundRobin flag decides; absent: RoundRobin.
  const strategy =
    strategyText !== undefined && strategyText !== ''
      ? strategyText
      : strategyGiven || preferRoundRobin === false
        ? preferRoundRobin === true
          ? 'RoundRobin'
          : 'DispatchToSingle'
        : 'RoundRobin';
  if (!isConsumerStrategy(strategy)) {
    return { kind: 'fail', message: `Consumer strategy ${strategy} does not exist.` };
  }
  return { kind: 'ok', settings: { ...settings, namedConsumerStrategy: strategy } };
}

export function isConsumerStrategy(name: string): name is ConsumerStrategyName {
  return (CONSUMER_STRATEGIES as readonly string[]).includes(name);
}

/** The controller's checks, with its messages (PersistentSubscriptionController.ValidateConfig). */
export function validateSizes(settings: SubscriptionSettings): string | undefined {
  if (settings.bufferSize <= 0) return `Buffer Size (${settings.bufferSize}) must be positive`;
  if (settings.liveBufferSize <= 0)
    return `Live Buffer Size (${settings.liveBufferSize}) must be positive`;
  if (settings.readBatchSize <= 0)
    return `Read Batch Size (${settings.readBatchSize}) must be positive`;
  if (!(settings.bufferSize > settings.readBatchSize))
    return `BufferSize (${settings.bufferSize}) must be larger than ReadBatchSize (${settings.readBatchSize})`;
  return undefined;
}

/** One group in `$persistentSubscriptionConfig` (PersistentSubscriptionEntry, camelCase). */
export interface ConfigEntry {
  readonly stream: string;
  readonly group: string;
  readonly resolveLinkTos: boolean;
  readonly extraStatistics: boolean;
  readonly messageTimeout: number;
  readonly startFrom: number;
  readonly startPosition: string;
  readonly liveBufferSize: number;
  readonly historyBufferSize: number;
  readonly maxRetryCount: number;
  readonly readBatchSize: number;
  readonly preferRoundRobin: boolean;
  readonly checkPointAfter: number;
  readonly minCheckPointCount: number;
  readonly maxCheckPointCount: number;
  readonly maxSubscriberCount: number;
  readonly namedConsumerStrategy: string;
}

export interface PersistedConfig {
  readonly version: string;
  readonly updated: string;
  readonly updatedBy: string;
  readonly entries: readonly ConfigEntry[];
}

export function toConfigEntry(
  stream: string,
  group: string,
  settings: SubscriptionSettings,
): ConfigEntry {
  return {
    stream,
    group,
    resolveLinkTos: settings.resolveLinkTos,
    extraStatistics: settings.extraStatistics,
    messageTimeout: settings.messageTimeoutMs,
    startFrom: settings.startFrom,
    startPosition: String(settings.startFrom),
    liveBufferSize: settings.liveBufferSize,
    historyBufferSize: settings.bufferSize,
    maxRetryCount: settings.maxRetryCount,
    readBatchSize: settings.readBatchSize,
    preferRoundRobin: settings.namedConsumerStrategy === 'RoundRobin',
    checkPointAfter: settings.checkPointAfterMs,
    minCheckPointCount: settings.minCheckPointCount,
    maxCheckPointCount: settings.maxCheckPointCount,
    maxSubscriberCount: settings.maxSubscriberCount,
    namedConsumerStrategy: settings.namedConsumerStrategy,
  };
}

const int = z.number().int();
const ConfigEntrySchema = z.looseObject({
  stream: z.string().min(1),
  group: z.string().min(1),
  resolveLinkTos: z.boolean().default(false),
  extraStatistics: z.boolean().default(false),
  messageTimeout: int.min(0).default(DEFAULT_SETTINGS.messageTimeoutMs),
  startFrom: int.default(0),
  startPosition: z.string().nullish(),
  liveBufferSize: int.default(DEFAULT_SETTINGS.liveBufferSize),
  historyBufferSize: int.default(DEFAULT_SETTINGS.bufferSize),
  maxRetryCount: int.min(0).default(DEFAULT_SETTINGS.maxRetryCount),
  readBatchSize: int.default(DEFAULT_SETTINGS.readBatchSize),
  preferRoundRobin: z.boolean().default(true),
  checkPointAfter: int.min(0).default(DEFAULT_SETTINGS.checkPointAfterMs),
  minCheckPointCount: int.min(0).default(DEFAULT_SETTINGS.minCheckPointCount),
  maxCheckPointCount: int.min(0).default(DEFAULT_SETTINGS.maxCheckPointCount),
  maxSubscriberCount: int.min(0).default(DEFAULT_SETTINGS.maxSubscriberCount),
  namedConsumerStrategy: z.string().nullish(),
});

const PersistedConfigSchema = z.looseObject({
  version: z.string(),
  updated: z.string().nullish(),
  updatedBy: z.string().nullish(),
  entries: z.array(z.unknown()).nullish(),
});

export interface LoadedEntry {
  readonly stream: string;
  readonly group: string;
  readonly settings: SubscriptionSettings;
}

export type ConfigParse =
  | {
      readonly kind: 'ok';
      readonly config: PersistedConfig;
      readonly groups: readonly LoadedEntry[];
      /** Entries that could not be used, each with the reason (logged, then ignored). */
      readonly skipped: readonly string[];
    }
  | { readonly kind: 'invalid'; readonly message: string };

/** Reads the config event's JSON; version "1" entries without a strategy use preferRoundRobin. */
export function parsePersistedConfig(json: unknown): ConfigParse {
  const parsed = PersistedConfigSchema.safeParse(json);
  if (!parsed.success) {
    return { kind: 'invalid', message: `invalid configuration: ${parsed.error.message}` };
  }
  const groups: LoadedEntry[] = [];
  const entries: ConfigEntry[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  for (const raw of parsed.data.entries ?? []) {
    const entry = ConfigEntrySchema.safeParse(raw);
    if (!entry.success) {
      skipped.push(`unreadable entry: ${entry.error.message}`);
      continue;
    }
    const e = entry.data;
    const strategy =
      e.namedConsumerStrategy === undefined || e.namedConsumerStrategy === null || e.namedConsumerStrategy === ''
        ? e.preferRoundRobin
          ? 'RoundRobin'
          : 'DispatchToSingle'
        : e.namedConsumerStrategy;
    const key = `${e.stream}::${e.group}`;
    if (!isConsumerStrategy(strategy)) {
      skipped.push(`${key}: invalid consumer strategy '${strategy}'`);
      continue;
    }
    if (seen.has(key)) {
      skipped.push(`${key}: duplicate entry`);
      continue;
    }
    const startText = e.startPosition ?? String(e.startFrom);
    const startFrom = /^-?\d+$/.test(startText) ? Number(startText) : e.startFrom;
    const settings: SubscriptionSettings = {
      resolveLinkTos: e.resolveLinkTos,
      startFrom,
      messageTimeoutMs: e.messageTimeout,
      extraStatistics: e.extraStatistics,
      maxRetryCount: e.maxRetryCount,
      liveBufferSize: e.liveBufferSize,
      bufferSize: e.historyBufferSize,
      readBatchSize: e.readBatchSize,
      checkPointAfterMs: e.checkPointAfter,
      minCheckPointCount: e.minCheckPointCount,
      maxCheckPointCount: e.maxCheckPointCount,
      maxSubscriberCount: e.maxSubscriberCount,
      namedConsumerStrategy: strategy,
    };
    const invalid = validateSizes(settings);
    if (invalid !== undefined) {
      skipped.push(`${key}: ${invalid}`);
      continue;
    }
    seen.add(key);
    groups.push({ stream: e.stream, group: e.group, settings });
    entries.push(toConfigEntry(e.stream, e.group, settings));
  }
  return {
    kind: 'ok',
    config: {
      version: '2',
      updated: parsed.data.updated ?? new Date(0).toISOString(),
      updatedBy: parsed.data.updatedBy ?? '',
      entries,
    },
    groups,
    skipped,
  };
}

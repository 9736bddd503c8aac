/**
 * Configuration reload (SIGHUP): the node re-reads its configuration sources (YAML file, SERVICE_*
 * environment, flags) through the same loader as at startup, applies the options that can change
 * while it runs (the log level), and says which other changed options need a restart. A reload
 * that finds an invalid configuration changes nothing and the node keeps running.
 *
 * Later reload steps (certificates) register with `addStep`; each runs after the options were
 * applied, with the newly loaded configuration.
 */
import { ConfigError, type LoadedConfig } from '../config/load.js';
import { yamlKey } from '../config/option-names.js';
import { OPTION_NAMES, optionSpec, type NodeConfig, type OptionName } from '../config/schema.js';
import type { Logger } from '../logging.js';

/** Options a running node applies on reload; any other changed option needs a restart. */
export const LIVE_OPTIONS: ReadonlySet<OptionName> = new Set<OptionName>(['logLevel']);

export interface OptionChange {
  readonly option: OptionName;
  readonly from: unknown;
  readonly to: unknown;
}

/** The options whose value differs between two configurations, in schema order. */
export function diffConfig(before: NodeConfig, after: NodeConfig): OptionChange[] {
  return OPTION_NAMES.filter((name) => before[name] !== after[name]).map((option) => ({
    option,
    from: before[option],
    to: after[option],
  }));
}

/** Changes keyed by the options' YAML names, secret values masked: for logs. */
export function describeChanges(changes: readonly OptionChange[]): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const { option, from, to } of changes) {
    const secret = optionSpec(option).secret === true;
    out[yamlKey(option)] = secret ? { from: '****', to: '****' } : { from, to };
  }
  return out;
}

export interface ReloadResult {
  readonly applied: readonly OptionChange[];
  readonly needsRestart: readonly OptionChange[];
}

export type ReloadStep = (loaded: LoadedConfig) => void | Promise<void>;

export interface Reloader {
  /** Re-reads and applies the configuration; resolves undefined when it was invalid (nothing changed). */
  reload(): Promise<ReloadResult | undefined>;
  /** The configuration in force: the startup one with the live options as last reloaded. */
  current(): NodeConfig;
  /** Adds a step run on every successful reload, after the live options were applied. */
  addStep(name: string, step: ReloadStep): void;
}

export interface ReloaderOptions {
  /** Loads the configuration from its sources; throws ConfigError when it is invalid. */
  readonly load: () => LoadedConfig;
  readonly initial: NodeConfig;
  /** The root logger: its level is the live `logLevel`. */
  readonly log: Logger;
}

export function createReloader(options: ReloaderOptions): Reloader {
  const { log } = options;
  let running: NodeConfig = options.initial;
  const steps: Array<{ name: string; step: ReloadStep }> = [];

  const apply = (change: OptionChange): void => {
    if (change.option === 'logLevel') log.level = String(change.to);
    running = { ...running, [change.option]: change.to };
  };

  return {
    current: () => running,
    addStep(name, step) {
      steps.push({ name, step });
    },
    async reload() {
      let loaded: LoadedConfig;
      try {
        loaded = options.load();
      } catch (err: unknown) {
        if (!(err instanceof ConfigError)) throw err;
        log.error({ issues: err.issues }, 'configuration reload failed: keeping the running configuration');
        return undefined;
      }
      const changes = diffConfig(running, loaded.config);
      const applied = changes.filter((c) => LIVE_OPTIONS.has(c.option));
      const needsRestart = changes.filter((c) => !LIVE_OPTIONS.has(c.option));
      applied.forEach(apply);
      for (const warning of loaded.warnings) log.warn({ warning }, 'configuration warning');
      log.info(
        { changed: describeChanges(applied), needsRestart: needsRestart.map((c) => yamlKey(c.option)) },
        'configuration reloaded',
      );
      for (const [name, change] of Object.entries(describeChanges(needsRestart))) {
        log.warn({ option: name, ...change }, `option ${name} changed: the new value needs a restart`);
      }
      for (const { name, step } of steps) {
        try {
          await step(loaded);
        } catch (err: unknown) {
          log.error({ err, step: name }, `reload step ${name} failed`);
        }
      }
      return { applied, needsRestart };
    },
  };
}

/**
 * Reloads on every `signal` (SIGHUP by default; without a handler Node exits on it). Reloads do
 * not overlap: a signal during a reload runs one more afterwards. Returns the uninstaller.
 */
export function reloadOnSignal(
  reloader: Reloader,
  log: Logger,
  signal: NodeJS.Signals = 'SIGHUP',
  proc: Pick<NodeJS.Process, 'on' | 'off'> = process,
): () => void {
  let running = false;
  let again = false;
  const run = async (): Promise<void> => {
    running = true;
    try {
      do {
        again = false;
        await reloader.reload();
      } while (again);
    } catch (err: unknown) {
      log.error({ err }, 'configuration reload failed');
    } finally {
      running = false;
    }
  };
  const onSignal = (): void => {
    log.info({ signal }, 'reloading the configuration');
    if (running) {
      again = true;
      return;
    }
    void run();
  };
  proc.on(signal, onSignal);
  return () => proc.off(signal, onSignal);
}

/**
 * Configuration reload (SIGHUP, POST /admin/reloadconfig): the node re-reads its configuration
 * sources (YAML file, SERVICE_* environment, flags) through the same loader as at startup,
 * applies the options that can change while it runs (the log level; the certificates, trusted
 * roots and reserved node common name through the TLS step), and says which other changed options
 * need a restart.
 *
 * A reload is all or nothing. Steps (`addStep`) run in two phases: each first checks the newly
 * loaded configuration and prepares what it would apply (the TLS step reads and verifies the new
 * certificate files), and may refuse by throwing; only when the configuration is valid and every
 * step has prepared are the live options applied and the steps' commits run. An invalid
 * configuration or a refused step is logged as an error and changes nothing: the node keeps
 * running as it was. Reloads never overlap; a second one waits for the first.
 */
import { EventDbError } from '../errors.js';
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

export type ReloadOutcome =
  | ({ readonly ok: true } & ReloadResult)
  | {
      readonly ok: false;
      /** The configuration sources are invalid (`config`) or a step refused the new values. */
      readonly failedAt: 'config' | { readonly step: string };
      readonly error: EventDbError;
    };

/** Applies what a step prepared; runs only once every step has prepared. Must not fail. */
export type ReloadCommit = () => void;

/**
 * Checks the newly loaded configuration and prepares what the step would apply; throws to refuse
 * the reload (nothing changes). Returns the commit, or nothing when there is nothing to apply.
 */
export type ReloadStep = (loaded: LoadedConfig) => void | ReloadCommit | Promise<void | ReloadCommit>;

export interface ReloadStepOptions {
  /** Options this step applies live (besides LIVE_OPTIONS): not reported as needing a restart. */
  readonly liveOptions?: readonly OptionName[];
}

/** How the last reload went (SIGHUP or endpoint alike), for GET /info: an operator checks its reloads by it. */
export interface LastReload {
  readonly atMs: number;
  readonly result: 'Applied' | 'Refused';
  /** Why a refused reload changed nothing. */
  readonly message?: string;
}

export interface Reloader {
  /** Re-reads and applies the configuration, after any reload under way; all or nothing. */
  reload(): Promise<ReloadOutcome>;
  /** The outcome of the last reload that finished; undefined before any. */
  last(): LastReload | undefined;
  /** The configuration in force: the startup one with the live options as last reloaded. */
  current(): NodeConfig;
  /** Adds a step run on every reload (see ReloadStep), in the order added. */
  addStep(name: string, step: ReloadStep, options?: ReloadStepOptions): void;
}

export interface ReloaderOptions {
  /** Loads the configuration from its sources; throws ConfigError when it is invalid. */
  readonly load: () => LoadedConfig;
  readonly initial: NodeConfig;
  /** The root logger: its level is the live `logLevel`. */
  readonly log: Logger;
  readonly nowMs?: () => number;
}

function asEventDbError(err: unknown): EventDbError {
  if (err instanceof EventDbError) return err;
  return new EventDbError('EDB_INVARIANT', err instanceof Error ? err.message : String(err), { cause: err });
}

export function createReloader(options: ReloaderOptions): Reloader {
  const { log } = options;
  let running: NodeConfig = options.initial;
  const steps: Array<{ name: string; step: ReloadStep; liveOptions: readonly OptionName[] }> = [];
  let queue: Promise<unknown> = Promise.resolve();
  let last: LastReload | undefined;
  const nowMs = options.nowMs ?? Date.now;
  const record = (outcome: ReloadOutcome): ReloadOutcome => {
    last = outcome.ok ? { atMs: nowMs(), result: 'Applied' } : { atMs: nowMs(), result: 'Refused', message: outcome.error.message };
    return outcome;
  };

  const apply = (change: OptionChange): void => {
    if (change.option === 'logLevel') log.level = String(change.to);
    running = { ...running, [change.option]: change.to };
  };

  const reloadOnce = async (): Promise<ReloadOutcome> => {
    let loaded: LoadedConfig;
    try {
      loaded = options.load();
    } catch (err: unknown) {
      if (!(err instanceof ConfigError)) throw err;
      log.error({ issues: err.issues }, 'configuration reload failed: keeping the running configuration');
      return { ok: false, failedAt: 'config', error: err };
    }
    const commits: ReloadCommit[] = [];
    for (const { name, step } of steps) {
      try {
        const commit = await step(loaded);
        if (commit !== undefined) commits.push(commit);
      } catch (err: unknown) {
        const error = asEventDbError(err);
        log.error(
          { step: name, code: error.code, ...(err instanceof EventDbError ? {} : { err }) },
          `configuration reload failed, nothing changed: ${error.message}`,
        );
        return { ok: false, failedAt: { step: name }, error };
      }
    }
    const live = new Set<OptionName>([...LIVE_OPTIONS, ...steps.flatMap((s) => s.liveOptions)]);
    const changes = diffConfig(running, loaded.config);
    const applied = changes.filter((c) => live.has(c.option));
    const needsRestart = changes.filter((c) => !live.has(c.option));
    applied.forEach(apply);
    for (const warning of loaded.warnings) log.warn({ warning }, 'configuration warning');
    for (const commit of commits) {
      try {
        commit();
      } catch (err: unknown) {
        log.error({ err }, 'a reload step failed to apply what it had prepared');
      }
    }
    log.info(
      { changed: describeChanges(applied), needsRestart: needsRestart.map((c) => yamlKey(c.option)) },
      'configuration reloaded',
    );
    for (const [name, change] of Object.entries(describeChanges(needsRestart))) {
      log.warn({ option: name, ...change }, `option ${name} changed: the new value needs a restart`);
    }
    return { ok: true, applied, needsRestart };
  };

  return {
    current: () => running,
    last: () => last,
    addStep(name, step, stepOptions = {}) {
      steps.push({ name, step, liveOptions: stepOptions.liveOptions ?? [] });
    },
    reload() {
      const run = queue.then(reloadOnce).then(record);
      queue = run.catch(() => undefined);
      return run;
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

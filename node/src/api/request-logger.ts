/**
 * Per-request loggers made on first use. Fastify gives every request a child logger bound to
 * its request id; building a pino child (bindings serialized through the redaction setup) costs
 * more than the rest of a small request's logging, and at the node's usual level (info or
 * above) most requests never log at all. A LazyRequestLogger answers disabled levels at once
 * and makes the real child, with the same bindings and options, the first time a line is
 * actually written, so log lines are unchanged.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString } from 'pino';

/** The parent must be a pino logger: level checks go through isLevelEnabled. */
export type PinoLikeLogger = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

type LogArgs = Parameters<FastifyBaseLogger['info']>;

export class LazyRequestLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | undefined;
  private levelOverride: LevelWithSilentOrString | undefined;

  constructor(
    private readonly parent: PinoLikeLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {
    if (options.level !== undefined) this.levelOverride = options.level;
  }

  get level(): LevelWithSilentOrString {
    return this.real?.level ?? this.levelOverride ?? this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    if (this.real !== undefined) this.real.level = level;
    else this.levelOverride = level;
  }

  fatal(...args: LogArgs): void {
    this.write('fatal', args);
  }

  error(...args: LogArgs): void {
    this.write('error', args);
  }

  warn(...args: LogArgs): void {
    this.write('warn', args);
  }

  info(...args: LogArgs): void {
    this.write('info', args);
  }

  debug(...args: LogArgs): void {
    this.write('debug', args);
  }

  trace(...args: LogArgs): void {
    this.write('trace', args);
  }

  silent(...args: LogArgs): void {
    this.materialize().silent(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.materialize().child(bindings, options);
  }

  private write(level: Level, args: LogArgs): void {
    if (this.real === undefined) {
      // With a level of its own (a route's logLevel) the child decides; otherwise the parent.
      if (this.levelOverride === undefined && !this.parent.isLevelEnabled(level)) return;
    }
    this.materialize()[level](...args);
  }

  private materialize(): FastifyBaseLogger {
    if (this.real === undefined) {
      this.real = this.parent.child(this.bindings, this.options);
      if (this.levelOverride !== undefined) this.real.level = this.levelOverride;
    }
    return this.real;
  }
}

/** A fastify `childLoggerFactory` that defers the child until something is logged. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyRequestLogger(logger as PinoLikeLogger, bindings, options);
}

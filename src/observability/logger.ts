import { pino } from "pino";

type LogFn = {
  (message: string): void;
  (fields: Record<string, unknown>, message?: string): void;
};

/** Structured logging port. Every line carries its component; request lines carry `requestId`. */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
  /** Whether lines of `level` are written (pino's); absent: assume they are. */
  isLevelEnabled?(level: LogLevel): boolean;
}

type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * `parent.child(bindings)`, made only when a line is written at a level the parent writes: a
 * request's logger costs nothing when the request logs nothing (pino's `child` serializes its
 * bindings at once, a measurable cost per request).
 */
export function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  return new LazyChild(parent, bindings);
}

/** A class, so a request's logger is one object, not a closure per level. */
class LazyChild implements Logger {
  readonly #parent: Logger;
  readonly #bindings: Record<string, unknown>;
  #made: Logger | undefined;

  constructor(parent: Logger, bindings: Record<string, unknown>) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  debug(first: string | Record<string, unknown>, message?: string): void {
    this.#write("debug", first, message);
  }
  info(first: string | Record<string, unknown>, message?: string): void {
    this.#write("info", first, message);
  }
  warn(first: string | Record<string, unknown>, message?: string): void {
    this.#write("warn", first, message);
  }
  error(first: string | Record<string, unknown>, message?: string): void {
    this.#write("error", first, message);
  }
  child(more: Record<string, unknown>): Logger {
    return new LazyChild(this.#parent, { ...this.#bindings, ...more });
  }
  isLevelEnabled(level: LogLevel): boolean {
    return this.#parent.isLevelEnabled?.(level) ?? true;
  }

  #write(level: LogLevel, first: string | Record<string, unknown>, message: string | undefined): void {
    if (this.#parent.isLevelEnabled && !this.#parent.isLevelEnabled(level)) return;
    this.#made ??= this.#parent.child(this.#bindings);
    if (typeof first === "string") this.#made[level](first);
    else this.#made[level](first, message);
  }
}

export interface LoggerOptions {
  /** `debug | info | warn | error | silent`; default `info` (env `ARMATURE_LOG_LEVEL`). */
  readonly level?: string;
  /** Where lines go; default standard error, so standard output stays for command results. */
  readonly destination?: number;
}

/** pino, JSON lines, with credentials redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.ARMATURE_LOG_LEVEL ?? "info",
      base: { service: "armature" },
      redact: {
        paths: [
          "headers.authorization",
          "req.headers.authorization",
          'headers["x-api-key"]',
          'req.headers["x-api-key"]',
          "apiKey",
          "*.apiKey",
          "apiKeys",
          "*.apiKeys",
        ],
        censor: "[redacted]",
      },
    },
    pino.destination({ dest: options.destination ?? 2, sync: false }),
  );
}

const noop = (): void => {};

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
  isLevelEnabled: () => false,
};

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
};

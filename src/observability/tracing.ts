import { randomFillSync } from "node:crypto";
import type { Logger } from "./logger.js";
import { formatTraceparent, parseTraceparent } from "./tracing-context.js";

/** A W3C trace context (`traceparent`, `tracestate`) as it crosses a process boundary. */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

/** Span attributes; undefined values are left out. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

export interface SpanOptions {
  /** The span's parent, from another process or this one; absent (or malformed): a new trace. */
  readonly parent?: TraceContext | undefined;
  /** For a span that starts a new trace: its trace id (32 hex digits). Default: a random one. */
  readonly traceId?: string | undefined;
  readonly attributes?: SpanAttributes | undefined;
  /** When the span began, in ms since the epoch (`Date.now()` scale, fractions kept). Default: now. */
  readonly startTime?: number | undefined;
  /** `server` for work done for a caller in another process; default `internal`. */
  readonly kind?: "server" | "internal" | undefined;
}

/** One span: ended exactly once; attributes and failure set before `end`. */
export interface TraceSpan {
  /** 32 lowercase hex digits. */
  readonly traceId: string;
  /** This span as a parent, to carry to the next hop. */
  readonly context: TraceContext;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed, with the error's message. */
  fail(error: unknown): void;
  /** Ends the span at `endTime` (ms since the epoch; default now). Later calls do nothing. */
  end(endTime?: number): void;
}

/**
 * The tracing port: spans for the life of a request, exported by the OpenTelemetry binding
 * (`createOtelTracing`) or dropped by `noTracing`, which still keeps trace ids and contexts so
 * responses and logs carry them.
 */
export interface Tracing {
  /** Whether spans go anywhere; false: callers may skip work done only for attributes. */
  readonly exporting: boolean;
  startSpan(name: string, options?: SpanOptions): TraceSpan;
  /** Sends the spans still buffered and stops exporting. */
  close(): Promise<void>;
}

/** Epoch milliseconds with sub-millisecond precision (spans are timed in ns by OTLP). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Random bytes drawn a pool at a time: one `randomBytes` call per id costs microseconds, per request. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString("hex", poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

/** 32 random lowercase hex digits, never all zeros (W3C trace-id). */
export function randomTraceId(): string {
  for (;;) {
    const id = randomHex(16);
    if (id !== "00000000000000000000000000000000") return id;
  }
}

/** 16 random lowercase hex digits, never all zeros (W3C parent-id). */
export function randomSpanId(): string {
  for (;;) {
    const id = randomHex(8);
    if (id !== "0000000000000000") return id;
  }
}

/** No export: spans only carry ids, so a trace id reaches the response header, the logs and the workers. */
class NoSpan implements TraceSpan {
  readonly traceId: string;
  readonly #flags: string;
  readonly #tracestate: string | undefined;
  #context: TraceContext | undefined;

  constructor(traceId: string, flags: string, tracestate: string | undefined) {
    this.traceId = traceId;
    this.#flags = flags;
    this.#tracestate = tracestate;
  }

  /** Made when first asked for (only spans whose context crosses to a worker are). */
  get context(): TraceContext {
    this.#context ??= { traceparent: formatTraceparent(this.traceId, randomSpanId(), this.#flags), tracestate: this.#tracestate };
    return this.#context;
  }

  setAttributes(): void {}
  fail(): void {}
  end(): void {}
}

/** Tracing that exports nothing (no `--otlp-endpoint`). */
export const noTracing: Tracing = {
  exporting: false,
  startSpan(_name, options = {}) {
    const parent = options.parent ? parseTraceparent(options.parent.traceparent) : undefined;
    if (parent) return new NoSpan(parent.traceId, parent.flags, options.parent?.tracestate);
    return new NoSpan(options.traceId ?? randomTraceId(), "01", undefined);
  },
  close: async () => {},
};

export interface TracingOptions {
  /** `--otlp-endpoint`; absent: `noTracing`. */
  readonly endpoint?: string | undefined;
  /** `service.name`: `armature-frontend`, `armature-worker`. */
  readonly serviceName: string;
  readonly logger: Logger;
}

/**
 * The OpenTelemetry binding when an endpoint is given (the SDK is loaded only then), else
 * `noTracing`. The endpoint must be an http(s) URL (the CLI checks it, naming the flag).
 */
export async function createTracing(options: TracingOptions): Promise<Tracing> {
  if (options.endpoint === undefined) return noTracing;
  const { createOtelTracing } = await import("./tracing-otel.js");
  return createOtelTracing({ endpoint: options.endpoint, serviceName: options.serviceName, logger: options.logger });
}

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
 * (`tracing-otel.ts`) or dropped by `noTracing` (`no-tracing.ts`), which still keeps trace ids and contexts so
 * responses and logs carry them.
 */
export interface Tracing {
  /** Whether spans go anywhere; false: callers may skip work done only for attributes. */
  readonly exporting: boolean;
  startSpan(name: string, options?: SpanOptions): TraceSpan;
  /** Sends the spans still buffered and stops exporting. */
  close(): Promise<void>;
}

import { randomSpanId, randomTraceId } from "./trace-ids.js";
import type { TraceContext, TraceSpan, Tracing } from "./tracing.js";
import { formatTraceparent, parseTraceparent } from "./tracing-context.js";

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

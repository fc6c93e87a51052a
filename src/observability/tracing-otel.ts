import {
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  type ReadableSpan,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import type { Logger } from "./logger.js";
import { randomSpanId, randomTraceId } from "./trace-ids.js";
import type { SpanAttributes, SpanOptions, TraceContext, TraceSpan, Tracing } from "./tracing.js";

export interface OtelTracingOptions {
  /**
   * The OTLP/HTTP receiver (`--otlp-endpoint`): a base URL such as `http://localhost:4318`, to
   * which `/v1/traces` is added, or a URL with a path, used as it is.
   */
  readonly endpoint: string;
  /** `service.name` of every span, e.g. `armature-frontend`. */
  readonly serviceName: string;
  readonly serviceVersion?: string | undefined;
  /** Export failures are logged here (at most one line every 30 s). */
  readonly logger: Logger;
}

/** The OTLP URL spans are posted to, from `--otlp-endpoint`. */
export function otlpTracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/v1/traces";
  return url.toString();
}

/**
 * Tracing with the OpenTelemetry SDK: spans batched and posted as OTLP/HTTP JSON. No global
 * provider or context manager is installed; parents are passed explicitly, as W3C contexts.
 */
export function createOtelTracing(options: OtelTracingOptions): Tracing {
  const ids = new SeededIds();
  const exporter = new LoggedExporter(new OTLPTraceExporter({ url: otlpTracesUrl(options.endpoint) }), options.logger);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      ...(options.serviceVersion ? { [ATTR_SERVICE_VERSION]: options.serviceVersion } : {}),
    }),
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer("armature");
  const propagator = new W3CTraceContextPropagator();
  let closed: Promise<void> | undefined;
  return {
    exporting: true,
    startSpan(name, spanOptions = {}) {
      return new OtelSpan(tracer, propagator, ids, name, spanOptions);
    },
    close() {
      closed ??= provider.forceFlush().finally(() => provider.shutdown());
      return closed;
    },
  };
}

class OtelSpan implements TraceSpan {
  readonly #span: Span;
  readonly #propagator: W3CTraceContextPropagator;
  #context: TraceContext | undefined;

  constructor(tracer: Tracer, propagator: W3CTraceContextPropagator, ids: SeededIds, name: string, options: SpanOptions) {
    this.#propagator = propagator;
    const parent = options.parent ? propagator.extract(ROOT_CONTEXT, options.parent, defaultTextMapGetter) : ROOT_CONTEXT;
    const root = trace.getSpanContext(parent) === undefined;
    if (root && options.traceId) ids.next = options.traceId;
    this.#span = tracer.startSpan(
      name,
      {
        kind: options.kind === "server" ? SpanKind.SERVER : SpanKind.INTERNAL,
        ...(options.attributes ? { attributes: defined(options.attributes) } : {}),
        ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
      },
      parent,
    );
    ids.next = undefined;
  }

  get traceId(): string {
    return this.#span.spanContext().traceId;
  }

  get context(): TraceContext {
    if (!this.#context) {
      const carrier: Record<string, string> = {};
      const context: Context = trace.setSpan(ROOT_CONTEXT, this.#span);
      this.#propagator.inject(context, carrier, defaultTextMapSetter);
      this.#context = { traceparent: carrier.traceparent ?? "", tracestate: carrier.tracestate };
    }
    return this.#context;
  }

  setAttributes(attributes: SpanAttributes): void {
    this.#span.setAttributes(defined(attributes));
  }

  fail(error: unknown): void {
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }

  end(endTime?: number): void {
    this.#span.end(endTime);
  }
}

function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Random ids, except that a root span may be given its trace id: the frontend picks a request's
 * trace id before its first span starts (the response header carries it either way). Span starts
 * are synchronous, so `next` is read by the very span it was set for.
 */
class SeededIds implements IdGenerator {
  next: string | undefined;

  generateTraceId(): string {
    return this.next ?? randomTraceId();
  }

  generateSpanId(): string {
    return randomSpanId();
  }
}

const WARN_EVERY_MS = 30_000;

/** Passes spans to the OTLP exporter and logs failed exports, without flooding the log. */
class LoggedExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #log: Logger;
  #warnedAt = Number.NEGATIVE_INFINITY;

  constructor(inner: SpanExporter, logger: Logger) {
    this.#inner = inner;
    this.#log = logger.child({ component: "tracing" });
  }

  export(spans: ReadableSpan[], done: Parameters<SpanExporter["export"]>[1]): void {
    this.#inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS && Date.now() - this.#warnedAt > WARN_EVERY_MS) {
        this.#warnedAt = Date.now();
        this.#log.warn({ err: result.error, spans: spans.length }, "spans could not be exported; check --otlp-endpoint");
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

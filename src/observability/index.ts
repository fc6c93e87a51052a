export type { Logger, LoggerOptions } from "./logger.js";
export { createLogger, lazyChild, silentLogger } from "./logger.js";
export type { CounterMetric, GaugeMetric, HistogramMetric, MetricMeter } from "./metrics.js";
export { PrometheusMeter } from "./metrics.js";
export type { SpanAttributes, SpanOptions, TraceContext, TraceSpan, Tracing, TracingOptions } from "./tracing.js";
export { createTracing, noTracing, nowMs } from "./tracing.js";
export { formatTraceparent, parseTraceparent, traceContextFromHeaders } from "./tracing-context.js";
export type { RequestOutcome, RouteTrace } from "./tracing-request.js";
export { RequestTrace } from "./tracing-request.js";

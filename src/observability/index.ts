export { createLogger, silentLogger } from "./logger.js";
export type { Logger, LoggerOptions } from "./logger.js";
export { PrometheusMeter } from "./metrics.js";
export type { CounterMetric, GaugeMetric, HistogramMetric, MetricMeter } from "./metrics.js";

export type { Logger, LoggerOptions } from "./logger.js";
export { createLogger, silentLogger } from "./logger.js";
export type { CounterMetric, GaugeMetric, HistogramMetric, MetricMeter } from "./metrics.js";
export { PrometheusMeter } from "./metrics.js";

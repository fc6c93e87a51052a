import { Counter, Gauge, type Metric, Registry } from "prom-client";
import { BucketHistogram } from "./bucket-histogram.js";

type Labels = Record<string, string | number>;

export interface CounterMetric {
  inc(labels?: Labels, value?: number): void;
  /** An incrementer with the labels resolved once, for hot paths. */
  bind(labels: Labels): (value?: number) => void;
}

export interface GaugeMetric {
  set(labels: Labels, value: number): void;
  inc(labels?: Labels, value?: number): void;
  dec(labels?: Labels, value?: number): void;
  remove(labels: Labels): void;
  /** The series of `labels`, resolved once, for hot paths. */
  bind(labels: Labels): { inc(value?: number): void; dec(value?: number): void };
}

export interface HistogramMetric {
  observe(labels: Labels, value: number): void;
  /** An observer with the labels resolved once, for hot paths. */
  bind(labels: Labels): (value: number) => void;
}

/** Metrics port: components declare metrics through it; the app binds it to prom-client. */
export interface MetricMeter {
  counter(name: string, help: string, labelNames?: readonly string[]): CounterMetric;
  gauge(name: string, help: string, labelNames?: readonly string[]): GaugeMetric;
  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): HistogramMetric;
  /** The Prometheus text exposition of everything declared. */
  render(): Promise<string>;
  readonly contentType: string;
}

/** A meter over its own prom-client registry (never the global one), names prefixed. */
export class PrometheusMeter implements MetricMeter {
  readonly registry = new Registry();
  readonly #prefix: string;

  constructor(prefix = "armature_") {
    this.#prefix = prefix;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): CounterMetric {
    const metric = new Counter({ name: this.#prefix + name, help, labelNames, registers: [this.registry] });
    return {
      inc: (labels = {}, value = 1) => metric.inc(labels, value),
      bind: (labels) => {
        const series = metric.labels(labels);
        return (value = 1) => series.inc(value);
      },
    };
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): GaugeMetric {
    const metric = new Gauge({ name: this.#prefix + name, help, labelNames, registers: [this.registry] });
    return {
      set: (labels, value) => metric.set(labels, value),
      inc: (labels = {}, value = 1) => metric.inc(labels, value),
      dec: (labels = {}, value = 1) => metric.dec(labels, value),
      remove: (labels) => metric.remove(labels),
      bind: (labels) => {
        const series = metric.labels(labels);
        return { inc: (value = 1) => series.inc(value), dec: (value = 1) => series.dec(value) };
      },
    };
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): HistogramMetric {
    const metric = new BucketHistogram({ name: this.#prefix + name, help, labelNames, buckets });
    this.registry.registerMetric(metric as unknown as Metric);
    return {
      observe: (labels, value) => metric.observe(labels, value),
      bind: (labels) => {
        const series = metric.series(labels);
        return (value) => series.observe(value);
      },
    };
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

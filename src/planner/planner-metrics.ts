import type { CounterMetric, GaugeMetric, MetricMeter } from "../observability/index.js";
import type { IntervalLoad } from "./interval-load.js";
import type { PoolName } from "./load-loop.js";

const declared = new WeakMap<MetricMeter, PlannerMetrics>();

/**
 * The planner's metrics (`armature_planner_*`): the predicted load of the next interval, desired and
 * ready workers per pool, and decisions by pool, loop and action.
 */
export class PlannerMetrics {
  readonly #predicted: GaugeMetric;
  readonly #desired: GaugeMetric;
  readonly #ready: GaugeMetric;
  readonly #decisions: CounterMetric;

  /** The one instance per meter (a metric is declared once per registry). */
  static for(meter: MetricMeter): PlannerMetrics {
    let metrics = declared.get(meter);
    if (!metrics) {
      metrics = new PlannerMetrics(meter);
      declared.set(meter, metrics);
    }
    return metrics;
  }

  private constructor(meter: MetricMeter) {
    this.#predicted = meter.gauge("planner_predicted_load", "The next interval's traffic as the planner predicts it", [
      "quantity",
    ]);
    this.#desired = meter.gauge("planner_desired_workers", "Workers the planner wants per pool", ["pool"]);
    this.#ready = meter.gauge("planner_ready_workers", "Workers taking requests per pool, as the connector reports", ["pool"]);
    this.#decisions = meter.counter("planner_decisions_total", "Planner decisions that changed or held a pool", [
      "pool",
      "loop",
      "action",
      "applied",
    ]);
  }

  predicted(load: IntervalLoad): void {
    this.#predicted.set({ quantity: "requests_per_second" }, load.requestsPerSecond);
    this.#predicted.set({ quantity: "mean_input_tokens" }, load.meanInputTokens);
    this.#predicted.set({ quantity: "mean_output_tokens" }, load.meanOutputTokens);
    this.#predicted.set({ quantity: "kv_hit_rate" }, load.kvHitRate);
  }

  replicas(pool: PoolName, desired: number, ready: number): void {
    this.#desired.set({ pool }, desired);
    this.#ready.set({ pool }, ready);
  }

  decision(record: { pool: PoolName; loop: string; action: string; applied: boolean }): void {
    this.#decisions.inc({ pool: record.pool, loop: record.loop, action: record.action, applied: String(record.applied) });
  }
}

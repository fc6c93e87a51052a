import type { CounterMetric, GaugeMetric, MetricMeter } from "../observability/index.js";
import type { IntervalLoad } from "./interval-load.js";
import type { PoolName } from "./load-loop.js";

const declared = new WeakMap<MetricMeter, PlannerMetrics>();

/**
 * The planner's metrics (`armature_planner_*`): the predicted load of the next interval, desired and
 * ready workers per pool, and decisions by pool, loop and action, each labelled with the model
 * whose pools the planner sizes (`armature serve` runs one planner per model; empty where the
 * planner was not told its model).
 */
export class PlannerMetrics {
  readonly #predicted: GaugeMetric;
  readonly #period: GaugeMetric;
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
      "model",
    ]);
    this.#period = meter.gauge(
      "planner_recurring_period_seconds",
      "The request rate's period whose peaks the throughput loop provisions ahead (--predictor-period); 0 while there is none",
      ["model"],
    );
    this.#desired = meter.gauge("planner_desired_workers", "Workers the planner wants per pool", ["pool", "model"]);
    this.#ready = meter.gauge("planner_ready_workers", "Workers taking requests per pool, as the connector reports", [
      "pool",
      "model",
    ]);
    this.#decisions = meter.counter("planner_decisions_total", "Planner decisions that changed or held a pool", [
      "pool",
      "loop",
      "action",
      "applied",
      "model",
    ]);
  }

  predicted(model: string, load: IntervalLoad): void {
    this.#predicted.set({ quantity: "requests_per_second", model }, load.requestsPerSecond);
    this.#predicted.set({ quantity: "mean_input_tokens", model }, load.meanInputTokens);
    this.#predicted.set({ quantity: "mean_output_tokens", model }, load.meanOutputTokens);
    this.#predicted.set({ quantity: "kv_hit_rate", model }, load.kvHitRate);
  }

  /** The period in use, in seconds, or undefined when there is none (reported as 0). */
  recurringPeriod(model: string, seconds: number | undefined): void {
    this.#period.set({ model }, seconds ?? 0);
  }

  replicas(model: string, pool: PoolName, desired: number, ready: number): void {
    this.#desired.set({ pool, model }, desired);
    this.#ready.set({ pool, model }, ready);
  }

  decision(model: string, record: { pool: PoolName; loop: string; action: string; applied: boolean }): void {
    this.#decisions.inc({ pool: record.pool, loop: record.loop, action: record.action, applied: String(record.applied), model });
  }
}

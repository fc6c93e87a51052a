import type { MetricMeter } from "../observability/index.js";
import type { ShedReason } from "./admission-queue.js";

const MS_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25];

export type OverheadPhase = "block_hashing" | "indexer_find_matches" | "scheduling";

/** Dynamo's `router_overhead_*_ms` histograms: time the KV policy spends per decision, by phase. */
export function routerOverheadMetrics(meter: MetricMeter): (phase: OverheadPhase, ms: number) => void {
  const observers = new Map<OverheadPhase, (ms: number) => void>();
  for (const phase of ["block_hashing", "indexer_find_matches", "scheduling"] as const) {
    const histogram = meter.histogram(
      `router_overhead_${phase}_ms`,
      `KV router time spent in ${phase.replaceAll("_", " ")}, per request`,
      [],
      MS_BUCKETS,
    );
    observers.set(phase, histogram.bind({}));
  }
  return (phase, ms) => observers.get(phase)?.(ms);
}

/**
 * `armature_frontend_router_queue_shed_total{model, reason, priority_band}`: requests the admission
 * queue refused or shed (`full`, `displaced`, `deadline`). The band keeps the label bounded:
 * `urgent` below priority 0, `default` at 0, `deferred` above.
 */
export function routerQueueMetrics(meter: MetricMeter): (model: string, reason: ShedReason, priority: number) => void {
  const shed = meter.counter(
    "frontend_router_queue_shed_total",
    "Requests the router's admission queue refused (full) or shed (displaced by a higher priority, deadline unreachable)",
    ["model", "reason", "priority_band"],
  );
  return (model, reason, priority) =>
    shed.inc({ model, reason, priority_band: priority < 0 ? "urgent" : priority === 0 ? "default" : "deferred" });
}

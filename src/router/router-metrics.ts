import type { MetricMeter } from "../observability/index.js";

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

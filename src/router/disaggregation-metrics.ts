import type { MetricMeter } from "../observability/index.js";
import type { RequestEnd } from "../protocol/index.js";
import type { PrefillOutcome } from "./prefill-stage.js";

const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * Disaggregation metrics: where prefills ran, KV bytes moved and transfer latency by backend, KV
 * bytes not moved because the decode worker held the prompt's first blocks, and decode workers that
 * had to prefill locally. Returns the hooks a `PrefillStage` takes.
 */
export function disaggregationMetrics(meter: MetricMeter): {
  onOutcome: (outcome: PrefillOutcome) => void;
  onDecodeEnd: (end: RequestEnd) => void;
} {
  const prefills = meter.counter(
    "disagg_prefill_requests_total",
    "Requests by where their prefill ran (remote or local, and why)",
    ["where"],
  );
  const bytes = meter.counter("kv_transfer_bytes_total", "KV cache bytes moved from prefill to decode workers", ["backend"]);
  const latency = meter.histogram(
    "kv_transfer_latency_seconds",
    "Time to move one request's KV from its prefill worker to its decode worker",
    ["backend"],
    SECONDS_BUCKETS,
  );
  const saved = meter.counter(
    "disagg_kv_bytes_saved_total",
    "KV cache bytes a decode worker did not pull because it held the prompt's first blocks already",
    ["backend"],
  );
  const fallbacks = meter.counter(
    "disagg_local_prefill_fallbacks_total",
    "Disaggregated requests prefilled on the decode worker after a failure",
    ["reason"],
  );
  return {
    onOutcome(outcome) {
      prefills.inc({ where: outcome });
      if (outcome === "local_prefill_failed") fallbacks.inc({ reason: "prefill_failed" });
    },
    onDecodeEnd(end) {
      if (end.prefilledLocally) fallbacks.inc({ reason: "transfer_failed" });
      if (end.kvTransfer) {
        bytes.inc({ backend: end.kvTransfer.backend }, end.kvTransfer.bytes);
        latency.observe({ backend: end.kvTransfer.backend }, end.kvTransfer.ms / 1000);
        if (end.kvTransfer.savedBytes) saved.inc({ backend: end.kvTransfer.backend }, end.kvTransfer.savedBytes);
      }
    },
  };
}

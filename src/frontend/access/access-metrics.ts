import type { CounterMetric, GaugeMetric, MetricMeter } from "../../observability/index.js";

/** Why a request was refused before it was served. */
export type RejectReason =
  | "missing_key"
  | "invalid_key"
  | "model_not_allowed"
  | "requests_per_minute"
  | "tokens_per_minute"
  | "max_concurrent";

/**
 * Usage per API key. Every series is labelled by the key's configured *name*, never the key; the
 * names come from the operator's list, so the label set is bounded by it.
 */
export class AccessMetrics {
  /** Requests that passed the key check, by the HTTP status they ended with. */
  readonly requests: CounterMetric;
  readonly tokens: CounterMetric;
  /** `key_name` is empty for `missing_key` and `invalid_key`: there is no key to name. */
  readonly rejected: CounterMetric;
  readonly inflight: GaugeMetric;
  readonly reloads: CounterMetric;
  readonly keysLoaded: GaugeMetric;

  constructor(meter: MetricMeter) {
    const p = "frontend_api_key";
    this.requests = meter.counter(`${p}_requests_total`, "Requests made with each API key, by HTTP status", [
      "key_name",
      "status",
    ]);
    this.tokens = meter.counter(`${p}_tokens_total`, "Tokens used by each API key (prompt, completion)", ["key_name", "kind"]);
    this.rejected = meter.counter(`${p}_rejected_total`, "Requests refused by the key check or a key's limits, by reason", [
      "key_name",
      "reason",
    ]);
    this.inflight = meter.gauge(`${p}_inflight_requests`, "Requests of each API key being served now", ["key_name"]);
    this.reloads = meter.counter(
      `${p}s_reloads_total`,
      "Reloads of --api-keys-file, by result (a failed one keeps the old keys)",
      ["result"],
    );
    this.keysLoaded = meter.gauge(`${p}s_loaded`, "API keys the frontend accepts now");
  }
}

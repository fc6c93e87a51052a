import type { CounterMetric, GaugeMetric, HistogramMetric, MetricMeter } from "../observability/index.js";
import type { TierName } from "./tiers/kv-tier.js";

/** Onboarding latency buckets, seconds (a host copy is sub-millisecond; an object GET tens of ms). */
const declared = new WeakMap<MetricMeter, KvbmMetrics>();

const ONBOARD_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The block manager's metrics, Dynamo's `kvbm_*` names with armature's prefix: blocks offloaded
 * (`from` device or host, `to` a tier) and onboarded (`from` a tier), bytes and blocks per tier,
 * lookups and hits per tier (hit rate = hits / looked-up blocks), onboarding latency, and blocks
 * that failed their checks or could not be read or written.
 */
export class KvbmMetrics {
  readonly offloadedBlocks: CounterMetric;
  readonly onboardedBlocks: CounterMetric;
  readonly matchedTokens: CounterMetric;
  readonly lookedUpBlocks: CounterMetric;
  readonly hitBlocks: CounterMetric;
  readonly hitRate: GaugeMetric;
  readonly tierBytes: GaugeMetric;
  readonly tierBlocks: GaugeMetric;
  readonly onboardSeconds: HistogramMetric;
  readonly checksumFailures: CounterMetric;
  readonly readFailures: CounterMetric;
  readonly writeFailures: CounterMetric;
  readonly skippedOffloads: CounterMetric;
  readonly #lookups = new Map<string, number>();
  readonly #hits = new Map<string, number>();

  /** The one instance per meter (workers of one process share it; a metric is declared once). */
  static for(meter: MetricMeter): KvbmMetrics {
    let metrics = declared.get(meter);
    if (!metrics) {
      metrics = new KvbmMetrics(meter);
      declared.set(meter, metrics);
    }
    return metrics;
  }

  private constructor(meter: MetricMeter) {
    this.offloadedBlocks = meter.counter("kvbm_offload_blocks_total", "KV blocks copied to a lower tier", [
      "model",
      "from",
      "to",
    ]);
    this.onboardedBlocks = meter.counter("kvbm_onboard_blocks_total", "KV blocks loaded back to the device from a tier", [
      "model",
      "from",
    ]);
    this.matchedTokens = meter.counter(
      "kvbm_matched_tokens_total",
      "Prompt tokens reused from a lower tier instead of recomputed",
      ["model"],
    );
    this.lookedUpBlocks = meter.counter("kvbm_lookup_blocks_total", "Prompt blocks looked up in the lower tiers", ["model"]);
    this.hitBlocks = meter.counter("kvbm_hit_blocks_total", "Looked-up blocks found, by the tier they came from", [
      "model",
      "tier",
    ]);
    this.hitRate = meter.gauge("kvbm_cache_hit_rate", "Share of looked-up blocks found in each tier since start", [
      "model",
      "tier",
    ]);
    this.tierBytes = meter.gauge("kvbm_tier_bytes", "Bytes held per tier (the object tier: what this worker wrote or read)", [
      "model",
      "worker",
      "tier",
    ]);
    this.tierBlocks = meter.gauge("kvbm_tier_blocks", "Blocks held per tier", ["model", "worker", "tier"]);
    this.onboardSeconds = meter.histogram(
      "kvbm_onboard_seconds",
      "Time to read and assemble a prompt's stored prefix",
      ["model"],
      ONBOARD_SECONDS,
    );
    this.checksumFailures = meter.counter(
      "kvbm_checksum_failures_total",
      "Stored blocks that failed their checks and were recomputed",
      ["model", "tier"],
    );
    this.readFailures = meter.counter("kvbm_read_failures_total", "Stored blocks that could not be read and were recomputed", [
      "model",
      "tier",
    ]);
    this.writeFailures = meter.counter("kvbm_write_failures_total", "Blocks that could not be written to a tier", [
      "model",
      "tier",
    ]);
    this.skippedOffloads = meter.counter(
      "kvbm_offload_skipped_blocks_total",
      "Blocks not offloaded because a tier's write queue was full",
      ["model", "tier"],
    );
  }

  /** Counts one lookup of `blocks` prompt blocks and where each found one came from. */
  lookup(model: string, blocks: number, found: Readonly<Record<TierName, number>>): void {
    this.lookedUpBlocks.inc({ model }, blocks);
    const looked = (this.#lookups.get(model) ?? 0) + blocks;
    this.#lookups.set(model, looked);
    for (const tier of ["host", "disk", "object"] as const) {
      if (found[tier] > 0) this.hitBlocks.inc({ model, tier }, found[tier]);
      const key = `${model}\u0000${tier}`;
      const hits = (this.#hits.get(key) ?? 0) + found[tier];
      this.#hits.set(key, hits);
      if (looked > 0) this.hitRate.set({ model, tier }, hits / looked);
    }
  }
}

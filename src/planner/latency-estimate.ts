import { type IntervalLoad, normalizeIntervalLoad } from "./interval-load.js";
import type { WorkerProfile } from "./profile.js";
import { interpolateDecode, interpolatePrefill } from "./profile-interpolation.js";

/** What one worker reports about its load. */
export interface WorkerLoadSignal {
  /** Prompt tokens waiting to be prefilled on the worker. */
  readonly queuedPrefillTokens: number;
  /** Fraction of the worker's KV cache in use, from 0 to 1. */
  readonly kvUsage: number;
}

/** One worker's expected latencies for a request arriving now; the load loop judges these. */
export interface WorkerLatencyEstimate {
  readonly ttftMs: number;
  readonly itlMs: number;
}

/**
 * Estimates a worker's TTFT and ITL from its load signal through the profile, for workers whose
 * engine does not report latency estimates itself. With the current mean lengths of `load`:
 *
 *   TTFT = TTFT_profile(input′) + queued prefill tokens ÷ prefill tokens/s(input′) × 1000
 *          where input′ = mean input × (1 − KV hit rate): the queue drains at the profiled rate,
 *          then the new request's own prefill runs.
 *   ITL  = ITL_profile(c, context) where context = mean input + mean output ÷ 2 and c is the
 *          concurrency at which the profile's KV usage at that context equals the reported usage
 *          (linear between profiled concurrencies; below the lowest or above the highest profiled
 *          usage, the edge concurrency).
 */
export function estimateWorkerLatency(
  signal: WorkerLoadSignal,
  profile: WorkerProfile,
  load: IntervalLoad,
): WorkerLatencyEstimate {
  const { meanInputTokens, meanOutputTokens, kvHitRate } = normalizeIntervalLoad(load);
  const inputTokens = meanInputTokens * (1 - kvHitRate);
  const prefill = interpolatePrefill(profile, inputTokens);
  const queued = Math.max(0, signal.queuedPrefillTokens);
  const ttftMs = prefill.ttftMs + (queued / prefill.tokensPerSecond) * 1000;
  const contextTokens = meanInputTokens + meanOutputTokens / 2;
  const concurrency = concurrencyAtKvUsage(profile, contextTokens, signal.kvUsage);
  return { ttftMs, itlMs: interpolateDecode(profile, concurrency, contextTokens).itlMs };
}

/** The concurrency at which the profile's KV usage at `contextTokens` equals `kvUsage` (see above). */
export function concurrencyAtKvUsage(profile: WorkerProfile, contextTokens: number, kvUsage: number): number {
  const levels = profile.decode.concurrency;
  const usage = levels.map((c) => interpolateDecode(profile, c, contextTokens).kvUsage);
  const last = levels.length - 1;
  if (kvUsage <= usage[0]!) return levels[0]!;
  for (let i = 0; i < last; i++) {
    const low = usage[i]!;
    const high = usage[i + 1]!;
    if (kvUsage < Math.min(low, high) || kvUsage > Math.max(low, high)) continue;
    if (high === low) return levels[i]!;
    return levels[i]! + ((kvUsage - low) / (high - low)) * (levels[i + 1]! - levels[i]!);
  }
  return levels[last]!;
}

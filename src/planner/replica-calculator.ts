import { type IntervalLoad, normalizeIntervalLoad } from "./interval-load.js";
import type { PlannerLayout } from "./planner-options.js";
import type { WorkerProfile } from "./profile.js";
import { interpolateDecode, interpolatePrefill } from "./profile-interpolation.js";

/** What the throughput loop sizes for: targets and worker bounds (a `CompiledPlannerOptions` fits). */
export interface ReplicaTargets {
  readonly layout: PlannerLayout;
  readonly sloTtftMs: number;
  readonly sloItlMs: number;
  /** Fewest workers per pool. */
  readonly minWorkers: number;
  /** Worker budget of the deployment: all pools together. */
  readonly maxWorkers: number;
}

/** How the prefill work of an interval was sized. */
export interface PrefillSizing {
  /** Uncached prompt tokens per request: mean input × (1 − KV hit rate). */
  readonly inputTokens: number;
  /** Prompt tokens per second to prefill: request rate × `inputTokens`. */
  readonly demandTokensPerSecond: number;
  /** One worker's prefill throughput at `inputTokens`, from the profile. */
  readonly workerTokensPerSecond: number;
  /** The profile's TTFT at `inputTokens`. */
  readonly ttftMs: number;
  /**
   * What such a prefill adds to the decode steps it joins: the profile's measured `interleavedMs`
   * at `inputTokens`, or `ttftMs` for a profile without it.
   */
  readonly interleavedMs: number;
  /** Workers' worth of prefill work, unrounded: demand ÷ per-worker throughput. */
  readonly workers: number;
  /** Whether the profile's TTFT at `inputTokens` is within the target; when not, no count of workers meets it. */
  readonly meetsTarget: boolean;
}

/** How the decode work of an interval was sized. */
export interface DecodeSizing {
  /** Expected context per sequence: mean input + mean output ÷ 2 (Dynamo's choice, the midpoint of a decode). */
  readonly contextTokens: number;
  /** Largest concurrency whose ITL is within the target at `contextTokens` (the lowest profiled one when none is). */
  readonly concurrency: number;
  /**
   * The ITL a sequence sees at that concurrency: the profile's decode ITL plus `interleavedPrefillMs`.
   */
  readonly itlMs: number;
  /**
   * What the prefills sharing a worker's steps add to each token's gap at that concurrency
   * (aggregated serving; 0 in a decode pool): concurrency × the prefill's time ÷ mean output.
   */
  readonly interleavedPrefillMs: number;
  /** Output tokens per second to generate: request rate × mean output. */
  readonly demandTokensPerSecond: number;
  /** One worker's output throughput at that concurrency. */
  readonly workerTokensPerSecond: number;
  /** Workers' worth of decode work, unrounded. */
  readonly workers: number;
  /** Whether some profiled concurrency meets the ITL target at this context length. */
  readonly meetsTarget: boolean;
}

/** Which worker bound changed the computed counts. */
export type WorkerBound = "none" | "min-workers" | "max-workers";

/** The throughput loop's answer for one interval. */
export type ReplicaPlan =
  | {
      readonly layout: "disaggregated";
      readonly prefillWorkers: number;
      readonly decodeWorkers: number;
      readonly prefill: PrefillSizing;
      readonly decode: DecodeSizing;
      readonly bound: WorkerBound;
      /** The arithmetic in words, for logs and the advisory report. */
      readonly reason: string;
    }
  | {
      readonly layout: "aggregated";
      readonly workers: number;
      readonly prefill: PrefillSizing;
      readonly decode: DecodeSizing;
      readonly bound: WorkerBound;
      readonly reason: string;
    };

/** A decode operating point: see `DecodeSizing`. */
export interface DecodeOperatingPoint {
  readonly concurrency: number;
  /** The ITL a sequence sees: the profile's decode ITL plus `interleavedPrefillMs`. */
  readonly itlMs: number;
  /** concurrency × `stallMsPerSequence`. */
  readonly interleavedPrefillMs: number;
  /** The worker's output tokens per second at that concurrency, from the profile's decode points. */
  readonly tokensPerSecond: number;
  readonly meetsTarget: boolean;
}

/**
 * The largest concurrency whose ITL stays within `itlLimitMs` at `contextTokens`. The ITL at
 * concurrency c is the profile's decode ITL (interpolated along context length) plus
 * c × `stallMsPerSequence`, what interleaved prefills add to each step per running sequence (0 for a
 * decode pool). It is read at each profiled concurrency; between the highest concurrency within the
 * limit and the next one above it, where the ITL crosses the limit, the crossing point is taken:
 *   c* = cᵢ + (limit − ITLᵢ) ÷ (ITLᵢ₊₁ − ITLᵢ) × (cᵢ₊₁ − cᵢ)
 * When even the lowest profiled concurrency is over the limit, that one is returned with
 * `meetsTarget` false.
 */
export function decodeOperatingPoint(
  profile: WorkerProfile,
  contextTokens: number,
  itlLimitMs: number,
  stallMsPerSequence = 0,
): DecodeOperatingPoint {
  const levels = profile.decode.concurrency;
  const itl = levels.map((c) => interpolateDecode(profile, c, contextTokens).itlMs + c * stallMsPerSequence);
  const at = (concurrency: number, meetsTarget: boolean): DecodeOperatingPoint => {
    const point = interpolateDecode(profile, concurrency, contextTokens);
    const interleavedPrefillMs = concurrency * stallMsPerSequence;
    return {
      concurrency,
      itlMs: point.itlMs + interleavedPrefillMs,
      interleavedPrefillMs,
      tokensPerSecond: point.tokensPerSecond,
      meetsTarget,
    };
  };
  for (let i = levels.length - 1; i >= 0; i--) {
    if (itl[i]! > itlLimitMs) continue;
    let concurrency = levels[i]!;
    if (i < levels.length - 1) {
      const share = (itlLimitMs - itl[i]!) / (itl[i + 1]! - itl[i]!);
      concurrency += share * (levels[i + 1]! - levels[i]!);
    }
    return at(concurrency, true);
  }
  return at(levels[0]!, false);
}

/** Sizes the prefill work of `load` (see `PrefillSizing`). */
export function sizePrefill(load: IntervalLoad, profile: WorkerProfile, sloTtftMs: number): PrefillSizing {
  const { requestsPerSecond, meanInputTokens, kvHitRate } = normalizeIntervalLoad(load);
  const inputTokens = meanInputTokens * (1 - kvHitRate);
  const demandTokensPerSecond = requestsPerSecond * inputTokens;
  const point = interpolatePrefill(profile, inputTokens);
  return {
    inputTokens,
    demandTokensPerSecond,
    workerTokensPerSecond: point.tokensPerSecond,
    ttftMs: point.ttftMs,
    interleavedMs: point.interleavedMs ?? point.ttftMs,
    workers: demandTokensPerSecond / point.tokensPerSecond,
    meetsTarget: point.ttftMs <= sloTtftMs,
  };
}

/**
 * Sizes the decode work of `load` (see `DecodeSizing`). With `interleaved` (aggregated serving), each
 * sequence shares its worker's steps with the prefills of the requests that start while it decodes:
 * a worker running c sequences of O output tokens starts, in steady state, c ÷ O requests per step,
 * and each adds its prefill's time to the step it runs in (chunked prefill spreads the same time over
 * several steps). So a sequence's ITL is the decode ITL plus c × prefill time ÷ O, with the prefill's
 * time what the profile measured it to add to a decode batch at the uncached input (`interleavedMs`;
 * its TTFT on an idle worker for a profile without that); the operating point is where that sum
 * meets the target. Without it (a decode pool) the decode ITL alone is held to the target.
 */
export function sizeDecode(
  load: IntervalLoad,
  profile: WorkerProfile,
  sloItlMs: number,
  interleaved?: PrefillSizing,
): DecodeSizing {
  const { requestsPerSecond, meanInputTokens, meanOutputTokens } = normalizeIntervalLoad(load);
  // Cached prompt tokens still occupy the KV cache during decode, so the context is not discounted.
  const contextTokens = meanInputTokens + meanOutputTokens / 2;
  const demandTokensPerSecond = requestsPerSecond * meanOutputTokens;
  const stall =
    interleaved && interleaved.inputTokens > 0 && meanOutputTokens > 0 ? interleaved.interleavedMs / meanOutputTokens : 0;
  const point = decodeOperatingPoint(profile, contextTokens, sloItlMs, stall);
  return {
    contextTokens,
    concurrency: point.concurrency,
    itlMs: point.itlMs,
    interleavedPrefillMs: point.interleavedPrefillMs,
    demandTokensPerSecond,
    workerTokensPerSecond: point.tokensPerSecond,
    workers: demandTokensPerSecond / point.tokensPerSecond,
    meetsTarget: point.meetsTarget,
  };
}

/**
 * Dynamo's throughput-based computation for one interval's predicted `load`:
 *
 *   disaggregated  prefill workers = ⌈rate × input × (1 − hit rate) ÷ prefill tokens/s per worker⌉
 *                  decode workers  = ⌈rate × output ÷ decode tokens/s per worker⌉
 *   aggregated     workers = ⌈rate × input × (1 − hit rate) ÷ prefill tokens/s per worker
 *                            + rate × output ÷ decode tokens/s per worker⌉
 *
 * with the per-worker throughputs read from `profile` as `sizePrefill` and `sizeDecode` describe. The
 * aggregated sum treats a worker's time as shared: the fraction it spends prefilling is not available
 * for decoding, and chunked prefill interleaves the two in the same batches, so the two loads add.
 * The interleaving also lengthens every step a prefill joins, so an aggregated worker's decode
 * concurrency is the one where the decode ITL plus what its prefills add meets the target
 * (`sizeDecode`); read at the decode ITL alone, the profile's fleet held 87–94% of requests within
 * the targets on the replay benchmarks (docs/benchmarks.md).
 *
 * Then the bounds: every pool gets at least `minWorkers`; when the pools together exceed `maxWorkers`
 * they shrink in proportion (prefill ⌊p × max ÷ (p + d)⌋, kept within [min, max − min]; decode the rest).
 * A count within a hair (1e-9) of an integer is that integer, so float noise never adds a worker.
 */
export function calculateReplicas(load: IntervalLoad, profile: WorkerProfile, targets: ReplicaTargets): ReplicaPlan {
  const prefill = sizePrefill(load, profile, targets.sloTtftMs);
  const decode = sizeDecode(load, profile, targets.sloItlMs, targets.layout === "aggregated" ? prefill : undefined);
  const notes = [describePrefill(prefill, targets.sloTtftMs), describeDecode(decode, targets.sloItlMs)];
  const { minWorkers, maxWorkers } = targets;
  if (targets.layout === "aggregated") {
    const wanted = wholeWorkers(prefill.workers + decode.workers);
    const workers = Math.min(maxWorkers, Math.max(minWorkers, wanted));
    const bound: WorkerBound = workers > wanted ? "min-workers" : workers < wanted ? "max-workers" : "none";
    notes.push(`aggregated: ${format(prefill.workers)} + ${format(decode.workers)} → ${wanted} workers`);
    if (bound !== "none") notes.push(`held to --${bound} ${workers}`);
    return { layout: "aggregated", workers, prefill, decode, bound, reason: notes.join("; ") };
  }
  let prefillWorkers = Math.max(minWorkers, wholeWorkers(prefill.workers));
  let decodeWorkers = Math.max(minWorkers, wholeWorkers(decode.workers));
  let bound: WorkerBound = "none";
  if (prefillWorkers > wholeWorkers(prefill.workers) || decodeWorkers > wholeWorkers(decode.workers)) {
    bound = "min-workers";
    notes.push(`raised to --min-workers ${minWorkers} per pool`);
  }
  if (prefillWorkers + decodeWorkers > maxWorkers) {
    const wanted = `${prefillWorkers} + ${decodeWorkers}`;
    const scale = maxWorkers / (prefillWorkers + decodeWorkers);
    const shrunkPrefill = Math.min(maxWorkers - minWorkers, Math.max(minWorkers, Math.floor(prefillWorkers * scale)));
    decodeWorkers = Math.min(decodeWorkers, maxWorkers - shrunkPrefill);
    prefillWorkers = Math.min(prefillWorkers, maxWorkers - decodeWorkers);
    bound = "max-workers";
    notes.push(`${wanted} is over --max-workers ${maxWorkers}: shrunk in proportion to ${prefillWorkers} + ${decodeWorkers}`);
  }
  return { layout: "disaggregated", prefillWorkers, decodeWorkers, prefill, decode, bound, reason: notes.join("; ") };
}

/** ⌈workers⌉, with anything within 1e-9 above an integer counted as that integer. */
function wholeWorkers(workers: number): number {
  return Math.max(0, Math.ceil(workers - 1e-9));
}

function format(value: number): string {
  return String(Math.round(value * 100) / 100);
}

function describePrefill(sizing: PrefillSizing, sloTtftMs: number): string {
  const text =
    `prefill ${format(sizing.demandTokensPerSecond)} tokens/s ÷ ${format(sizing.workerTokensPerSecond)} per worker` +
    ` = ${format(sizing.workers)} workers`;
  if (sizing.meetsTarget) return text;
  return `${text} (a ${format(sizing.inputTokens)}-token prefill takes ${format(sizing.ttftMs)} ms by the profile, over the ${sloTtftMs} ms TTFT target at any count)`;
}

function describeDecode(sizing: DecodeSizing, sloItlMs: number): string {
  const text =
    `decode ${format(sizing.demandTokensPerSecond)} tokens/s ÷ ${format(sizing.workerTokensPerSecond)} per worker` +
    ` at concurrency ${format(sizing.concurrency)}, context ${format(sizing.contextTokens)}` +
    (sizing.interleavedPrefillMs > 0
      ? ` (ITL ${format(sizing.itlMs)} ms, ${format(sizing.interleavedPrefillMs)} of it interleaved prefills)`
      : "") +
    ` = ${format(sizing.workers)} workers`;
  if (sizing.meetsTarget) return text;
  return `${text} (ITL ${format(sizing.itlMs)} ms at the lowest profiled concurrency, over the ${sloItlMs} ms ITL target at any count)`;
}

import { ArmatureError } from "../protocol/index.js";
import { PREDICTOR_NAMES, type PredictorName } from "./load-predictor.js";
import { type CompiledPredictorOptions, compilePredictorOptions, isPredictorName, type PredictorOptions } from "./predictors.js";
import type { WorkerProfile } from "./profile.js";
import { RECURRENCE_HISTORY, type RecurrenceSetting } from "./recurring-load.js";

/**
 * `load`: only the reactive load loop, judging live latency estimates every `loadIntervalSeconds`.
 * `sla`: also the predictive throughput loop every `intervalSeconds`, sizing pools from a profile;
 * its answer is a floor under the load loop.
 */
export type PlannerMode = "load" | "sla";

/** `aggregated`: one pool of workers doing prefill and decode. `disaggregated`: a prefill and a decode pool. */
export type PlannerLayout = "aggregated" | "disaggregated";

/** The planner's settings; every field has a default. The CLI flag that sets each is named in brackets. */
export interface PlannerOptions {
  /** [--planner] Default `load`, which needs no profile. */
  readonly mode?: PlannerMode;
  /** [--planner-layout] Default `aggregated`. */
  readonly layout?: PlannerLayout;
  /** [--slo-ttft] Time-to-first-token target in ms. Default 500 (Dynamo's). */
  readonly sloTtftMs?: number;
  /** [--slo-itl] Inter-token latency target in ms. Default 50 (Dynamo's). */
  readonly sloItlMs?: number;
  /**
   * [--min-workers] Fewest workers per pool. Default 1. 0 lets an aggregated pool scale to zero once
   * no request has run for `scaleToZeroAfterSeconds`; the first request then wakes it.
   */
  readonly minWorkers?: number;
  /** [--scale-to-zero-after] Idle seconds before a pool with `minWorkers` 0 drains its last worker. Default 600. */
  readonly scaleToZeroAfterSeconds?: number;
  /** [--max-workers] Worker budget of the whole deployment, all pools together. Default 8 (Dynamo's GPU budget). */
  readonly maxWorkers?: number;
  /**
   * [--planner-interval] Seconds between throughput-loop decisions. Default 60, armature's own
   * (Dynamo's is 180): chosen on replays of four load shapes (docs/planner.md).
   */
  readonly intervalSeconds?: number;
  /** [--planner-load-interval] Seconds between load-loop decisions, shorter than `intervalSeconds`. Default 5 (Dynamo's). */
  readonly loadIntervalSeconds?: number;
  /** [--predictor] `constant`, `moving-average`, `kalman` or `holt-winters`. Default `kalman`. */
  readonly predictor?: string;
  /** Predictor settings. A `holt-winters` season length, when not given, is one day of intervals. */
  readonly predictorOptions?: PredictorOptions;
  /**
   * [--predictor-period] A period in the request rate the throughput loop provisions ahead of:
   * `auto` (found in the readings, `RecurringLoad`), `off`, or a period in seconds (a whole number
   * of at least two intervals). Default `auto`.
   */
  readonly predictorPeriod?: "auto" | "off" | number;
  /** [--planner-cooldown] Seconds after a change of a pool before the load loop changes it again. Default 30. */
  readonly cooldownSeconds?: number;
  /** [--planner-up-threshold] Grow when estimates exceed target × this. Default 1.0. */
  readonly scaleUpThreshold?: number;
  /** [--planner-down-threshold] Shrink when estimates are below target × this; below the up threshold. Default 0.8 (Dynamo's sensitivity 80). */
  readonly scaleDownThreshold?: number;
  /** [--planner-advisory] Decide and report, change nothing. Default false. */
  readonly advisory?: boolean;
  /**
   * [--planner-quantile] The load loop judges this quantile of each worker's live TTFTs and ITLs
   * against the targets, between 0 and 1 (0.9: the latency nine requests in ten stay within).
   */
  readonly latencyQuantile?: number;
  /** [--profile] The worker profile (`parseProfile`); required in `sla` mode, used by `load` mode when given. */
  readonly profile?: WorkerProfile;
}

/** `PlannerOptions` checked, with every default filled in. */
export interface CompiledPlannerOptions {
  readonly mode: PlannerMode;
  readonly layout: PlannerLayout;
  readonly sloTtftMs: number;
  readonly sloItlMs: number;
  readonly minWorkers: number;
  readonly scaleToZeroAfterSeconds: number;
  readonly maxWorkers: number;
  readonly intervalSeconds: number;
  readonly loadIntervalSeconds: number;
  readonly predictor: PredictorName;
  readonly predictorOptions: CompiledPredictorOptions;
  readonly recurrence: RecurrenceSetting;
  readonly cooldownSeconds: number;
  readonly scaleUpThreshold: number;
  readonly scaleDownThreshold: number;
  readonly advisory: boolean;
  readonly latencyQuantile: number;
  readonly profile: WorkerProfile | undefined;
}

/** Dynamo's defaults where Dynamo has one (docs/planner.md lists their sources). */
export const PLANNER_DEFAULTS = {
  mode: "load",
  layout: "aggregated",
  sloTtftMs: 500,
  sloItlMs: 50,
  minWorkers: 1,
  scaleToZeroAfterSeconds: 600,
  maxWorkers: 8,
  intervalSeconds: 60,
  loadIntervalSeconds: 5,
  predictor: "kalman",
  cooldownSeconds: 30,
  scaleUpThreshold: 1.0,
  scaleDownThreshold: 0.8,
  advisory: false,
  latencyQuantile: 0.9,
} as const satisfies Partial<CompiledPlannerOptions>;

const SECONDS_PER_DAY = 86_400;

/**
 * Checks `options` once and fills in the defaults. Throws ArmatureError `CONFIG_INVALID` whose
 * message names the flag that sets the bad value, e.g. "--min-workers (5) is above --max-workers (3)".
 */
export function compilePlannerOptions(options: PlannerOptions = {}): CompiledPlannerOptions {
  const merged = { ...PLANNER_DEFAULTS, ...withoutUndefined(options) };
  const mode = oneOf("--planner", merged.mode, ["load", "sla"] as const);
  const layout = oneOf("--planner-layout", merged.layout, ["aggregated", "disaggregated"] as const);
  const sloTtftMs = positive("--slo-ttft", merged.sloTtftMs, "milliseconds");
  const sloItlMs = positive("--slo-itl", merged.sloItlMs, "milliseconds");
  const minWorkers = integer("--min-workers", merged.minWorkers, 0);
  if (minWorkers === 0 && layout === "disaggregated") {
    refuse("--min-workers 0 (scale to zero) is for aggregated pools; give the prefill and decode pools at least 1 each");
  }
  const scaleToZeroAfterSeconds = positive("--scale-to-zero-after", merged.scaleToZeroAfterSeconds, "seconds");
  if (options.scaleToZeroAfterSeconds !== undefined && minWorkers > 0) {
    refuse(`--scale-to-zero-after applies to pools that may reach zero workers; it needs --min-workers 0, got ${minWorkers}`);
  }
  const maxWorkers = integer("--max-workers", merged.maxWorkers, 1);
  if (minWorkers > maxWorkers) refuse(`--min-workers (${minWorkers}) is above --max-workers (${maxWorkers})`);
  if (layout === "disaggregated" && 2 * minWorkers > maxWorkers) {
    refuse(
      `--min-workers (${minWorkers}) for each of the prefill and decode pools needs ${2 * minWorkers} workers, above --max-workers (${maxWorkers})`,
    );
  }
  const intervalSeconds = positive("--planner-interval", merged.intervalSeconds, "seconds");
  const loadIntervalSeconds = positive("--planner-load-interval", merged.loadIntervalSeconds, "seconds");
  if (loadIntervalSeconds >= intervalSeconds) {
    refuse(`--planner-load-interval (${loadIntervalSeconds} s) must be shorter than --planner-interval (${intervalSeconds} s)`);
  }
  const predictor = merged.predictor;
  if (!isPredictorName(predictor)) {
    refuse(`--predictor "${predictor}" is not a predictor; use one of ${PREDICTOR_NAMES.join(", ")}`);
  }
  const predictorOptions = compilePredictorOptions(withSeason(merged.predictorOptions, predictor, intervalSeconds));
  const recurrence = recurrenceSetting(merged.predictorPeriod ?? "auto", intervalSeconds);
  const cooldownSeconds = nonNegative("--planner-cooldown", merged.cooldownSeconds, "seconds");
  const scaleUpThreshold = positive("--planner-up-threshold", merged.scaleUpThreshold, "a multiple of the target");
  const scaleDownThreshold = nonNegative("--planner-down-threshold", merged.scaleDownThreshold, "a multiple of the target");
  if (scaleDownThreshold >= scaleUpThreshold) {
    refuse(
      `--planner-down-threshold (${scaleDownThreshold}) must be below --planner-up-threshold (${scaleUpThreshold}), or the planner flaps`,
    );
  }
  if (typeof merged.advisory !== "boolean")
    refuse(`--planner-advisory must be true or false, got ${JSON.stringify(merged.advisory)}`);
  const latencyQuantile = positive("--planner-quantile", merged.latencyQuantile, "a quantile");
  if (latencyQuantile >= 1) refuse(`--planner-quantile (${latencyQuantile}) must be below 1, e.g. 0.9`);
  const profile = merged.profile;
  if (mode === "sla" && profile === undefined) {
    refuse("--profile is required with --planner sla: the throughput loop sizes workers from the profile's measurements");
  }
  return {
    mode,
    layout,
    sloTtftMs,
    sloItlMs,
    minWorkers,
    scaleToZeroAfterSeconds,
    maxWorkers,
    intervalSeconds,
    loadIntervalSeconds,
    predictor,
    predictorOptions,
    recurrence,
    latencyQuantile,
    cooldownSeconds,
    scaleUpThreshold,
    scaleDownThreshold,
    advisory: merged.advisory,
    profile,
  };
}

/** Holt-Winters gets a season of one day of intervals unless a season length is given. */
function withSeason(options: PredictorOptions | undefined, predictor: PredictorName, intervalSeconds: number): PredictorOptions {
  const given = options ?? {};
  if (predictor !== "holt-winters" || given.holtWinters?.seasonLength !== undefined) return given;
  const seasonLength = Math.max(2, Math.round(SECONDS_PER_DAY / intervalSeconds));
  return { ...given, holtWinters: { ...given.holtWinters, seasonLength } };
}

/** Refuses a `--predictor-period` that is not auto, off or a positive number of seconds, naming it. */
export function refusePredictorPeriod(value: unknown): never {
  return refuse(`--predictor-period must be auto, off or a period in seconds, got ${JSON.stringify(value)}`);
}

/** `--predictor-period`: auto, off, or seconds that make a whole number (≥ 2) of planner intervals. */
function recurrenceSetting(value: unknown, intervalSeconds: number): RecurrenceSetting {
  if (value === "auto" || value === "off") return { kind: value };
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) return refusePredictorPeriod(value);
  const readings = value / intervalSeconds;
  if (!Number.isInteger(readings) || readings < 2) {
    return refuse(
      `--predictor-period (${value} s) must be a whole number of at least two --planner-interval periods (${intervalSeconds} s)`,
    );
  }
  if (readings > RECURRENCE_HISTORY) {
    return refuse(
      `--predictor-period (${value} s) is ${readings} --planner-interval periods; at most ${RECURRENCE_HISTORY} readings are kept, so a period can be at most ${RECURRENCE_HISTORY * intervalSeconds} s`,
    );
  }
  return { kind: "fixed", readings };
}

function withoutUndefined(options: PlannerOptions): PlannerOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as PlannerOptions;
}

function refuse(message: string): never {
  throw new ArmatureError("CONFIG_INVALID", message);
}

function oneOf<T extends string>(flag: string, value: unknown, choices: readonly T[]): T {
  if (!(choices as readonly unknown[]).includes(value))
    refuse(`${flag} must be ${choices.join(" or ")}, got ${JSON.stringify(value)}`);
  return value as T;
}

function positive(flag: string, value: unknown, unit: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    refuse(`${flag} must be a positive number (${unit}), got ${JSON.stringify(value)}`);
  }
  return value as number;
}

function nonNegative(flag: string, value: unknown, unit: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    refuse(`${flag} must be a number ≥ 0 (${unit}), got ${JSON.stringify(value)}`);
  }
  return value as number;
}

function integer(flag: string, value: unknown, minimum: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < minimum) {
    refuse(`${flag} must be a whole number ≥ ${minimum}, got ${JSON.stringify(value)}`);
  }
  return value as number;
}

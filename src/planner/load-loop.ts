import type { WorkerLatencyEstimate } from "./latency-estimate.js";
import type { CompiledPlannerOptions } from "./planner-options.js";

/** The settings the load loop reads (a `CompiledPlannerOptions` fits). */
export type LoadLoopSettings = Pick<
  CompiledPlannerOptions,
  | "sloTtftMs"
  | "sloItlMs"
  | "minWorkers"
  | "scaleToZeroAfterSeconds"
  | "maxWorkers"
  | "cooldownSeconds"
  | "scaleUpThreshold"
  | "scaleDownThreshold"
  | "advisory"
>;

/** A pool of workers: `prefill` and `decode` when disaggregated, `aggregated` otherwise. */
export type PoolName = "prefill" | "decode" | "aggregated";

/** One pool as the caller sees it now. */
export interface PoolObservation {
  /** Workers running in the pool. */
  readonly workers: number;
  /** One estimate per worker that reported (`estimateWorkerLatency`, or the engine's own). */
  readonly estimates: readonly WorkerLatencyEstimate[];
  /** The throughput loop's count for this pool, which the load loop never goes below. Default 0. */
  readonly floorWorkers?: number;
  /**
   * How long no request has run or waited (ms; 0 while one does). A pool may reach zero workers
   * only once this is at least `scaleToZeroAfterSeconds`; unknown (undefined): never.
   */
  readonly idleMs?: number | undefined;
}

/** The pools at one load-loop tick. */
export type LoadObservation =
  | { readonly layout: "disaggregated"; readonly prefill: PoolObservation; readonly decode: PoolObservation }
  | { readonly layout: "aggregated"; readonly pool: PoolObservation };

/** What the loop wants for one pool. */
export interface PoolDecision {
  readonly pool: PoolName;
  readonly currentWorkers: number;
  readonly targetWorkers: number;
  readonly direction: "up" | "down" | "hold";
  /** Why, in words, for logs and the advisory report. */
  readonly reason: string;
}

/** The loop's answer at one tick. */
export interface LoadDecision {
  readonly atMs: number;
  readonly pools: readonly PoolDecision[];
  /** Whether some pool's target differs from its current count. */
  readonly changes: boolean;
  /** True in advisory mode: the decision is a report, the caller applies nothing and no cool-down starts. */
  readonly advisory: boolean;
}

type Metric = "ttftMs" | "itlMs";

interface Want {
  readonly step: -1 | 0 | 1;
  /** How far over the target an up is (lowest estimate ÷ target); orders competing ups. */
  readonly pressure: number;
  readonly reason: string;
}

/**
 * The reactive loop: each tick, for each pool, judge the workers' latency estimates against the
 * targets (prefill pool: TTFT; decode pool: ITL; aggregated pool: both).
 *
 * - Up by 1 when, for TTFT or for ITL, every reporting worker's estimate exceeds target × scale-up
 *   threshold.
 * - Down by 1 when every estimate of every judged metric is below target × scale-down threshold, and
 *   the busiest worker's estimate × n ÷ (n − 1) (its load spread over one worker fewer) would not
 *   exceed target × scale-up threshold; without that check a pool whose step is wider than the band
 *   between the thresholds would shrink and grow in turn.
 * - A pool changed less than `cooldownSeconds` ago holds; so does a pool with no reports.
 * - Never below max(`minWorkers`, the pool's floor): a pool under its floor is raised to it at once,
 *   cool-down or not. With `minWorkers` 0 the bound is 1 until the pool has been idle for
 *   `scaleToZeroAfterSeconds`; a pool of none with a request running or waiting is raised to 1. Never grows past `maxWorkers`, which in the disaggregated layout is shared; when
 *   both pools want to grow and one worker is left, the one further over its target gets it.
 */
export class LoadLoop {
  readonly #settings: LoadLoopSettings;
  readonly #lastChangeMs = new Map<PoolName, number>();

  constructor(settings: LoadLoopSettings) {
    this.#settings = settings;
  }

  /** Decides at `nowMs` (any monotonic milliseconds: a real or a virtual clock). */
  decide(nowMs: number, observation: LoadObservation): LoadDecision {
    const pools: [PoolName, PoolObservation, Metric[]][] =
      observation.layout === "aggregated"
        ? [["aggregated", observation.pool, ["ttftMs", "itlMs"]]]
        : [
            ["prefill", observation.prefill, ["ttftMs"]],
            ["decode", observation.decode, ["itlMs"]],
          ];
    const planned = pools.map(([pool, state, metrics]) => this.#plan(nowMs, pool, state, metrics));
    const decisions = this.#fitBudget(planned);
    if (!this.#settings.advisory) {
      for (const decision of decisions) {
        if (decision.targetWorkers !== decision.currentWorkers) this.#lastChangeMs.set(decision.pool, nowMs);
      }
    }
    return {
      atMs: nowMs,
      pools: decisions,
      changes: decisions.some((d) => d.direction !== "hold"),
      advisory: this.#settings.advisory,
    };
  }

  #plan(nowMs: number, pool: PoolName, state: PoolObservation, metrics: Metric[]): PoolDecision & { pressure: number } {
    const { minWorkers, cooldownSeconds } = this.#settings;
    const current = state.workers;
    const want = this.#judge(state, metrics);
    let target = current + want.step;
    let reason = want.reason;
    const lastChangeMs = this.#lastChangeMs.get(pool);
    if (target !== current && lastChangeMs !== undefined && nowMs - lastChangeMs < cooldownSeconds * 1000) {
      target = current;
      reason = `${reason}; cooling down: changed ${format((nowMs - lastChangeMs) / 1000)} s ago, --planner-cooldown ${cooldownSeconds} s`;
    }
    const floor = state.floorWorkers ?? 0;
    let lower = Math.max(minWorkers, floor);
    let bound = floor > minWorkers ? `the throughput floor ${floor}` : `--min-workers ${minWorkers}`;
    if (lower === 0) {
      const idleMs = state.idleMs;
      const afterMs = this.#settings.scaleToZeroAfterSeconds * 1000;
      if (idleMs === undefined || idleMs < afterMs) {
        lower = 1;
        bound =
          idleMs === 0
            ? "1: a request runs or waits"
            : `1 until idle for --scale-to-zero-after ${this.#settings.scaleToZeroAfterSeconds} s`;
      } else if (target === 0 && current > 0) {
        reason = `${reason}; idle for ${format(idleMs / 1000)} s (--scale-to-zero-after ${this.#settings.scaleToZeroAfterSeconds} s)`;
      }
    }
    let pressure = want.pressure;
    if (target < lower) {
      reason = current < lower ? `raised to ${bound}` : `${reason}; held at ${bound}`;
      if (current < lower) pressure = Number.POSITIVE_INFINITY;
      target = lower;
    }
    return { pool, currentWorkers: current, targetWorkers: target, direction: "hold", reason, pressure };
  }

  #judge(state: PoolObservation, metrics: Metric[]): Want {
    const { scaleUpThreshold, scaleDownThreshold } = this.#settings;
    if (state.estimates.length === 0) return { step: 0, pressure: 0, reason: "no load reports" };
    const spans = metrics.map((metric) => {
      const values = state.estimates.map((e) => e[metric]);
      return { metric, target: this.#target(metric), lowest: Math.min(...values), highest: Math.max(...values) };
    });
    const over = spans.filter((s) => s.lowest > s.target * scaleUpThreshold);
    if (over.length > 0) {
      const worst = over.reduce((a, b) => (b.lowest / b.target > a.lowest / a.target ? b : a));
      return {
        step: 1,
        pressure: worst.lowest / worst.target,
        reason: `${label(worst.metric)} over ${format(worst.target * scaleUpThreshold)} ms on all ${state.estimates.length} workers (lowest ${format(worst.lowest)} ms)`,
      };
    }
    if (!spans.every((s) => s.highest < s.target * scaleDownThreshold)) {
      return { step: 0, pressure: 0, reason: "within the thresholds" };
    }
    const n = state.workers;
    if (n > 1) {
      const crowded = spans.find((s) => (s.highest * n) / (n - 1) > s.target * scaleUpThreshold);
      if (crowded) {
        const after = (crowded.highest * n) / (n - 1);
        return {
          step: 0,
          pressure: 0,
          reason: `below the scale-down threshold, but one worker fewer would put ${label(crowded.metric)} near ${format(after)} ms, over ${format(crowded.target * scaleUpThreshold)} ms`,
        };
      }
    }
    return { step: -1, pressure: 0, reason: `all estimates below ${scaleDownThreshold} × target` };
  }

  #target(metric: Metric): number {
    return metric === "ttftMs" ? this.#settings.sloTtftMs : this.#settings.sloItlMs;
  }

  /** Holds back growth that would exceed `maxWorkers`; the pool further over its target goes first. */
  #fitBudget(planned: (PoolDecision & { pressure: number })[]): PoolDecision[] {
    const { maxWorkers } = this.#settings;
    const finals = new Map(planned.map((p) => [p.pool, { ...p }]));
    const growing = planned
      .filter((p) => p.targetWorkers > p.currentWorkers)
      .sort((a, b) => b.pressure - a.pressure || (a.pool === "decode" ? -1 : b.pool === "decode" ? 1 : 0));
    const settled = new Set(planned.filter((p) => p.targetWorkers <= p.currentWorkers).map((p) => p.pool));
    for (const grow of growing) {
      let others = 0;
      for (const p of planned) {
        if (p.pool === grow.pool) continue;
        others += settled.has(p.pool) ? finals.get(p.pool)!.targetWorkers : p.currentWorkers;
      }
      const final = finals.get(grow.pool)!;
      const room = maxWorkers - others;
      if (final.targetWorkers > room) {
        final.targetWorkers = Math.max(final.currentWorkers, room);
        final.reason = `${final.reason}; held by --max-workers ${maxWorkers}`;
      }
      settled.add(grow.pool);
    }
    return planned.map((p) => {
      const { pressure: _pressure, ...decision } = finals.get(p.pool)!;
      const direction =
        decision.targetWorkers > decision.currentWorkers
          ? "up"
          : decision.targetWorkers < decision.currentWorkers
            ? "down"
            : "hold";
      return { ...decision, direction };
    });
  }
}

function label(metric: Metric): string {
  return metric === "ttftMs" ? "TTFT" : "ITL";
}

function format(value: number): string {
  return String(Math.round(value * 10) / 10);
}

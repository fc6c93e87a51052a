import type { Logger, MetricMeter } from "../observability/index.js";
import type { WorkerRole } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";
import type { ScalingConnector } from "./connectors/scaling-connector.js";
import { type IntervalLoad, LoadForecaster } from "./interval-load.js";
import type { WorkerLatencyEstimate } from "./latency-estimate.js";
import { type LoadDecision, LoadLoop, type LoadObservation, type PoolName, type PoolObservation } from "./load-loop.js";
import { PlannerMetrics } from "./planner-metrics.js";
import type { CompiledPlannerOptions } from "./planner-options.js";
import { calculateReplicas, type ReplicaPlan } from "./replica-calculator.js";

/** Decisions kept for `GET /v1/planner`. */
const KEPT_DECISIONS = 100;

/** What the planner reads of the deployment; the caller binds it to routers, workers or a replay. */
export interface PlannerSignals {
  /** Traffic since the previous call (request rate, mean lengths, KV hit rate); the window restarts. */
  takeInterval(nowMs: number): IntervalLoad;
  /** One latency estimate per ready worker of the pool, for a request arriving now. */
  estimates(pool: PoolName, load: IntervalLoad): readonly WorkerLatencyEstimate[];
  /** How long no request has run or waited (ms, 0 while one does); without it no pool scales to zero. */
  idleMs?(nowMs: number): number;
}

/** One decision as logged, exported and kept: when, which loop, what it saw and what it did. */
export interface PlannerDecisionRecord {
  readonly atMs: number;
  readonly loop: "load" | "throughput";
  readonly pool: PoolName;
  readonly from: number;
  readonly to: number;
  /** `up`, `down`, `hold`, or `floor` (the throughput loop raised the pool to its floor). */
  readonly action: "up" | "down" | "hold" | "floor";
  readonly reason: string;
  readonly applied: boolean;
}

/** What `GET /v1/planner` shows. */
export interface PlannerState {
  /** The model whose pools it sizes, where the planner was told. */
  readonly model?: string | undefined;
  readonly mode: CompiledPlannerOptions["mode"];
  readonly layout: CompiledPlannerOptions["layout"];
  readonly advisory: boolean;
  readonly sloTtftMs: number;
  readonly sloItlMs: number;
  readonly minWorkers: number;
  readonly maxWorkers: number;
  readonly pools: Record<string, { desired: number; ready: number; floor: number }>;
  readonly observed: IntervalLoad | undefined;
  readonly predicted: IntervalLoad | undefined;
  /** The request rate's period the throughput loop provisions ahead of (`--predictor-period`), once there is one. */
  readonly recurringPeriod: { readonly seconds: number; readonly correlation: number } | undefined;
  readonly plan: ReplicaPlan | undefined;
  readonly decisions: readonly PlannerDecisionRecord[];
}

export interface PlannerDeps {
  readonly options: CompiledPlannerOptions;
  readonly clock: Clock;
  readonly connector: ScalingConnector;
  readonly signals: PlannerSignals;
  readonly meter?: MetricMeter | undefined;
  /** The model whose pools it sizes: the `model` label of its metrics and a field of its state. */
  readonly model?: string | undefined;
  readonly logger: Logger;
  /** Hears every decision (replay keeps the timeline). */
  readonly onDecision?: ((record: PlannerDecisionRecord) => void) | undefined;
  /**
   * Whether this planner may change the pools now (`PlannerLease`: one planner of a deployment
   * acts); while false it decides and reports, as in advisory mode. Default: always.
   */
  readonly acting?: (() => boolean) | undefined;
}

/**
 * The SLA planner: Dynamo's two loops on a clock. Every `loadIntervalSeconds` the load loop judges
 * each pool's live latency estimates against the SLAs and moves it ±1; in `sla` mode, every
 * `intervalSeconds` the throughput loop predicts the next interval's traffic and sizes the pools
 * from the profile, and that size is the load loop's floor. Decisions go to the connector (none in
 * advisory mode), the log, the metrics and `state()`.
 */
export class Planner {
  readonly #deps: PlannerDeps;
  readonly #loop: LoadLoop;
  readonly #forecaster: LoadForecaster;
  readonly #metrics: PlannerMetrics | undefined;
  readonly #stop = new AbortController();
  readonly #decisions: PlannerDecisionRecord[] = [];
  readonly #floors = new Map<PoolName, number>();
  readonly #pools: Record<string, { desired: number; ready: number; floor: number }> = {};
  readonly #running: Promise<void>[] = [];
  #observed: IntervalLoad | undefined;
  #predicted: IntervalLoad | undefined;
  #plan: ReplicaPlan | undefined;
  /** A wake-up being applied. */
  #waking: Promise<void> | undefined;
  /** Pools woken from zero whose first worker has not been seen ready yet. */
  readonly #cold = new Set<PoolName>();

  private constructor(deps: PlannerDeps) {
    this.#deps = deps;
    this.#loop = new LoadLoop(deps.options);
    this.#forecaster = new LoadForecaster(deps.options.predictor, deps.options.predictorOptions, deps.options.recurrence);
    this.#metrics = deps.meter ? PlannerMetrics.for(deps.meter) : undefined;
  }

  /** Starts both loops (the throughput loop only in `sla` mode). */
  static start(deps: PlannerDeps): Planner {
    const planner = new Planner(deps);
    const { options } = deps;
    planner.#running.push(planner.#every(options.loadIntervalSeconds * 1000, () => planner.loadTick()));
    if (options.mode === "sla")
      planner.#running.push(planner.#every(options.intervalSeconds * 1000, () => planner.throughputTick()));
    return planner;
  }

  /** The pools this layout scales. */
  get pools(): readonly PoolName[] {
    return this.#deps.options.layout === "disaggregated" ? ["prefill", "decode"] : ["aggregated"];
  }

  /** One load-loop decision, applied (tests and replay may call it directly). */
  async loadTick(): Promise<LoadDecision> {
    // A wake-up under way settles first, so the tick sees the pool it made.
    await this.#waking;
    const { clock, connector, signals, options } = this.#deps;
    const now = clock.now();
    const load = this.#predicted ??
      this.#observed ?? { requestsPerSecond: 0, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0 };
    const pool = async (name: PoolName): Promise<PoolObservation> => {
      const count = await connector.replicas(name as WorkerRole);
      this.#remember(name, count.desired, count.ready);
      return {
        workers: count.desired,
        estimates: signals.estimates(name, load),
        floorWorkers: this.#floors.get(name) ?? 0,
        idleMs: signals.idleMs?.(now),
      };
    };
    const observation: LoadObservation =
      options.layout === "disaggregated"
        ? { layout: "disaggregated", prefill: await pool("prefill"), decode: await pool("decode") }
        : { layout: "aggregated", pool: await pool("aggregated") };
    const decision = this.#loop.decide(now, observation);
    for (const d of decision.pools) {
      await this.#apply({
        atMs: now,
        loop: "load",
        pool: d.pool,
        from: d.currentWorkers,
        to: d.targetWorkers,
        action: d.direction,
        reason: d.reason,
        applied: false,
      });
    }
    return decision;
  }

  /**
   * A request arrived: every pool scaled to zero gets a worker now rather than at the next tick
   * (the request waits for it in the router's admission queue). Cheap when no pool is empty.
   * Returns whether the request meets a cold start (a pool woken from zero whose worker has not
   * been seen ready): its wait is the start-up's, which more workers would not shorten, so the
   * caller leaves its TTFT out of the load loop's estimates (`LiveLatency.begin`'s `coldStart`).
   */
  wake(): boolean {
    if (this.#deps.options.advisory || this.#deps.acting?.() === false || this.#stop.signal.aborted) return false;
    const empty = this.pools.filter((pool) => this.#pools[pool]?.desired === 0);
    for (const pool of empty) this.#cold.add(pool);
    if (empty.length > 0 && !this.#waking) this.#wakeUp(empty);
    return this.#cold.size > 0;
  }

  #wakeUp(empty: readonly PoolName[]): void {
    const now = this.#deps.clock.now();
    this.#waking = (async () => {
      for (const pool of empty) {
        await this.#apply({
          atMs: now,
          loop: "load",
          pool,
          from: 0,
          to: Math.max(1, this.#floors.get(pool) ?? 0),
          action: "up",
          reason: "a request arrived at a pool scaled to zero",
          applied: false,
        });
      }
    })().finally(() => {
      this.#waking = undefined;
    });
  }

  /** One throughput-loop decision: observe the interval, predict the next, size the pools (their floors). */
  async throughputTick(): Promise<ReplicaPlan | undefined> {
    const { clock, signals, options } = this.#deps;
    const now = clock.now();
    this.#observed = signals.takeInterval(now);
    const periodBefore = this.#forecaster.recurringPeriod?.readings;
    this.#forecaster.observe(this.#observed);
    this.#predicted = this.#forecaster.forecast();
    this.#reportPeriod(periodBefore);
    this.#metrics?.predicted(this.#deps.model ?? "", this.#predicted);
    this.#metrics?.recurringPeriod(this.#deps.model ?? "", this.#recurringPeriod()?.seconds);
    if (!options.profile) return undefined;
    const plan = calculateReplicas(this.#predicted, options.profile, options);
    this.#plan = plan;
    const floors: Array<[PoolName, number]> =
      plan.layout === "disaggregated"
        ? [
            ["prefill", plan.prefillWorkers],
            ["decode", plan.decodeWorkers],
          ]
        : [["aggregated", plan.workers]];
    for (const [pool, floor] of floors) {
      this.#floors.set(pool, floor);
      const count = await this.#deps.connector.replicas(pool as WorkerRole);
      this.#remember(pool, count.desired, count.ready);
      // Below its floor a pool is raised at once; above it, the load loop brings it down step by step.
      if (count.desired < floor) {
        await this.#apply({
          atMs: now,
          loop: "throughput",
          pool,
          from: count.desired,
          to: floor,
          action: "floor",
          reason: plan.reason,
          applied: false,
        });
      }
    }
    return plan;
  }

  state(): PlannerState {
    const o = this.#deps.options;
    return {
      ...(this.#deps.model === undefined ? {} : { model: this.#deps.model }),
      mode: o.mode,
      layout: o.layout,
      advisory: o.advisory,
      sloTtftMs: o.sloTtftMs,
      sloItlMs: o.sloItlMs,
      minWorkers: o.minWorkers,
      maxWorkers: o.maxWorkers,
      pools: structuredClone(this.#pools),
      observed: this.#observed,
      predicted: this.#predicted,
      recurringPeriod: this.#recurringPeriod(),
      plan: this.#plan,
      decisions: [...this.#decisions],
    };
  }

  #recurringPeriod(): PlannerState["recurringPeriod"] {
    const period = this.#forecaster.recurringPeriod;
    if (period === undefined) return undefined;
    return { seconds: period.readings * this.#deps.options.intervalSeconds, correlation: period.correlation };
  }

  /** Logs a period found, changed or lost: a floor raised ahead of a burst should not be a surprise. */
  #reportPeriod(readingsBefore: number | undefined): void {
    if (this.#forecaster.recurringPeriod?.readings === readingsBefore) return;
    const period = this.#recurringPeriod();
    if (period === undefined) {
      this.#deps.logger.info("planner: the request rate no longer repeats; no recurring peak is provisioned ahead");
    } else {
      this.#deps.logger.info(
        { periodSeconds: period.seconds, correlation: Number(period.correlation.toFixed(3)) },
        `planner: the request rate repeats every ${period.seconds} s; its recurring peaks are provisioned an interval ahead`,
      );
    }
  }

  /** Stops the loops; a decision being applied finishes first. */
  async close(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled([...this.#running, this.#waking]);
  }

  async #apply(given: PlannerDecisionRecord): Promise<void> {
    const change = given.to !== given.from;
    const standby = change && this.#deps.acting?.() === false;
    const record = standby ? { ...given, reason: `${given.reason}; standby: another planner acts` } : given;
    let applied = false;
    if (change && !this.#deps.options.advisory && !standby) {
      try {
        await this.#deps.connector.scale(record.pool as WorkerRole, record.to);
        applied = true;
      } catch (error) {
        this.#deps.logger.warn(
          { pool: record.pool, to: record.to, err: (error as Error).message },
          "the planner's scaling failed",
        );
      }
    }
    const done = { ...record, applied };
    this.#metrics?.decision(this.#deps.model ?? "", done);
    if (change) {
      this.#remember(record.pool, applied ? record.to : record.from, this.#pools[record.pool]?.ready ?? 0);
      this.#decisions.push(done);
      if (this.#decisions.length > KEPT_DECISIONS) this.#decisions.shift();
      this.#deps.logger.info({ ...done, observed: this.#observed, predicted: this.#predicted }, "planner decision");
    }
    this.#deps.onDecision?.(done);
  }

  #remember(pool: PoolName, desired: number, ready: number): void {
    if (ready > 0) this.#cold.delete(pool);
    this.#pools[pool] = { desired, ready, floor: this.#floors.get(pool) ?? 0 };
    this.#metrics?.replicas(this.#deps.model ?? "", pool, desired, ready);
  }

  async #every(periodMs: number, tick: () => Promise<unknown>): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        await this.#deps.clock.sleep(periodMs, signal);
        await tick();
      } catch (error) {
        if (signal.aborted) return;
        this.#deps.logger.warn({ err: (error as Error).message }, "a planner tick failed");
      }
    }
  }
}

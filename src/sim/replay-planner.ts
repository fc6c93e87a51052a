import type { RunningRequestListener } from "../frontend/index.js";
import { silentLogger } from "../observability/index.js";
import {
  type CompiledPlannerOptions,
  LiveLatency,
  Planner,
  type PlannerDecisionRecord,
  TrafficWindow,
  VirtualConnector,
} from "../planner/index.js";
import type { WorkerRole } from "../protocol/index.js";
import type { ReplayControl, ReplayOptions } from "./replay.js";
import type { FinishedReplayRequest } from "./replay-client.js";

/** What a replay with a planner reports beyond the usual figures. */
export interface PlannerReplayReport {
  /** Integral of workers (starting, running and draining: they all hold a GPU) over virtual time. */
  readonly worker_seconds: number;
  /** Share of the trace's requests that completed within both the TTFT and the ITL target. */
  readonly slo_attainment: number;
  /** Most workers alive at once. */
  readonly max_workers_used: number;
  /** Every decision that changed a pool, in order. */
  readonly decisions: readonly PlannerDecisionRecord[];
  /** Workers alive over virtual time: [seconds, count] at each change. */
  readonly workers_over_time: ReadonlyArray<readonly [number, number]>;
}

/**
 * Runs the real planner inside a replay: its virtual connector adds and drains the replay fleet's
 * mocker workers on the virtual clock (a new worker takes `startupMs` to take requests), and its
 * traffic window and live latencies read the requests the replay runs. Spread `hooks` into
 * `replay`'s options, then read `report()`.
 */
export class ReplayPlanner {
  readonly #options: CompiledPlannerOptions;
  readonly #startupMs: number;
  readonly #initial: Readonly<Partial<Record<WorkerRole, number>>>;
  readonly #decisions: PlannerDecisionRecord[] = [];
  readonly #timeline: Array<[number, number]> = [];
  #traffic: TrafficWindow | undefined;
  readonly #live: LiveLatency;
  #planner: Planner | undefined;
  #now: () => number = () => 0;
  #alive = 0;
  #aliveSince = 0;
  #workerMs = 0;
  #maxAlive = 0;
  #met = 0;

  /** `initial`: the workers per role the replay starts with (they count from time 0). */
  constructor(options: CompiledPlannerOptions, initial: Readonly<Partial<Record<WorkerRole, number>>>, startupMs = 30_000) {
    this.#options = options;
    this.#initial = initial;
    this.#startupMs = startupMs;
    // Made here, not when the control starts: a trace's first request may arrive at its first instant.
    this.#live = new LiveLatency(6 * options.loadIntervalSeconds * 1000, options.latencyQuantile);
  }

  /** The replay's `control`: runs the planner until the replay ends. */
  readonly control = async ({ fleet, clock, signal }: ReplayControl): Promise<void> => {
    this.#now = () => clock.now();
    this.#traffic = new TrafficWindow(clock.now());
    const live = this.#live;
    this.#change(Object.values(this.#initial).reduce((a, b) => a + (b ?? 0), 0));
    const roles = (Object.keys(this.#initial) as WorkerRole[]).filter((r) => (this.#initial[r] ?? 0) > 0);
    const connector = await VirtualConnector.create({
      clock,
      roles,
      // The fleet models the start-up; the connector counts a worker as starting until it is in.
      startupDelayMs: 0,
      initialWorkers: Object.fromEntries(roles.map((role) => [role, fleet.workers(role)])),
      workers: {
        addWorker: async (role) => {
          this.#change(1);
          try {
            return await fleet.addWorker(role, { startupMs: this.#startupMs });
          } catch (error) {
            this.#change(-1);
            throw error;
          }
        },
        drainWorker: (role, id) => fleet.drainWorker(role, id),
        removeWorker: async (role, id) => {
          await fleet.removeWorker(role, id);
          live.forget(id);
          this.#change(-1);
        },
      },
    });
    const traffic = this.#traffic;
    const planner = Planner.start({
      options: this.#options,
      clock,
      connector,
      logger: silentLogger,
      signals: {
        idleMs: (now) => live.idleMs(now, 0),
        takeInterval: (now) => traffic.takeInterval(now),
        estimates: (pool) =>
          live.estimates(clock.now(), pool === "aggregated" ? roles.flatMap((r) => fleet.workers(r)) : fleet.workers(pool)),
      },
      onDecision: (d) => {
        if (d.to !== d.from) this.#decisions.push(d);
      },
    });
    this.#planner = planner;
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await planner.close();
    await connector.close();
  };

  /** What `replay` takes from the planner: spread it into the replay's options. */
  get hooks(): Pick<ReplayOptions, "control" | "onRequestFinished" | "onRequestStarted" | "keptModels"> {
    return {
      control: this.control,
      onRequestFinished: this.onRequestFinished,
      onRequestStarted: this.onRequestStarted,
      // With --min-workers 0 the replay's model stays served while its pool is scaled to zero.
      keptModels: this.#options.minWorkers === 0 ? ["replay"] : [],
    };
  }

  /** The replay's `onRequestStarted`: the load loop's live latencies, per worker. */
  readonly onRequestStarted = (nowMs: number): RunningRequestListener => {
    this.#traffic?.arrived();
    // A pool scaled to zero gets its worker now; the request waits for it at the router.
    return this.#live.begin(nowMs, this.#planner?.wake() ?? false);
  };

  /** The replay's `onRequestFinished`. */
  readonly onRequestFinished = (request: FinishedReplayRequest): void => {
    this.#traffic?.record(this.#now(), request);
    const ttftOk = request.ttftMs === undefined || request.ttftMs <= this.#options.sloTtftMs;
    const itlOk = request.itlMs === undefined || request.itlMs <= this.#options.sloItlMs;
    if (ttftOk && itlOk) this.#met++;
  };

  /** The figures, with workers counted up to `endMs` (the replay's end), for a trace of `requests`. */
  report(endMs: number, requests: number): PlannerReplayReport {
    const workerMs = this.#workerMs + this.#alive * Math.max(0, endMs - this.#aliveSince);
    return {
      worker_seconds: workerMs / 1000,
      // Requests refused or never completed missed their targets too.
      slo_attainment: requests > 0 ? this.#met / requests : 0,
      max_workers_used: this.#maxAlive,
      decisions: [...this.#decisions],
      workers_over_time: [...this.#timeline],
    };
  }

  #change(delta: number): void {
    const now = this.#now();
    this.#workerMs += this.#alive * (now - this.#aliveSince);
    this.#alive += delta;
    this.#aliveSince = now;
    this.#maxAlive = Math.max(this.#maxAlive, this.#alive);
    this.#timeline.push([now / 1000, this.#alive]);
  }
}

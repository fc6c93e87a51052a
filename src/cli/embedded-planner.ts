import type { FinishedRequestTimings, RunningRequestListener } from "../frontend/index.js";
import type { Logger, MetricMeter } from "../observability/index.js";
import {
  type CompiledPlannerOptions,
  compilePlannerOptions,
  LiveLatency,
  Planner,
  type PlannerSignals,
  TrafficWindow,
  VirtualConnector,
} from "../planner/index.js";
import type { WorkerRole } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import type { WorkerHost } from "../worker/index.js";
import type { ServeOptions } from "./serve-options.js";
import type { StartedWorkers } from "./started-workers.js";

/** The planners sizing the workers of one process, one per model, and what the frontend gives them and shows of them. */
export interface EmbeddedPlanner {
  /** Each model's planner, by model name. */
  readonly planners: ReadonlyMap<string, Planner>;
  /** The frontend's hooks: `GET /v1/planner` and the started and finished requests the planners read. */
  readonly hooks: {
    readonly plannerState: () => unknown;
    readonly onRequestFinished: (request: FinishedRequestTimings) => void;
    readonly onRequestStarted: (startedAt: number, model: string) => RunningRequestListener;
    /** With `--min-workers 0`: the models, kept served while their pools are scaled to zero. */
    readonly keptModels: readonly string[];
  };
  /** Workers the planners started (and have not drained). */
  readonly added: () => readonly WorkerHost[];
  /** Stops the planners; workers they started stay for the deployment to close. */
  close(): Promise<void>;
}

/** One model's planner and what feeds it. */
interface ModelPlanner {
  readonly planner: Planner;
  readonly traffic: TrafficWindow;
  readonly live: LiveLatency;
  readonly added: Map<string, WorkerHost>;
  close(): Promise<void>;
}

/** What a request that is no model's (refused before its model was known) tells a planner: nothing. */
const UNPLANNED: RunningRequestListener = { routed: () => {}, tokens: () => {}, end: () => {} };

/**
 * The planners of `armature serve --planner load|sla`, one per `--model`, each sizing its model's
 * pools between `--min-workers` and `--max-workers` on its own traffic: its workers are engines in
 * this process, so a scale-up starts one more worker of the model with the serve flags and a
 * scale-down closes one (it drains: takes no new requests, finishes its own). The load loop judges
 * each worker's TTFT and ITL: of the requests finished on it in its last six periods and of those
 * running now, a request still waiting counting with its age (`LiveLatency`); an idle model reads
 * as zero, so it shrinks to `--min-workers`.
 */
export async function startEmbeddedPlanner(
  options: ServeOptions,
  runtime: Runtime,
  logger: Logger,
  meter: MetricMeter,
  started: StartedWorkers,
): Promise<EmbeddedPlanner | undefined> {
  if (!options.planner) return undefined;
  const disaggregated = options.prefillWorkers > 0;
  const compiled = compilePlannerOptions({ ...options.planner, layout: disaggregated ? "disaggregated" : "aggregated" });
  const byModel = new Map<string, ModelPlanner>();
  try {
    for (const model of started.modelNames) {
      byModel.set(model, await startModelPlanner(model, compiled, disaggregated, runtime, logger, meter, started));
    }
  } catch (error) {
    await Promise.all([...byModel.values()].map((p) => p.close()));
    throw error;
  }
  const clock = runtime.clock;
  const planners = new Map([...byModel].map(([model, p]) => [model, p.planner]));
  return {
    planners,
    hooks: {
      // One model: its planner's state, as it always was; several: each model's, by name.
      plannerState: () =>
        planners.size === 1
          ? [...planners.values()][0]?.state()
          : { models: Object.fromEntries([...planners].map(([model, p]) => [model, p.state()])) },
      onRequestStarted: (at, model) => {
        const p = byModel.get(model);
        if (!p) return UNPLANNED;
        p.traffic.arrived();
        // A pool scaled to zero gets its worker now; the request waits for it at the router.
        return p.live.begin(at, p.planner.wake());
      },
      keptModels: compiled.minWorkers === 0 ? started.modelNames : [],
      onRequestFinished: (request) => {
        if (request.status !== "success") return;
        byModel.get(request.model)?.traffic.record(clock.now(), {
          inputTokens: request.inputTokens ?? 0,
          outputTokens: request.outputTokens ?? 0,
          cachedTokens: request.cachedTokens ?? 0,
          ttftMs: request.ttftMs,
          itlMs: request.itlMs,
        });
      },
    },
    added: () => [...byModel.values()].flatMap((p) => [...p.added.values()]),
    async close() {
      await Promise.all([...byModel.values()].map((p) => p.close()));
    },
  };
}

async function startModelPlanner(
  model: string,
  compiled: CompiledPlannerOptions,
  disaggregated: boolean,
  runtime: Runtime,
  logger: Logger,
  meter: MetricMeter,
  started: StartedWorkers,
): Promise<ModelPlanner> {
  const own = started.workers.filter((w) => w.card.name === model);
  const roles: WorkerRole[] = disaggregated ? ["prefill", "decode"] : [own[0]?.card.role ?? "aggregated"];
  const hosts = new Map<string, WorkerHost>(own.map((w) => [w.id, w]));
  const added = new Map<string, WorkerHost>();
  const clock = runtime.clock;
  const log = logger.child({ component: "planner", model });
  const connector = await VirtualConnector.create({
    clock,
    roles,
    startupDelayMs: 0,
    initialWorkers: Object.fromEntries(roles.map((role) => [role, own.filter((w) => w.card.role === role).map((w) => w.id)])),
    workers: {
      addWorker: async (role) => {
        const host = await started.addWorker(role, model);
        hosts.set(host.id, host);
        added.set(host.id, host);
        return host.id;
      },
      drainWorker: async (_role, id) => {
        await hosts.get(id)?.close();
      },
      removeWorker: (_role, id) => {
        hosts.delete(id);
        added.delete(id);
        live.forget(id);
      },
    },
    onError: (error, role) => log.warn({ err: (error as Error).message, role }, "the planner could not change a worker"),
  });
  const traffic = new TrafficWindow(clock.now());
  // Per worker: the requests finished in the last six load-loop periods (30 s at the default 5 s)
  // and those running now, queue time included.
  const live = new LiveLatency(6 * compiled.loadIntervalSeconds * 1000, compiled.latencyQuantile);
  const poolWorkers = (pool: string): string[] =>
    [...hosts.values()].filter((h) => pool === "aggregated" || h.card.role === pool).map((h) => h.id);
  const startedAt = clock.now();
  const signals: PlannerSignals = {
    takeInterval: (now) => traffic.takeInterval(now),
    estimates: (pool) => live.estimates(clock.now(), poolWorkers(pool)),
    idleMs: (now) => live.idleMs(now, startedAt),
  };
  const planner = Planner.start({ options: compiled, clock, connector, signals, meter, model, logger: log });
  return {
    planner,
    traffic,
    live,
    added,
    async close() {
      await planner.close();
      await connector.close();
    },
  };
}

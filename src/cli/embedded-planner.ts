import type { FinishedRequestTimings, RunningRequestListener } from "../frontend/index.js";
import type { Logger, MetricMeter } from "../observability/index.js";
import {
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
import type { StartedWorkers } from "./start-workers.js";

/** A planner sizing the workers of one process, and what the frontend gives it and shows of it. */
export interface EmbeddedPlanner {
  readonly planner: Planner;
  /** The frontend's hooks: `GET /v1/planner` and the finished requests the planner reads. */
  readonly hooks: {
    readonly plannerState: () => unknown;
    readonly onRequestFinished: (request: FinishedRequestTimings) => void;
    readonly onRequestStarted: (startedAt: number) => RunningRequestListener;
    /** With `--min-workers 0`: the model, kept served while its pool is scaled to zero. */
    readonly keptModels: readonly string[];
  };
  /** Workers the planner started (and has not drained). */
  readonly added: () => readonly WorkerHost[];
  /** Stops the planner; workers it started stay for the deployment to close. */
  close(): Promise<void>;
}

/**
 * The planner of `armature serve --planner load|sla`: its workers are engines in this process, so a
 * scale-up starts one more worker with the serve flags and a scale-down closes one (it drains:
 * takes no new requests, finishes its own). The load loop judges each worker's TTFT and ITL: of
 * the requests finished on it in its last six periods and of those running now, a request still
 * waiting counting with its age (`LiveLatency`); an idle deployment reads as zero, so it shrinks to
 * `--min-workers`.
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
  const roles: WorkerRole[] = disaggregated ? ["prefill", "decode"] : [started.workers[0]?.card.role ?? "aggregated"];
  const hosts = new Map<string, WorkerHost>(started.workers.map((w) => [w.id, w]));
  const added = new Map<string, WorkerHost>();
  const clock = runtime.clock;
  const connector = await VirtualConnector.create({
    clock,
    roles,
    startupDelayMs: 0,
    initialWorkers: Object.fromEntries(
      roles.map((role) => [role, started.workers.filter((w) => w.card.role === role).map((w) => w.id)]),
    ),
    workers: {
      addWorker: async (role) => {
        const host = await started.addWorker(role);
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
    onError: (error, role) => logger.warn({ err: (error as Error).message, role }, "the planner could not change a worker"),
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
  const planner = Planner.start({
    options: compiled,
    clock,
    connector,
    signals,
    meter,
    logger: logger.child({ component: "planner" }),
  });
  return {
    planner,
    hooks: {
      plannerState: () => planner.state(),
      onRequestStarted: (at) => {
        // A pool scaled to zero gets its worker now; the request waits for it at the router.
        return live.begin(at, planner.wake());
      },
      keptModels: compiled.minWorkers === 0 ? started.modelNames : [],
      onRequestFinished: (request) => {
        if (request.status !== "success") return;
        traffic.record(clock.now(), {
          inputTokens: request.inputTokens ?? 0,
          outputTokens: request.outputTokens ?? 0,
          cachedTokens: request.cachedTokens ?? 0,
          ttftMs: request.ttftMs,
          itlMs: request.itlMs,
        });
      },
    },
    added: () => [...added.values()],
    async close() {
      await planner.close();
      await connector.close();
    },
  };
}

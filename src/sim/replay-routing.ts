import type { MetricMeter } from "../observability/index.js";
import { silentLogger } from "../observability/index.js";
import {
  ActiveLoad,
  ApproximateIndex,
  type BusyThresholds,
  createBasicPolicy,
  disaggregationMetrics,
  KvIndexer,
  type KvIndexView,
  kvPolicy,
  type PrefillOutcome,
  PrefillStage,
  Router,
  type RoutingPolicy,
  randomPolicy,
  routerOverheadMetrics,
  WorkerSet,
} from "../router/index.js";
import type { Runtime } from "../runtime/index.js";

export type ReplayPolicy = "kv" | "kv-approx" | "round-robin" | "random" | "least-loaded";

export interface ReplayRoutingOptions {
  readonly runtime: Runtime;
  /** `kv`: the KV index fed by the workers' KV events; `kv-approx`: the index of the router's own decisions. */
  readonly policy: ReplayPolicy;
  readonly blockSize: number;
  /** Every random choice of the policies (the seeded generator). */
  readonly random: () => number;
  readonly overlapWeight?: number | undefined;
  readonly lowerTierWeight?: number | undefined;
  readonly busy?: BusyThresholds | undefined;
  readonly disaggThreshold?: number | undefined;
  readonly maxPrefillQueue?: number | undefined;
  /** Where the router's overhead and disaggregation metrics go, as in `armature serve`. */
  readonly meter?: MetricMeter | undefined;
  /** Hears where each request's prefill ran. */
  readonly onPrefillOutcome?: ((outcome: PrefillOutcome) => void) | undefined;
}

/** The router a replay's requests go through, and what stops it. */
export interface ReplayRouting {
  readonly router: Router;
  close(): void;
}

/**
 * The frontend's routing, built as `armature serve` builds it (`startFrontend`): one worker set,
 * one booked load and one KV index for two routers, the prefill pool's behind a `PrefillStage` in
 * front of the decode (or aggregated) pool's, each with its own instance of the policy. Only the
 * random generator differs: seeded, so a replay repeats.
 */
export function startReplayRouting(options: ReplayRoutingOptions): ReplayRouting {
  const { runtime, blockSize, random } = options;
  const logger = silentLogger;
  const activeLoad = new ActiveLoad({ routerId: "replay", clock: runtime.clock, invalidMessages: runtime.invalidMessages });
  const indexer = options.policy === "kv" ? new KvIndexer({ runtime, logger, blockSize }) : undefined;
  const index: KvIndexView | undefined =
    indexer ?? (options.policy === "kv-approx" ? new ApproximateIndex({ clock: runtime.clock, blockSize }) : undefined);
  const onOverhead = options.meter ? routerOverheadMetrics(options.meter) : undefined;
  const makePolicy = (): RoutingPolicy => {
    if (index) {
      return kvPolicy({
        indexer: index,
        blockSize,
        activeLoad,
        onOverhead,
        random,
        overlapWeight: options.overlapWeight,
        lowerTierWeight: options.lowerTierWeight,
      });
    }
    if (options.policy === "random") return randomPolicy(random);
    return createBasicPolicy(options.policy as "round-robin" | "least-loaded");
  };
  const busy = options.busy ?? {};
  const workers = new WorkerSet(runtime, logger);
  const prefillRouter = new Router({ runtime, policy: makePolicy(), logger, activeLoad, busy, roles: ["prefill"], workers });
  const metrics = options.meter ? disaggregationMetrics(options.meter) : undefined;
  const prefill = new PrefillStage({
    router: prefillRouter,
    thresholdTokens: options.disaggThreshold,
    maxPrefillQueue: options.maxPrefillQueue,
    index,
    blockSize,
    onOutcome: (outcome) => {
      metrics?.onOutcome(outcome);
      options.onPrefillOutcome?.(outcome);
    },
    onDecodeEnd: metrics?.onDecodeEnd,
  });
  const router = new Router({ runtime, policy: makePolicy(), logger, activeLoad, busy, prefill, workers });
  return {
    router,
    close() {
      router.close();
      prefillRouter.close();
      workers.close();
      indexer?.close();
      activeLoad.close();
    },
  };
}

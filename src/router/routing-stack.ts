import type { Logger, MetricMeter } from "../observability/index.js";
import type { Runtime } from "../runtime/index.js";
import { ActiveLoad } from "./active-load.js";
import { disaggregationMetrics } from "./disaggregation-metrics.js";
import { ApproximateIndex } from "./kv-index/approximate-index.js";
import { KvIndexer } from "./kv-index/kv-indexer.js";
import { type KvIndexView, kvPolicy } from "./kv-policy.js";
import type { RoutingPolicy } from "./policy.js";
import { type PrefillOutcome, PrefillStage } from "./prefill-stage.js";
import type { RemoteSelector } from "./remote-selector.js";
import { type BusyThresholds, Router } from "./router.js";
import { routerOverheadMetrics, routerQueueMetrics } from "./router-metrics.js";
import { WorkerSet } from "./worker-set.js";

export interface RoutingStackOptions {
  readonly runtime: Runtime;
  readonly logger: Logger;
  /** This router among others: its bookings carry it. */
  readonly routerId: string;
  /** Share bookings with other router replicas over the event plane (not needed in one process). */
  readonly shareLoad?: boolean;
  /**
   * What the KV policy reads: the index of the workers' KV events (`events`), the index of this
   * router's own decisions (`approximate`); undefined: no KV routing, `basicPolicy` routes.
   */
  readonly index: "events" | "approximate" | undefined;
  readonly blockSize: number;
  /** The policy without an index (round-robin, random, least-loaded), one made per pool. */
  readonly basicPolicy: () => RoutingPolicy;
  /** The KV policy's random choices (a replay seeds them). Default `Math.random`. */
  readonly random?: (() => number) | undefined;
  readonly overlapWeight?: number | undefined;
  /** What a worker's lead (blocks no other worker holds) counts, in overlap weights. Default the policy's. */
  readonly exclusiveFactor?: number | undefined;
  /** The KV policy samples a softmax over its costs above 0 (Dynamo's `router_temperature`). Default 0. */
  readonly temperature?: number | undefined;
  readonly lowerTierWeight?: number | undefined;
  readonly busy?: BusyThresholds | undefined;
  /** A router service to ask first (`--router remote`). */
  readonly remote?: RemoteSelector | undefined;
  /** Models served while no worker of theirs is up (a pool scaled to zero): requests wait for one. */
  readonly keptModels?: readonly string[] | undefined;
  readonly disaggThreshold?: number | undefined;
  readonly maxPrefillQueue?: number | undefined;
  readonly maxTransferMs?: number | undefined;
  /** Where the router's overhead, queue and disaggregation metrics go. */
  readonly meter?: MetricMeter | undefined;
  /** Hears where each request's prefill ran. */
  readonly onPrefillOutcome?: ((outcome: PrefillOutcome) => void) | undefined;
}

/** The routing of a frontend or a replay, and what stops it. */
export interface RoutingStack {
  readonly router: Router;
  /** The index of the workers' KV events, when the policy reads one. */
  readonly indexer: KvIndexer | undefined;
  /** Settles once the index holds the workers' kept KV events (route only then). */
  readonly ready: Promise<void>;
  close(): void;
}

/**
 * The routing `armature serve`, `armature frontend` and `armature replay` all run (decision
 * 0012): one worker set, one booked load and one KV index for two routers, the prefill pool's
 * behind a `PrefillStage` in front of the decode (or aggregated) pool's, each with its own
 * instance of the policy. The prefill pool stays idle until prefill workers register; then
 * requests split, as in Dynamo.
 */
export function startRoutingStack(options: RoutingStackOptions): RoutingStack {
  const { runtime, logger, blockSize } = options;
  const activeLoad = new ActiveLoad({
    routerId: options.routerId,
    clock: runtime.clock,
    events: options.shareLoad ? runtime.events : undefined,
    invalidMessages: runtime.invalidMessages,
  });
  const indexer = options.index === "events" ? new KvIndexer({ runtime, logger, blockSize }) : undefined;
  const index: KvIndexView | undefined =
    indexer ?? (options.index === "approximate" ? new ApproximateIndex({ clock: runtime.clock, blockSize }) : undefined);
  const onOverhead = options.meter ? routerOverheadMetrics(options.meter) : undefined;
  // One policy per pool; the KV ones share the index and the booked load.
  const makePolicy = (): RoutingPolicy =>
    index
      ? kvPolicy({
          indexer: index,
          blockSize,
          activeLoad,
          onOverhead,
          ...(options.random ? { random: options.random } : {}),
          overlapWeight: options.overlapWeight,
          exclusiveFactor: options.exclusiveFactor,
          temperature: options.temperature,
          lowerTierWeight: options.lowerTierWeight,
        })
      : options.basicPolicy();
  const busy = options.busy ?? {};
  const { remote } = options;
  const workers = new WorkerSet(runtime, logger);
  for (const model of options.keptModels ?? []) workers.keep(model);
  const prefillRouter = new Router({
    runtime,
    policy: makePolicy(),
    logger,
    activeLoad,
    busy,
    roles: ["prefill"],
    remote,
    workers,
  });
  const metrics = options.meter ? disaggregationMetrics(options.meter) : undefined;
  const prefill = new PrefillStage({
    router: prefillRouter,
    thresholdTokens: options.disaggThreshold,
    maxPrefillQueue: options.maxPrefillQueue,
    maxTransferMs: options.maxTransferMs,
    index,
    blockSize,
    onOutcome: (outcome) => {
      metrics?.onOutcome(outcome);
      options.onPrefillOutcome?.(outcome);
    },
    onDecodeEnd: metrics?.onDecodeEnd,
    onFailure: (error) => logger.warn({ err: error }, "prefill failed; the decode worker prefills this request"),
  });
  const onShed = options.meter ? routerQueueMetrics(options.meter) : undefined;
  const router = new Router({ runtime, policy: makePolicy(), logger, activeLoad, busy, prefill, remote, workers, onShed });
  return {
    router,
    indexer,
    ready: indexer?.ready ?? Promise.resolve(),
    close() {
      router.close();
      prefillRouter.close();
      workers.close();
      indexer?.close();
      activeLoad.close();
    },
  };
}

import type { MetricMeter } from "../observability/index.js";
import { silentLogger } from "../observability/index.js";
import {
  type BusyThresholds,
  createBasicPolicy,
  type PrefillOutcome,
  type Router,
  randomPolicy,
  startRoutingStack,
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
 * The frontend's routing, the stack `armature serve` runs (`startRoutingStack`). Only the random
 * generator differs: seeded, so a replay repeats.
 */
export function startReplayRouting(options: ReplayRoutingOptions): ReplayRouting {
  const { router, close } = startRoutingStack({
    runtime: options.runtime,
    logger: silentLogger,
    routerId: "replay",
    index: options.policy === "kv" ? "events" : options.policy === "kv-approx" ? "approximate" : undefined,
    blockSize: options.blockSize,
    basicPolicy: () =>
      options.policy === "random"
        ? randomPolicy(options.random)
        : createBasicPolicy(options.policy as "round-robin" | "least-loaded"),
    random: options.random,
    overlapWeight: options.overlapWeight,
    lowerTierWeight: options.lowerTierWeight,
    busy: options.busy,
    disaggThreshold: options.disaggThreshold,
    maxPrefillQueue: options.maxPrefillQueue,
    meter: options.meter,
    onPrefillOutcome: options.onPrefillOutcome,
  });
  return { router, close };
}

import { silentLogger } from "../observability/index.js";
import { createBasicPolicy, type Router, type RoutingStackOptions, randomPolicy, startRoutingStack } from "../router/index.js";

export type ReplayPolicy = "kv" | "kv-approx" | "round-robin" | "random" | "least-loaded";

/** The stack's settings a replay takes, with its policy by name and its seeded generator. */
export type ReplayRoutingOptions = Pick<
  RoutingStackOptions,
  | "runtime"
  | "blockSize"
  | "overlapWeight"
  | "exclusiveFactor"
  | "temperature"
  | "lowerTierWeight"
  | "busy"
  | "disaggThreshold"
  | "maxPrefillQueue"
  | "meter"
  | "onPrefillOutcome"
> & {
  /** `kv`: the KV index fed by the workers' KV events; `kv-approx`: the index of the router's own decisions. */
  readonly policy: ReplayPolicy;
  /** Every random choice of the policies (the seeded generator). */
  readonly random: () => number;
};

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
    exclusiveFactor: options.exclusiveFactor,
    temperature: options.temperature,
    lowerTierWeight: options.lowerTierWeight,
    busy: options.busy,
    disaggThreshold: options.disaggThreshold,
    maxPrefillQueue: options.maxPrefillQueue,
    meter: options.meter,
    onPrefillOutcome: options.onPrefillOutcome,
  });
  return { router, close };
}

import { onboardingSaving } from "../protocol/index.js";
import type { LowerTierBlocks } from "./kv-index/radix-tree.js";
import type { WorkerView } from "./worker-view.js";

const STORAGE_TIER = { host: "host_pinned", disk: "disk", external: "external" } as const;

/**
 * The share of a block's prefill that loading it back from `tier` saves on `worker`, from the
 * rates the worker measured (seed 000's expected TTFT over tiers): recomputing a token takes
 * 1 / prefill tokens per second, loading it back its KV bytes over the tier's onboarding
 * bandwidth, so the saving is 1 − bytesPerToken × tokensPerSecond / bytesPerSecond, clamped to
 * [0, 1]. Without measurements (or a card without KV bytes per token), `fallback`
 * (`--lower-tier-weight`).
 */
export function tierSaving(worker: WorkerView, tier: keyof LowerTierBlocks, fallback: number): number {
  return onboardingSaving(worker.published?.kvCosts, STORAGE_TIER[tier], worker.card.kvBytesPerToken) ?? fallback;
}

/** Blocks of prefill that a worker's lower-tier blocks save, each tier at its own saving. */
export function lowerTierSavedBlocks(worker: WorkerView, blocks: LowerTierBlocks, fallback: number): number {
  return (
    blocks.host * tierSaving(worker, "host", fallback) +
    blocks.disk * tierSaving(worker, "disk", fallback) +
    blocks.external * tierSaving(worker, "external", fallback)
  );
}

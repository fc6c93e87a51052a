import { type KvCosts, ONBOARD_TIER, type OnboardTier, onboardingSaving } from "../../protocol/index.js";
import type { LowerTierName, TierCounts } from "./lower-tiers.js";
import type { TimingModel } from "./timing-model.js";

/**
 * The mocker's `KvCosts`, from its model rather than measured: prefill tokens per second of a
 * full batch (`maxBatchedTokens` over its modelled step), and each present tier's onboarding
 * bandwidth (GB/s), both at the engine's speed-up.
 */
export function modelledKvCosts(
  timing: TimingModel,
  maxBatchedTokens: number,
  gbps: Readonly<TierCounts>,
  present: Readonly<Record<LowerTierName, boolean>>,
  speedupRatio: number,
): KvCosts {
  const onboardBytesPerSecond: Partial<Record<OnboardTier, number>> = {};
  for (const tier of Object.keys(ONBOARD_TIER) as LowerTierName[]) {
    if (present[tier]) onboardBytesPerSecond[ONBOARD_TIER[tier]] = gbps[tier] * 1e9 * speedupRatio;
  }
  return { prefillTokensPerSecond: (maxBatchedTokens / timing.prefillMs(maxBatchedTokens)) * 1000, onboardBytesPerSecond };
}

/** Whether loading a block back from `tier` is faster than recomputing it (the router's estimate above 0). */
export function onboardingPays(costs: KvCosts, tier: LowerTierName, kvBytesPerToken: number): boolean {
  return (onboardingSaving(costs, ONBOARD_TIER[tier], kvBytesPerToken) ?? 1) > 0;
}

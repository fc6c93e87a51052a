export { KvBlockManager, type OffloadPlan, type OnboardedPrefix } from "./block-manager.js";
export { BlockPool } from "./block-pool.js";
export { type BlockRecord, decodeBlockRecord, encodeBlockRecord } from "./block-record.js";
export { kvLayoutFingerprint } from "./kv-layout.js";
export { KvbmMetrics } from "./kvbm-metrics.js";
export {
  DEFAULT_DISK_BYTES,
  type KvbmSettings,
  type KvOffloadTiming,
  openKvBlockManager,
  wantsKvbm,
  workerDiskDirectory,
} from "./kvbm-settings.js";
export {
  assembleState,
  cutBlocks,
  cutCells,
  type LayerShape,
  parseSequenceState,
  type SequenceStateLayout,
  type StateShape,
  stateTokens,
} from "./sequence-state.js";
export { cutStateSuffix, parseStateSuffix, type StateSuffix } from "./state-suffix.js";
export { DiskTier } from "./tiers/disk-tier.js";
export { HostTier } from "./tiers/host-tier.js";
export type { KvTier, TierName } from "./tiers/kv-tier.js";
export { ObjectTier } from "./tiers/object-tier.js";

export type { BlockHashes } from "./block-hashing.js";
export { BLOCK_HASH_SEED, chainBlockHash, hashBlocks, localBlockHash, loraSeed } from "./block-hashing.js";
export type { ErrorCode } from "./errors.js";
export { ArmatureError, isArmatureError } from "./errors.js";
export type {
  Disaggregation,
  FinishReason,
  GenerateRequest,
  GenerateResponse,
  KvHandoff,
  RequestEnd,
  ResponseConstraint,
  SamplingOptions,
  TokenDelta,
} from "./generate.js";
export type {
  KvBlockRemoved,
  KvBlockStored,
  KvCacheCleared,
  KvEvent,
  KvEventBatch,
  KvEventsDump,
  KvEventsQuery,
  StorageTier,
  StoredBlock,
  WorkerLoad,
} from "./kv-events.js";
export type { ModelCard, TokenizerSource, WorkerRole } from "./model-card.js";
export type { RouteAnswer, RouteQuery } from "./route-query.js";
export { ROUTER_SERVICE_SUBJECT } from "./route-query.js";
export type { AgentMetadata, BackendName, Medium, TransferDescriptor } from "./transfer-descriptors.js";
export { backendNames } from "./transfer-descriptors.js";

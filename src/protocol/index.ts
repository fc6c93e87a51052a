export type { ActiveSequenceEvent } from "./active-sequences.js";
export type { BlockHashes } from "./block-hashing.js";
export { BLOCK_HASH_SEED, chainBlockHash, hashBlocks, localBlockHash, localBlockHashes, loraSeed } from "./block-hashing.js";
export type { EmbedRequest, EmbedResponse } from "./embed.js";
export {
  decodeEmbedding,
  embedRequestSchema,
  embedResponseSchema,
  encodeEmbedding,
  MAX_EMBED_DIMENSIONS,
  MAX_EMBED_INPUTS,
  MAX_EMBED_TOKENS,
} from "./embed.js";
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
  TokenBiasEntry,
  TokenDelta,
  TokenLogprob,
  WireTraceContext,
} from "./generate.js";
export { PRIORITY_LIMIT } from "./generate.js";
export type {
  KvBlockRemoved,
  KvBlockStored,
  KvCacheCleared,
  KvCosts,
  KvEvent,
  KvEventBatch,
  KvEventsDump,
  KvEventsQuery,
  OnboardTier,
  StorageTier,
  StoredBlock,
  WorkerLoad,
} from "./kv-events.js";
export { ONBOARD_TIER, onboardingSaving } from "./kv-events.js";
export type { LoraAdapterList, LoraAdminRequest } from "./lora-admin.js";
export { loraAdapterListSchema, loraAdminRequestSchema } from "./lora-admin.js";
export {
  activeSequenceEventSchema,
  agentMetadataSchema,
  generateRequestSchema,
  generateResponseSchema,
  instanceRecordSchema,
  kvEventBatchSchema,
  kvEventsDumpSchema,
  kvEventsQuerySchema,
  kvRecoverySchema,
  modelCardSchema,
  routeAnswerSchema,
  routeQuerySchema,
  trafficReportSchema,
  wireTraceContextSchema,
  workerLoadSchema,
} from "./message-schemas.js";
export type { ModelCard, ModelKind, TokenizerSource, WorkerRole } from "./model-card.js";
export type { RankRequest, RankResponse } from "./rank.js";
export { cannotRank, MAX_RANK_DOCUMENTS, MAX_RANK_TOKENS, queryOf, rankRequestSchema, rankResponseSchema } from "./rank.js";
export type { RouteAnswer, RouteQuery } from "./route-query.js";
export type { Schema } from "./schema.js";
export { MessageInvalidError } from "./schema.js";
export { SseLineReader } from "./sse-line-reader.js";
export { subjects } from "./subjects.js";
export type { TokenizerFilePart, TokenizerRequest } from "./tokenizer-transfer.js";
export {
  MAX_TOKENIZER_FILE_BYTES,
  TOKENIZER_PART_BYTES,
  tokenizerFilePartSchema,
  tokenizerRequestSchema,
} from "./tokenizer-transfer.js";
export type { TrafficReport, WorkerLatencySums } from "./traffic-report.js";
export { MAX_REPORTED_WORKERS } from "./traffic-report.js";
export type { AgentMetadata, BackendName, Medium, TransferDescriptor } from "./transfer-descriptors.js";
export { backendNames } from "./transfer-descriptors.js";

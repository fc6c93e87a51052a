export { ByteTokenizer } from "./byte-tokenizer.js";
export {
  type Engine,
  type EngineAdapters,
  type EngineInfo,
  type EngineLoad,
  exportFromToken,
  type GenerateOptions,
  type ImportedKv,
  type KvExport,
  type PrefillOptions,
  type PrefillResult,
  type RankedPair,
} from "./engine.js";
export { EngineServerEngine } from "./engine-server/engine-server-engine.js";
export { engineUrl, getJson, waitHealthy } from "./engine-server/engine-server-http.js";
export { type EngineTokenizer, ggufEngineTokenizer, hfEngineTokenizer } from "./engine-server/engine-tokenizer.js";
export type { LlamaServerEngineOptions } from "./llama-server/llama-server-engine.js";
export { connectLlamaServer } from "./llama-server/llama-server-engine.js";
export type { KvCacheType } from "./llamacpp/llama-context.js";
export type { GpuChoice, LlamaBackend } from "./llamacpp/llama-runtime.js";
export type { LlamaCppEngineOptions } from "./llamacpp/llamacpp-engine.js";
export { LlamaCppEngine } from "./llamacpp/llamacpp-engine.js";
export type { TierCounts } from "./mocker/lower-tiers.js";
export type { MockerEngineOptions } from "./mocker/mocker-engine.js";
export { MockerEngine } from "./mocker/mocker-engine.js";
export type { ObjectTierOptions } from "./mocker/object-tier.js";
export { ObjectTier } from "./mocker/object-tier.js";
export { SCHEDULING_POLICIES, type SchedulingPolicy } from "./mocker/scheduler.js";
export type { TimingModel, TimingProfile } from "./mocker/timing-model.js";
export { loadTimingProfile, polynomialTimingModel, profiledTimingModel } from "./mocker/timing-model.js";
export { SeededRandom } from "./seeded-random.js";
export type { SglangEngineOptions } from "./sglang/sglang-engine.js";
export { connectSglang } from "./sglang/sglang-engine.js";
export {
  defaultCacheDir,
  ensureTinyLora,
  ensureTinyModel,
  ensureTinyRanker,
  writeTinyLora,
  writeTinyModel,
  writeTinyRanker,
} from "./tiny-model/model-cache.js";
export { buildTinyLora, TINY_LORA_WORD } from "./tiny-model/tiny-lora.js";
export { buildTinyModel, CHATML_TEMPLATE } from "./tiny-model/tiny-model.js";
export type { Tokenizer } from "./tokenizer.js";
export {
  bundleHash,
  installedTokenizer,
  installTokenizerBundle,
  processTokenizerBundle,
  readTokenizerBundle,
  type TokenizerBundle,
} from "./tokenizer-bundle.js";
export { loadTokenizer } from "./tokenizer-loader.js";
export type { TrtllmEngineOptions } from "./trtllm/trtllm-engine.js";
export { connectTrtllm } from "./trtllm/trtllm-engine.js";
export type { VllmEngineOptions } from "./vllm/vllm-engine.js";
export { connectVllm } from "./vllm/vllm-engine.js";

import type { KvbmConnectorOptions } from "./kvbm-connector.js";
import type { KvCacheType } from "./llama-context.js";
import type { GpuChoice } from "./llama-runtime.js";

/** How a `LlamaCppEngine` runs its model: the flags of `--engine llamacpp` (docs/engines.md). */
export interface LlamaCppEngineOptions {
  readonly modelPath: string;
  /** Concurrent sequences (continuous batching width). Default 4. */
  readonly sequences?: number;
  /** Tokens per sequence; capped at the model's training context. Default 2048. */
  readonly contextSizePerSequence?: number;
  /** CPU threads per context (`--threads`). Default: `defaultThreads` for `workersInProcess`. */
  readonly threads?: number;
  /** Engines this process runs side by side, sharing its cores (the default threads). Default 1. */
  readonly workersInProcess?: number;
  /** `--gpu`: which llama.cpp build runs (default `auto`). */
  readonly gpu?: GpuChoice;
  /** `--gpu-layers`: layers offloaded to the GPU (default `max` on a GPU). */
  readonly gpuLayers?: number | "max";
  /** `--batch-size`: tokens evaluated in one step at most (default 512, or the context if smaller). */
  readonly batchSize?: number;
  /** `--flash-attention`: `auto` (default) uses it where the model and backend support it. */
  readonly flashAttention?: "auto" | "on" | "off";
  /** `--kv-cache-type`: the element type of the KV cache (default `f16`). */
  readonly kvCacheType?: KvCacheType;
  /** Tokens per KV block for KV events. Default 16. */
  readonly blockSize?: number;
  /** Compiled response-format grammars kept (least recently used dropped first). Default 64. */
  readonly grammarCacheSize?: number;
  /** LoRA adapters served from the start (`--lora NAME=PATH`, repeatable). */
  readonly loras?: readonly { readonly name: string; readonly path: string }[] | undefined;
  /** Adapters with a context at once (`--max-loras`, default 1): see `LoraLanes`. */
  readonly maxLoras?: number | undefined;
  /** KV tiers below the device (host, disk, object store); none asked: no block manager. */
  readonly kvbm?: KvbmConnectorOptions | undefined;
}

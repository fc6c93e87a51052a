import type {
  EmbedRequest,
  GenerateRequest,
  GenerateResponse,
  KvCosts,
  KvEvent,
  ModelCard,
  RankRequest,
} from "../protocol/index.js";

/** One document's score against its query, and the tokens the model read for the pair. */
export interface RankedPair {
  readonly score: number;
  readonly promptTokens: number;
}

/**
 * What an engine knows about itself: everything a model card holds except the served name and the
 * role, which the worker decides.
 */
export type EngineInfo = Omit<ModelCard, "name" | "role" | "engine"> & {
  readonly kind: "llamacpp" | "mocker" | "llama-server" | "vllm" | "sglang" | "trtllm";
};

/** Instantaneous load of an engine. */
export interface EngineLoad {
  readonly activeRequests: number;
  readonly waitingRequests: number;
  readonly activeKvBlocks: number;
  readonly totalKvBlocks: number;
  /** Measured prefill rate and onboarding bandwidth per tier (routers estimate prefill time from them). */
  readonly kvCosts?: KvCosts | undefined;
  /** LoRA adapters ready to run now, where the engine loads them on demand (llama.cpp's adapter contexts). */
  readonly residentLoras?: readonly string[] | undefined;
}

/** Where a prefill-only run left the prompt's KV cache. */
export type KvExport = (
  | { readonly format: "llamacpp-sequence-state"; readonly path: string; readonly bytes: number }
  | { readonly format: "modelled"; readonly bytes: number }
  /** The KV stays in the engine server, which hands it to its decode peer itself (`params` say how). */
  | { readonly format: "engine-transfer-params"; readonly params: Readonly<Record<string, unknown>>; readonly bytes: 0 }
) &
  ExportedFrom;

/**
 * An export may leave out the first tokens, which the decode worker holds already: for llama.cpp
 * the file is then a KV state suffix (src/kvbm/state-suffix.ts) rather than a sequence state.
 */
export interface ExportedFrom {
  /** The first prompt token the export holds; absent or 0: the whole prompt. */
  readonly fromToken?: number | undefined;
  /** With `fromToken`: the bytes the whole prompt's export would have taken. */
  readonly wholeBytes?: number | undefined;
}

/**
 * What a prefill-only run produced. `firstToken` is absent when generation ended at once, or, with
 * an `engine-transfer-params` export, when the engine prefills while its peer decodes (SGLang).
 */
export interface PrefillResult {
  readonly firstToken: number | undefined;
  readonly cachedTokens: number;
  /** Of `cachedTokens`, those loaded back from tiers below the device (engines that have them). */
  readonly hostCachedTokens?: number | undefined;
  readonly kv: KvExport | undefined;
}

/**
 * KV computed elsewhere that a generation starts from instead of prefilling. With `fromToken` it
 * holds the prompt from that token on and the engine puts the prefix it holds itself before it; an
 * engine that no longer holds that prefix refuses the import (retryable `TRANSFER_FAILED`).
 */
export type ImportedKv = (
  | { readonly format: "llamacpp-sequence-state"; readonly path: string; readonly firstToken: number }
  | { readonly format: "modelled"; readonly firstToken: number; readonly transferMs: number }
  /** The prefill engine's transfer parameters: the engine pulls the KV itself. */
  | { readonly format: "engine-transfer-params"; readonly params: Readonly<Record<string, unknown>> }
) & { readonly fromToken?: number | undefined };

export interface PrefillOptions {
  readonly signal: AbortSignal;
  /** Where a llama.cpp export is written. */
  readonly exportPath: string;
  /**
   * Prompt tokens the decode worker is said to hold (`Disaggregation.decodeHeldTokens`): the export
   * may start at the last block boundary at or before it, short of the prompt's last token. Default 0.
   */
  readonly decodeHeldTokens?: number | undefined;
}

export interface GenerateOptions {
  readonly signal: AbortSignal;
  /** Decode phase of a disaggregated request: the prompt's KV and first token, already computed. */
  readonly importedKv?: ImportedKv | undefined;
}

/**
 * One model executor. `generate` streams token deltas and ends with exactly one `request-end`;
 * aborting the signal stops the work and ends the stream with `finishReason: "cancelled"`.
 * Later capabilities (prefill-only execution, KV export/import) arrive as fields of the request
 * and optional methods, so callers of `generate` do not change.
 */
/**
 * LoRA adapters an engine serves beside its base model, each addressed by name
 * (`GenerateRequest.lora`), added at the start (`--lora NAME=PATH`) or at run time.
 */
export interface EngineAdapters {
  /** The adapters served now, in the order they were added. */
  names(): readonly string[];
  /** Adds an adapter from a file on this host; `flag` names where the path came from in errors. */
  add(name: string, path: string, flag: string): Promise<void>;
  /** Removes an adapter: new requests for it are refused, running ones finish. */
  remove(name: string): Promise<void>;
  /** Calls `listener` whenever an adapter is added or removed. */
  onChange(listener: () => void): () => void;
}

export interface Engine {
  readonly info: EngineInfo;
  /** LoRA adapters, where the engine serves them. */
  readonly adapters?: EngineAdapters | undefined;
  generate(request: GenerateRequest, options: GenerateOptions): AsyncIterable<GenerateResponse>;
  /**
   * Prefill phase of a disaggregated request: computes the prompt's KV and first token and exports
   * the KV (a llama.cpp state file at `exportPath`). Engines without it serve only aggregated.
   */
  prefill?(request: GenerateRequest, options: PrefillOptions): Promise<PrefillResult>;
  /**
   * Embeds each input of `request` (token ids), yielding one unit-length vector per input in input
   * order. Refuses by name (`param`) what it cannot serve: `dimensions` other than the model's own
   * size, token ids outside the vocabulary, an input longer than the embedding context. Aborting the
   * signal stops before the next input. Engines without it (the mocker) serve no embeddings.
   */
  embed?(request: EmbedRequest, options: { readonly signal: AbortSignal }): AsyncIterable<Float32Array>;
  /**
   * Scores each document of `request` against its query with the model's ranking head, one pair
   * at a time in document order. Present only where the model can rank (a reranker); refuses by
   * name token ids outside the vocabulary and a pair longer than the context.
   */
  rank?(request: RankRequest, options: { readonly signal: AbortSignal }): AsyncIterable<RankedPair>;
  /** KV events in the order the cache changed. Returns a function that stops listening. */
  onKvEvents(listener: (events: readonly KvEvent[]) => void): () => void;
  load(): EngineLoad;
  /** Everything the engine caches now, as stored events with parents first (for recovery dumps). */
  dumpKvEvents(): KvEvent[];
  /** Stops accepting work, cancels what runs, frees memory. */
  close(): Promise<void>;
}

/**
 * Where an export for a decode worker said to hold `decodeHeldTokens` of a `promptTokens`-token
 * prompt starts: the last block boundary at or before it, leaving at least the last prompt token
 * (whose cell the decode worker cannot have from a block it holds whole). 0: the whole prompt.
 */
export function exportFromToken(decodeHeldTokens: number | undefined, promptTokens: number, blockSize: number): number {
  const held = Math.max(0, Math.min(decodeHeldTokens ?? 0, promptTokens - 1));
  return Math.floor(held / blockSize) * blockSize;
}

import type { GenerateRequest, GenerateResponse, KvCosts, KvEvent, ModelCard } from "../protocol/index.js";

/**
 * What an engine knows about itself: everything a model card holds except the served name and the
 * role, which the worker decides.
 */
export type EngineInfo = Omit<ModelCard, "name" | "role" | "engine"> & { readonly kind: "llamacpp" | "mocker" };

/** Instantaneous load of an engine. */
export interface EngineLoad {
  readonly activeRequests: number;
  readonly waitingRequests: number;
  readonly activeKvBlocks: number;
  readonly totalKvBlocks: number;
  /** Measured prefill rate and onboarding bandwidth per tier (routers estimate prefill time from them). */
  readonly kvCosts?: KvCosts | undefined;
}

/** Where a prefill-only run left the prompt's KV cache. */
export type KvExport =
  | { readonly format: "llamacpp-sequence-state"; readonly path: string; readonly bytes: number }
  | { readonly format: "modelled"; readonly bytes: number };

/** What a prefill-only run produced. `firstToken` is absent when generation ended at once. */
export interface PrefillResult {
  readonly firstToken: number | undefined;
  readonly cachedTokens: number;
  /** Of `cachedTokens`, those copied back from a host tier (engines that have one). */
  readonly hostCachedTokens?: number | undefined;
  readonly kv: KvExport | undefined;
}

/** KV computed elsewhere that a generation starts from instead of prefilling. */
export type ImportedKv =
  | { readonly format: "llamacpp-sequence-state"; readonly path: string; readonly firstToken: number }
  | { readonly format: "modelled"; readonly firstToken: number; readonly transferMs: number };

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
export interface Engine {
  readonly info: EngineInfo;
  generate(request: GenerateRequest, options: GenerateOptions): AsyncIterable<GenerateResponse>;
  /**
   * Prefill phase of a disaggregated request: computes the prompt's KV and first token and exports
   * the KV (a llama.cpp state file at `exportPath`). Engines without it serve only aggregated.
   */
  prefill?(request: GenerateRequest, options: { signal: AbortSignal; exportPath: string }): Promise<PrefillResult>;
  /** KV events in the order the cache changed. Returns a function that stops listening. */
  onKvEvents(listener: (events: readonly KvEvent[]) => void): () => void;
  load(): EngineLoad;
  /** Everything the engine caches now, as stored events with parents first (for recovery dumps). */
  dumpKvEvents(): KvEvent[];
  /** Stops accepting work, cancels what runs, frees memory. */
  close(): Promise<void>;
}

import type { GenerateRequest, GenerateResponse, KvEvent, ModelCard } from "../protocol/index.js";

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
}

/**
 * One model executor. `generate` streams token deltas and ends with exactly one `request-end`;
 * aborting the signal stops the work and ends the stream with `finishReason: "cancelled"`.
 * Later capabilities (prefill-only execution, KV export/import) arrive as fields of the request
 * and optional methods, so callers of `generate` do not change.
 */
export interface Engine {
  readonly info: EngineInfo;
  generate(request: GenerateRequest, options: { signal: AbortSignal }): AsyncIterable<GenerateResponse>;
  /** KV events in the order the cache changed. Returns a function that stops listening. */
  onKvEvents(listener: (events: readonly KvEvent[]) => void): () => void;
  load(): EngineLoad;
  /** Everything the engine caches now, as stored events with parents first (for recovery dumps). */
  dumpKvEvents(): KvEvent[];
  /** Stops accepting work, cancels what runs, frees memory. */
  close(): Promise<void>;
}

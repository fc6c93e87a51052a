import type { GenerateRequest, GenerateResponse, KvEvent, TokenizerSource } from "../protocol/index.js";

/** What an engine knows about itself; the worker turns it into a model card. */
export interface EngineInfo {
  readonly kind: "llamacpp" | "mocker";
  readonly blockSize: number;
  readonly totalKvBlocks: number;
  readonly maxBatchedTokens: number;
  readonly maxSequences: number;
  readonly contextLength: number;
  readonly tokenizer: TokenizerSource;
  readonly chatTemplate?: string | undefined;
  readonly eosTokenIds: readonly number[];
  readonly bosToken?: string | undefined;
  readonly eosToken?: string | undefined;
  readonly publishesKvEvents: boolean;
}

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
  /** Stops accepting work, cancels what runs, frees memory. */
  close(): Promise<void>;
}

/** A kind of work a model serves, as `GET /v1/models` lists it. */
export type ModelKind = "chat" | "embeddings" | "rerank";

/** The role a worker plays in serving a request. */
export type WorkerRole = "aggregated" | "prefill" | "decode";

/**
 * Where a frontend finds the tokenizer for a model, without loading the weights: a GGUF's
 * vocabulary, a Hugging Face tokenizer folder (`tokenizer.json`), or the mocker's bytes. `sha256`
 * names the worker's tokenizer bundle (`readTokenizerBundle`): a frontend that cannot read `path`
 * fetches the bundle from a worker and checks it against this.
 */
export type TokenizerSource =
  | { readonly kind: "gguf"; readonly path: string; readonly sha256?: string | undefined }
  | { readonly kind: "huggingface"; readonly path: string; readonly sha256?: string | undefined }
  | { readonly kind: "bytes" };

/**
 * What a worker tells the world about the model it serves (Dynamo's Model Deployment Card).
 * Frontends build their preprocessing (template, tokenizer, limits) from it.
 */
export interface ModelCard {
  /** Served model name, as clients put it in `model`. */
  readonly name: string;
  readonly role: WorkerRole;
  /** Engine kind that serves the card: `llamacpp`, `mocker` or `llama-server`. */
  readonly engine: string;
  /** What the engine computes on: `cpu`, `cuda`, `vulkan`, `metal` (llama.cpp in process), the engine server's kind for a sidecar; absent for the mocker. */
  readonly backend?: string | undefined;
  /** CPU threads per llama.cpp context; absent where armature does not run the model itself. */
  readonly threads?: number | undefined;
  /** The engine server a sidecar worker drives (`--engine-url`); absent for in-process engines. */
  readonly engineUrl?: string | undefined;
  /** Tokens per KV block; every router and worker of one model must agree on it. */
  readonly blockSize: number;
  /** KV capacity of the worker, in blocks. */
  readonly totalKvBlocks: number;
  /** Upper bound on tokens the engine evaluates in one forward pass. */
  readonly maxBatchedTokens: number;
  /** Sequences the engine runs concurrently. */
  readonly maxSequences: number;
  /** Longest prompt plus completion one sequence can hold, in tokens. */
  readonly contextLength: number;
  readonly tokenizer: TokenizerSource;
  /** Jinja chat template (Hugging Face conventions); absent means a ChatML default. */
  readonly chatTemplate?: string | undefined;
  /** Token ids that end generation (end of sequence, end of turn). */
  readonly eosTokenIds: readonly number[];
  readonly bosToken?: string | undefined;
  readonly eosToken?: string | undefined;
  /** Whether the worker publishes KV events (the KV router needs them). */
  readonly publishesKvEvents: boolean;
  /** Bytes of KV cache per token, what a disaggregated handoff moves per prompt token. */
  readonly kvBytesPerToken?: number | undefined;
  /**
   * What the model serves: `chat` (chat, completions and the other generating routes) and, where
   * the engine computes them, `embeddings`. Absent (a worker before this field): `chat`.
   */
  readonly kinds?: readonly ModelKind[] | undefined;
  /** LoRA adapters the worker serves beside the model (clients name one as their `model`). */
  readonly loras?: readonly string[] | undefined;
}

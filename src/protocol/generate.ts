/** Sampling settings carried from the frontend to the engine. Absent fields take engine defaults. */
export interface SamplingOptions {
  /** 0 means greedy. */
  readonly temperature: number;
  readonly topP?: number | undefined;
  readonly topK?: number | undefined;
  readonly minP?: number | undefined;
  readonly seed?: number | undefined;
  readonly presencePenalty?: number | undefined;
  readonly frequencyPenalty?: number | undefined;
  readonly repetitionPenalty?: number | undefined;
}

/** A structured-output constraint enforced by the engine (grammar). */
export type ResponseConstraint =
  | { readonly type: "json_object" }
  | { readonly type: "json_schema"; readonly schema: Readonly<Record<string, unknown>> };

/** One generation request as a worker receives it: tokens in, tokens out. */
export interface GenerateRequest {
  readonly type: "generate-request";
  readonly requestId: string;
  readonly model: string;
  readonly tokenIds: readonly number[];
  readonly sampling: SamplingOptions;
  /** Tokens to generate at most. */
  readonly maxTokens: number;
  /** Keep going past end-of-sequence tokens (benchmarks). */
  readonly ignoreEos?: boolean | undefined;
  readonly constraint?: ResponseConstraint | undefined;
}

/** Why generation ended, in OpenAI terms plus the cases that never reach a client as success. */
export type FinishReason = "stop" | "length" | "cancelled" | "error";

/** Streamed from a worker: new token ids. */
export interface TokenDelta {
  readonly type: "token-delta";
  readonly tokenIds: readonly number[];
}

/** Last message of a worker stream. */
export interface RequestEnd {
  readonly type: "request-end";
  readonly finishReason: FinishReason;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens whose KV was already cached on the worker. */
  readonly cachedTokens: number;
  readonly error?: { readonly code: string; readonly message: string } | undefined;
}

export type GenerateResponse = TokenDelta | RequestEnd;

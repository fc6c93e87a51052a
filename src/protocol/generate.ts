import type { TransferDescriptor } from "./transfer-descriptors.js";

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
  /** Added to the logits of these tokens before sampling (OpenAI's `logit_bias`, -100..100). */
  readonly logitBias?: readonly TokenBiasEntry[] | undefined;
}

/** One `logit_bias` entry. */
export interface TokenBiasEntry {
  readonly token: number;
  readonly bias: number;
}

/** A structured-output constraint enforced by the engine (grammar). */
export type ResponseConstraint =
  | { readonly type: "json_object" }
  | { readonly type: "json_schema"; readonly schema: Readonly<Record<string, unknown>> }
  /**
   * A GBNF grammar over the whole answer (vLLM's `guided_regex`, `guided_choice`, `guided_grammar` or
   * their `structured_outputs` forms); `param` names the field it came from. Where it was compiled
   * from a regular expression or a list of choices, these are kept as written (`regex`, `choices`),
   * so engines with structured output of their own can be given the request's own terms.
   */
  | {
      readonly type: "grammar";
      readonly gbnf: string;
      readonly param: string;
      readonly regex?: string | undefined;
      readonly choices?: readonly string[] | undefined;
    };

/**
 * A prompt's KV cache computed by a prefill worker and waiting in its transfer agent for a decode
 * worker to pull. The prefill worker frees it when the decode worker confirms, or after `expiresInMs`.
 */
export interface KvHandoff {
  readonly id: string;
  readonly prefillWorkerId: string;
  /**
   * `llamacpp-sequence-state`: llama.cpp sequence state file bytes; `modelled`: no bytes (mocker);
   * `engine-transfer-params`: the KV stays in an engine server that moves it itself (vLLM's
   * NixlConnector), and `engineParams` is what its decode peer needs to pull it.
   */
  readonly format: "llamacpp-sequence-state" | "modelled" | "engine-transfer-params";
  /** With `engine-transfer-params`: the engine's own transfer parameters (vLLM's `kv_transfer_params`). */
  readonly engineParams?: Readonly<Record<string, unknown>> | undefined;
  /** Where the bytes are (empty for `modelled`). */
  readonly descriptors: readonly TransferDescriptor[];
  readonly bytes: number;
  /** The prefill worker's transfer agent, to notify when the bytes have arrived. */
  readonly agent: string;
  /** Prompt tokens the state covers. */
  readonly promptTokens: number;
  /**
   * The state starts at this prompt token: the prefill worker left out the first `fromToken` tokens'
   * KV because the decode worker holds them (`decodeHeldTokens`); the bytes are a KV state suffix
   * (src/kvbm/state-suffix.ts), which a decode worker that does not know suffixes refuses and
   * prefills. Absent or 0: the whole prompt's state.
   */
  readonly fromToken?: number | undefined;
  /** With `fromToken`: the bytes the whole prompt's state would have taken. */
  readonly wholeBytes?: number | undefined;
  /**
   * The first generated token, sampled by the prefill worker. Absent only for an
   * `engine-transfer-params` handoff of an engine whose prefill runs while its peer decodes
   * (SGLang): the decode server samples the first token itself.
   */
  readonly firstToken?: number | undefined;
  /** Prompt tokens the prefill worker found in its cache. */
  readonly cachedTokens: number;
  readonly expiresInMs: number;
}

/** Which half of a disaggregated request a worker is asked to do. */
export type Disaggregation =
  | {
      readonly phase: "prefill";
      /**
       * Prompt tokens that the decode worker chosen for the request holds already, on its device or
       * in its KV tiers, by the router's KV index: whole blocks, possibly stale. The prefill worker
       * may leave their KV out of the export (`KvHandoff.fromToken`). Absent: export it all.
       */
      readonly decodeHeldTokens?: number | undefined;
    }
  | { readonly phase: "decode"; readonly handoff: KvHandoff };

/** One generation request as a worker receives it: tokens in, tokens out. */
/** The largest priority magnitude a request may carry (a signed 32-bit integer, as vLLM's). */
export const PRIORITY_LIMIT = 2 ** 31 - 1;

export interface GenerateRequest {
  readonly type: "generate-request";
  readonly requestId: string;
  /** The base model, as its workers' cards name it. */
  readonly model: string;
  /**
   * The LoRA adapter the request runs with (one the worker's card lists in `loras`), which the
   * client named as its `model`; its KV blocks hash with the adapter's seed. Absent: the base model.
   */
  readonly lora?: string | undefined;
  readonly tokenIds: readonly number[];
  readonly sampling: SamplingOptions;
  /** Tokens to generate at most. */
  readonly maxTokens: number;
  /** Keep going past end-of-sequence tokens (benchmarks). */
  readonly ignoreEos?: boolean | undefined;
  readonly constraint?: ResponseConstraint | undefined;
  /** Absent: aggregated (the worker does everything). */
  readonly disaggregation?: Disaggregation | undefined;
  /**
   * Time left for the request when it was sent, in ms (`--request-timeout`); the worker cancels the
   * work when it runs out. Relative, so hosts' clocks need not agree. Absent: no deadline.
   */
  readonly timeoutMs?: number | undefined;
  /**
   * Scheduling priority (vLLM's `priority`): lower runs earlier when requests wait for a worker.
   * An integer within ±`PRIORITY_LIMIT`. Absent: 0.
   */
  readonly priority?: number | undefined;
  /**
   * Stream each token's log-probability and those of the `top` most likely tokens at its step
   * (0..20) in `TokenDelta.logprobs`. Absent: none are computed.
   */
  readonly logprobs?: { readonly top: number } | undefined;
  /** No end-of-sequence token and none of `stopTokenIds` is sampled before this many tokens. */
  readonly minTokens?: number | undefined;
  /** Tokens that end the generation (`stop`) once sampled, after `minTokens`; the token is output. */
  readonly stopTokenIds?: readonly number[] | undefined;
  /**
   * The trace the worker's spans join (W3C Trace Context: the frontend's `route` span). A malformed
   * one is dropped on arrival and counted; the request is served untraced. Absent: untraced.
   */
  readonly traceContext?: WireTraceContext | undefined;
}

/** A W3C trace context on the wire: a version 00 `traceparent` and the `tracestate` that goes with it. */
export interface WireTraceContext {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

/** Why generation ended, in OpenAI terms plus the cases that never reach a client as success. */
export type FinishReason = "stop" | "length" | "cancelled" | "error";

/** Streamed from a worker: new token ids. */
export interface TokenDelta {
  readonly type: "token-delta";
  readonly tokenIds: readonly number[];
  /** When the request asked for `logprobs`: one entry per token of `tokenIds`. */
  readonly logprobs?: readonly TokenLogprob[] | undefined;
}

/**
 * A sampled token's natural-log probability in the distribution it was drawn from (after
 * `logitBias`, penalties, temperature and truncation), and the most likely tokens of that step,
 * most likely first. `-9999` stands for a probability of 0 (as vLLM writes it).
 */
export interface TokenLogprob {
  readonly logprob: number;
  readonly top: readonly { readonly token: number; readonly logprob: number }[];
}

/** Last message of a worker stream. */
export interface RequestEnd {
  readonly type: "request-end";
  readonly finishReason: FinishReason;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens whose KV was already cached on the worker. */
  readonly cachedTokens: number;
  /** Of `cachedTokens`, those loaded back from the tiers below the worker's device (host memory; on llama.cpp workers also disk and the object store) rather than found on the device. */
  readonly hostCachedTokens?: number | undefined;
  readonly error?: { readonly code: string; readonly message: string } | undefined;
  /** Prefill phase: where the computed KV waits for the decode worker. */
  readonly kvHandoff?: KvHandoff | undefined;
  /** Decode phase: the decode worker prefilled locally because the handoff failed. */
  readonly prefilledLocally?: boolean | undefined;
  /**
   * Decode phase: how the KV came from the prefill worker (`modelled`: the mocker's estimate), and
   * the bytes it did not have to move because the decode worker held the prompt's first blocks.
   */
  readonly kvTransfer?:
    | { readonly backend: string; readonly bytes: number; readonly ms: number; readonly savedBytes?: number | undefined }
    | undefined;
}

export type GenerateResponse = TokenDelta | RequestEnd;

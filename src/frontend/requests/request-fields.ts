import { ArmatureError } from "../../protocol/index.js";
import type { Body } from "./field-checks.js";

/**
 * What a route does with each field a client may send: **honoured** (it changes what is served),
 * **accepted** (it has no effect on the output by its definition: a caller's label, a hint), or
 * **refused** unless it carries the value that asks for nothing (`tools: []`, `logprobs: false`).
 * Fields in no table are refused as OpenAI refuses them. docs/api.md is this table in prose; a test
 * walks both.
 */
export type FieldRule =
  | { readonly status: "honoured" }
  | { readonly status: "accepted"; readonly why: string }
  | { readonly status: "refused"; readonly noOp: (value: unknown) => boolean; readonly noOpText: string };

export const honoured: FieldRule = { status: "honoured" };
export const accepted = (why: string): FieldRule => ({ status: "accepted", why });
export const refusedUnless = (noOpText: string, noOp: (value: unknown) => boolean): FieldRule => ({
  status: "refused",
  noOp,
  noOpText,
});

export const absent = (v: unknown): boolean => v === undefined || v === null;
export const isFalse = (v: unknown): boolean => absent(v) || v === false;
export const emptyList = (v: unknown): boolean => absent(v) || (Array.isArray(v) && v.length === 0);
export const emptyObject = (v: unknown): boolean =>
  absent(v) || (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);

/** Fields of both completion routes: armature's sampling extensions (vLLM's names) and Dynamo's `nvext`. */
const shared: Record<string, FieldRule> = {
  model: honoured,
  stream: honoured,
  stream_options: honoured,
  temperature: honoured,
  top_p: honoured,
  frequency_penalty: honoured,
  presence_penalty: honoured,
  seed: honoured,
  stop: honoured,
  n: honoured,
  max_tokens: honoured,
  top_k: honoured,
  min_p: honoured,
  repetition_penalty: honoured,
  ignore_eos: honoured,
  min_tokens: honoured,
  stop_token_ids: honoured,
  return_tokens_as_token_ids: honoured,
  structured_outputs: honoured,
  guided_json: honoured,
  guided_regex: honoured,
  guided_choice: honoured,
  guided_grammar: honoured,
  nvext: honoured,
  user: accepted("a caller's label for abuse monitoring; it does not change the output"),
  logit_bias: honoured,
  priority: honoured,
};

/** `POST /v1/chat/completions`, every field of OpenAI's CreateChatCompletionRequest and our extensions. */
export const chatFields: Readonly<Record<string, FieldRule>> = {
  ...shared,
  messages: honoured,
  max_completion_tokens: honoured,
  response_format: honoured,
  metadata: accepted("tags for stored completions; nothing is stored, and it does not change the output"),
  safety_identifier: accepted("a caller's label for abuse monitoring; it does not change the output"),
  prompt_cache_key: accepted("a caching hint; every prompt's prefix is cached and routed to by the KV router anyway"),
  prompt_cache_retention: accepted("a caching hint; the workers' caches keep prefixes as their capacity allows"),
  prompt_cache_options: accepted("a caching hint; the workers' caches keep prefixes as their capacity allows"),
  service_tier: refusedUnless('"auto" or "default"', (v) => absent(v) || v === "auto" || v === "default"),
  store: refusedUnless("false", isFalse),
  logprobs: honoured,
  top_logprobs: honoured,
  tools: honoured,
  tool_choice: honoured,
  parallel_tool_calls: honoured,
  functions: refusedUnless("[]", emptyList),
  function_call: refusedUnless('"none"', (v) => absent(v) || v === "none"),
  modalities: refusedUnless('["text"]', (v) => absent(v) || (Array.isArray(v) && v.every((m) => m === "text"))),
  audio: refusedUnless("null", absent),
  prediction: refusedUnless("null", absent),
  reasoning_effort: refusedUnless("null", absent),
  verbosity: refusedUnless("null", absent),
  web_search_options: refusedUnless("null", absent),
  moderation: refusedUnless("null", absent),
};

/** `POST /v1/completions`, every field of OpenAI's CreateCompletionRequest and our extensions. */
export const completionFields: Readonly<Record<string, FieldRule>> = {
  ...shared,
  prompt: honoured,
  echo: honoured,
  best_of: honoured,
  logprobs: honoured,
  suffix: refusedUnless('null or ""', (v) => absent(v) || v === ""),
};

/**
 * `POST /tokenize`, every field of vLLM's TokenizeCompletionRequest (`prompt`) and TokenizeChatRequest
 * (`messages`). The served prompt carries only the special tokens its text or chat template holds,
 * so `add_special_tokens` asks for something else and is refused.
 */
export const tokenizeFields: Readonly<Record<string, FieldRule>> = {
  model: honoured,
  prompt: honoured,
  messages: honoured,
  add_generation_prompt: honoured,
  add_special_tokens: refusedUnless("false", isFalse),
  return_token_strs: refusedUnless("false", isFalse),
  continue_final_message: refusedUnless("false", isFalse),
  chat_template: refusedUnless("null", absent),
  chat_template_kwargs: refusedUnless("{}", emptyObject),
  media_io_kwargs: refusedUnless("{}", emptyObject),
  mm_processor_kwargs: refusedUnless("{}", emptyObject),
  tools: honoured,
};

/** `POST /detokenize`, every field of vLLM's DetokenizeRequest. */
export const detokenizeFields: Readonly<Record<string, FieldRule>> = {
  model: honoured,
  tokens: honoured,
};

/**
 * `POST /v1/embeddings`, every field of OpenAI's CreateEmbeddingRequest. `dimensions` is served when
 * it is the model's own embedding size; any other size is refused by the worker, naming it.
 */
export const embeddingsFields: Readonly<Record<string, FieldRule>> = {
  model: honoured,
  input: honoured,
  encoding_format: honoured,
  dimensions: honoured,
  user: accepted("a caller's label for abuse monitoring; it does not change the output"),
};

/** Fields both ranking routes share beside their texts (vLLM's pooling request fields). */
const rankingShared: Record<string, FieldRule> = {
  model: honoured,
  truncate_prompt_tokens: refusedUnless("null (nothing is truncated: a pair that does not fit is refused)", absent),
  priority: refusedUnless("0 (ranking requests do not wait in the admission queue)", (v) => absent(v) || v === 0),
  use_activation: refusedUnless("true (scores are the model's probabilities)", (v) => absent(v) || v === true),
  mm_processor_kwargs: refusedUnless("{}", emptyObject),
  user: accepted("a caller's label for abuse monitoring; it does not change the output"),
};

/** `POST /v1/rerank` (vLLM's RerankRequest, with Cohere's and Jina's `return_documents`). */
export const rerankFields: Readonly<Record<string, FieldRule>> = {
  ...rankingShared,
  query: honoured,
  documents: honoured,
  top_n: honoured,
  return_documents: honoured,
  instruction: refusedUnless("null (put it in the query)", absent),
};

/** `POST /v1/score` (vLLM's ScoreRequest). */
export const scoreFields: Readonly<Record<string, FieldRule>> = {
  ...rankingShared,
  text_1: honoured,
  text_2: honoured,
};

/**
 * Refuses, naming it, the first field `body` has that the route does not serve: an unknown one
 * (OpenAI's "Unrecognized request argument supplied"), or a known one asking for what is not built.
 */
export function refuseUnservedFields(body: Body, fields: Readonly<Record<string, FieldRule>>): void {
  for (const [name, value] of Object.entries(body)) {
    const rule = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (!rule) {
      throw new ArmatureError("REQUEST_INVALID", `Unrecognized request argument supplied: ${name}`, { param: name });
    }
    if (rule.status === "refused" && !rule.noOp(value)) {
      throw new ArmatureError(
        "NOT_SUPPORTED",
        `'${name}' is not supported by this server yet; leave it out or send ${rule.noOpText} (docs/api.md lists every field)`,
        { param: name },
      );
    }
  }
}

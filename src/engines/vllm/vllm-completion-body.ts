import { ArmatureError, type GenerateRequest } from "../../protocol/index.js";
import { samplingSeed, sharedSamplingFields } from "../engine-server/sampling-fields.js";

/**
 * The body of vLLM's OpenAI `POST /v1/completions` for a generate request: the prompt as token ids
 * (no chat template, no special tokens added), streamed with usage, the generated token ids
 * returned (`return_token_ids`, vLLM ≥ 0.10). vLLM's sampling defaults are OpenAI's (top-k -1,
 * top-p 1, min-p 0, penalties off), so each field is mapped as asked and the rest left at them;
 * vLLM's own extensions (`min_tokens`, `stop_token_ids`, `repetition_penalty`, `ignore_eos`) pass
 * through; a LoRA adapter's request names the adapter as `model`. What armature does not map yet
 * is refused by name. `transferParams`: the decode half of
 * a split request (vLLM's `kv_transfer_params`, as its prefill peer returned them).
 */
export function vllmCompletionBody(
  request: GenerateRequest,
  servedModel: string,
  transferParams?: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  if (request.logprobs) refuse("logprobs", "armature does not read vLLM's log-probabilities yet");
  const { constraint } = request;
  if (constraint?.type === "grammar") {
    refuse(
      constraint.param,
      "armature compiles it to a llama.cpp grammar, which vLLM does not take; give the schema as response_format",
    );
  }
  const seed = samplingSeed(request);
  return {
    // An adapter's request names the adapter as its model, as vLLM's clients do.
    model: request.lora ?? servedModel,
    prompt: request.tokenIds,
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    return_token_ids: true,
    ...sharedSamplingFields(request),
    ...(seed !== undefined ? { seed } : {}),
    ...(request.minTokens ? { min_tokens: request.minTokens } : {}),
    // vLLM's own structured output enforces the schema (its completions take response_format too).
    ...(constraint?.type === "json_object" ? { response_format: { type: "json_object" } } : {}),
    ...(constraint?.type === "json_schema"
      ? { response_format: { type: "json_schema", json_schema: { name: "response", schema: constraint.schema, strict: true } } }
      : {}),
    ...(transferParams ? { kv_transfer_params: transferParams } : {}),
  };
}

/**
 * The prefill half of a split request through vLLM's NixlConnector (its toy proxy's protocol): the
 * request's body for one token, not streamed, without `min_tokens`, asking the engine to keep the
 * prompt's KV for a remote decode (`do_remote_decode`); the answer's top-level `kv_transfer_params`
 * then go to the decode server with the original body.
 */
export function vllmPrefillBody(request: GenerateRequest, servedModel: string): Record<string, unknown> {
  const {
    stream: _stream,
    stream_options: _options,
    min_tokens: _min,
    ...body
  } = vllmCompletionBody({ ...request, disaggregation: undefined }, servedModel);
  return {
    ...body,
    max_tokens: 1,
    stream: false,
    kv_transfer_params: {
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    },
  };
}

function refuse(param: string, why: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by vllm workers: ${why}`, { param });
}

import { randomInt } from "node:crypto";
import { ArmatureError, type GenerateRequest } from "../../protocol/index.js";

/**
 * The body of vLLM's OpenAI `POST /v1/completions` for a generate request: the prompt as token ids
 * (no chat template, no special tokens added), streamed with usage, the generated token ids
 * returned (`return_token_ids`, vLLM ≥ 0.10). vLLM's sampling defaults are OpenAI's (top-k -1,
 * top-p 1, min-p 0, penalties off), so each field is mapped as asked and the rest left at them;
 * vLLM's own extensions (`min_tokens`, `stop_token_ids`, `repetition_penalty`, `ignore_eos`) pass
 * through. What armature does not map yet is refused by name.
 */
export function vllmCompletionBody(request: GenerateRequest, servedModel: string): Record<string, unknown> {
  if (request.logprobs) refuse("logprobs", "armature does not read vLLM's log-probabilities yet");
  if (request.constraint) {
    refuse(
      request.constraint.type === "grammar" ? request.constraint.param : "response_format",
      "structured output is not mapped to vLLM's guided decoding yet",
    );
  }
  if (request.disaggregation) refuse("disaggregation", "split prefill and decode through vLLM are not driven yet");
  const { sampling } = request;
  const sampled = sampling.temperature > 0;
  return {
    model: servedModel,
    prompt: request.tokenIds,
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    return_token_ids: true,
    temperature: sampling.temperature,
    ...(sampling.topP !== undefined ? { top_p: sampling.topP } : {}),
    ...(sampling.topK !== undefined ? { top_k: sampling.topK } : {}),
    ...(sampling.minP !== undefined ? { min_p: sampling.minP } : {}),
    ...(sampled ? { seed: sampling.seed === undefined ? randomInt(0x7fffffff) : sampling.seed } : {}),
    ...(sampling.presencePenalty !== undefined ? { presence_penalty: sampling.presencePenalty } : {}),
    ...(sampling.frequencyPenalty !== undefined ? { frequency_penalty: sampling.frequencyPenalty } : {}),
    ...(sampling.repetitionPenalty !== undefined ? { repetition_penalty: sampling.repetitionPenalty } : {}),
    ...(sampling.logitBias && sampling.logitBias.length > 0
      ? { logit_bias: Object.fromEntries(sampling.logitBias.map((entry) => [String(entry.token), entry.bias])) }
      : {}),
    ...(request.ignoreEos ? { ignore_eos: true } : {}),
    ...(request.minTokens ? { min_tokens: request.minTokens } : {}),
    ...(request.stopTokenIds && request.stopTokenIds.length > 0 ? { stop_token_ids: request.stopTokenIds } : {}),
  };
}

function refuse(param: string, why: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by vllm workers: ${why}`, { param });
}

import { randomInt } from "node:crypto";
import { ArmatureError, type GenerateRequest } from "../../protocol/index.js";

/**
 * The body of SGLang's native `POST /generate` for a generate request: the prompt as token ids
 * (`input_ids`: no chat template, no special tokens added), streamed, the request id as SGLang's
 * `rid`. SGLang's sampling defaults are top-k -1, top-p 1, min-p 0 and penalties off (its
 * `SamplingParams`), so each field is mapped as asked and the rest left at them; greedy is
 * temperature 0. What armature does not map yet is refused by name.
 */
export function sglangGenerateBody(request: GenerateRequest): Record<string, unknown> {
  if (request.logprobs) refuse("logprobs", "armature does not read SGLang's log-probabilities yet");
  const { constraint } = request;
  if (constraint?.type === "grammar") {
    refuse(
      constraint.param,
      "armature compiles it to a llama.cpp grammar, which SGLang does not take; give the schema as response_format",
    );
  }
  const { sampling } = request;
  const sampled = sampling.temperature > 0;
  return {
    input_ids: request.tokenIds,
    rid: request.requestId,
    stream: true,
    sampling_params: {
      max_new_tokens: request.maxTokens,
      temperature: sampling.temperature,
      ...(sampling.topP !== undefined ? { top_p: sampling.topP } : {}),
      ...(sampling.topK !== undefined ? { top_k: sampling.topK } : {}),
      ...(sampling.minP !== undefined ? { min_p: sampling.minP } : {}),
      ...(sampled ? { sampling_seed: sampling.seed === undefined ? randomInt(0x7fffffff) : sampling.seed } : {}),
      ...(sampling.presencePenalty !== undefined ? { presence_penalty: sampling.presencePenalty } : {}),
      ...(sampling.frequencyPenalty !== undefined ? { frequency_penalty: sampling.frequencyPenalty } : {}),
      ...(sampling.repetitionPenalty !== undefined ? { repetition_penalty: sampling.repetitionPenalty } : {}),
      ...(sampling.logitBias && sampling.logitBias.length > 0
        ? { logit_bias: Object.fromEntries(sampling.logitBias.map((entry) => [String(entry.token), entry.bias])) }
        : {}),
      ...(request.ignoreEos ? { ignore_eos: true } : {}),
      ...(request.minTokens ? { min_new_tokens: request.minTokens } : {}),
      ...(request.stopTokenIds && request.stopTokenIds.length > 0 ? { stop_token_ids: request.stopTokenIds } : {}),
      // SGLang's own structured output enforces the schema (its OpenAI adapter maps json_object so too).
      ...(constraint?.type === "json_object" ? { json_schema: '{"type": "object"}' } : {}),
      ...(constraint?.type === "json_schema" ? { json_schema: JSON.stringify(constraint.schema) } : {}),
    },
  };
}

function refuse(param: string, why: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by sglang workers: ${why}`, { param });
}

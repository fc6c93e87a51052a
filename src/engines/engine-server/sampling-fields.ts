import { randomInt } from "node:crypto";
import type { GenerateRequest } from "../../protocol/index.js";

/**
 * The sampling fields vLLM and SGLang name alike (their defaults are OpenAI's: top-k -1, top-p 1,
 * min-p 0, penalties off), each given only where the request set it; greedy is temperature 0.
 */
export function sharedSamplingFields(request: GenerateRequest): Record<string, unknown> {
  const { sampling } = request;
  return {
    temperature: sampling.temperature,
    ...(sampling.topP !== undefined ? { top_p: sampling.topP } : {}),
    ...(sampling.topK !== undefined ? { top_k: sampling.topK } : {}),
    ...(sampling.minP !== undefined ? { min_p: sampling.minP } : {}),
    ...(sampling.presencePenalty !== undefined ? { presence_penalty: sampling.presencePenalty } : {}),
    ...(sampling.frequencyPenalty !== undefined ? { frequency_penalty: sampling.frequencyPenalty } : {}),
    ...(sampling.repetitionPenalty !== undefined ? { repetition_penalty: sampling.repetitionPenalty } : {}),
    ...(sampling.logitBias && sampling.logitBias.length > 0
      ? { logit_bias: Object.fromEntries(sampling.logitBias.map((entry) => [String(entry.token), entry.bias])) }
      : {}),
    ...(request.ignoreEos ? { ignore_eos: true } : {}),
    ...(request.stopTokenIds && request.stopTokenIds.length > 0 ? { stop_token_ids: request.stopTokenIds } : {}),
  };
}

/** A sampled request's seed: the asked one, else a fresh one (so unseeded requests do not share one); none when greedy. */
export function samplingSeed(request: GenerateRequest): number | undefined {
  if (request.sampling.temperature <= 0) return undefined;
  return request.sampling.seed ?? randomInt(0x7fffffff);
}

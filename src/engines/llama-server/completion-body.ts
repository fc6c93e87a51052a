import { randomInt } from "node:crypto";
import { schemaGbnf } from "../../grammar/index.js";
import { ArmatureError, type GenerateRequest } from "../../protocol/index.js";
import { type LlamaServerAdapter, loraScales } from "./llama-server-adapters.js";

/**
 * The body of llama-server's `POST /completion` for a generate request: the prompt as token ids
 * (so llama-server adds no BOS and tokenizes nothing), streamed, the slot's cache reused
 * (`cache_prompt`), token ids returned. Every sampler llama-server would otherwise apply by its own
 * defaults (top-k 40, top-p 0.95, min-p 0.05, DRY, XTC, a repeat penalty in older builds) is set
 * to what the request asked or to off, so the tokens are what an OpenAI request means; where
 * llama-server loaded LoRA adapters, the request's (or none) is set by `lora`. What
 * llama-server cannot do is refused by name before anything is sent.
 */
export function completionBody(request: GenerateRequest, adapters: readonly LlamaServerAdapter[] = []): Record<string, unknown> {
  refuseUnsupported(request);
  const { sampling } = request;
  const sampled = sampling.temperature > 0;
  return {
    prompt: request.tokenIds,
    n_predict: request.maxTokens,
    stream: true,
    cache_prompt: true,
    return_tokens: true,
    temperature: sampling.temperature,
    top_k: sampled ? (sampling.topK ?? 0) : 0,
    top_p: sampled ? (sampling.topP ?? 1) : 1,
    min_p: sampled ? (sampling.minP ?? 0) : 0,
    typical_p: 1,
    xtc_probability: 0,
    dry_multiplier: 0,
    mirostat: 0,
    repeat_penalty: sampling.repetitionPenalty ?? 1,
    presence_penalty: sampling.presencePenalty ?? 0,
    frequency_penalty: sampling.frequencyPenalty ?? 0,
    // Unseeded sampling draws a fresh seed per request (llama-server's -1 does too), as armature's
    // own engine does; a seed asked for is taken modulo 2^32, llama.cpp's seed width.
    seed: sampled ? (sampling.seed === undefined ? randomInt(0x7fffffff) : ((sampling.seed % 2 ** 32) + 2 ** 32) % 2 ** 32) : 0,
    ...(sampling.logitBias && sampling.logitBias.length > 0
      ? { logit_bias: sampling.logitBias.map((entry) => [entry.token, entry.bias]) }
      : {}),
    ...(request.ignoreEos ? { ignore_eos: true } : {}),
    // armature's own grammar of the schema (src/grammar), so llama-server holds to what armature enforces.
    ...(request.constraint?.type === "json_schema" ? { grammar: schemaGbnf(request.constraint.schema) } : {}),
    ...(request.constraint?.type === "grammar" ? { grammar: request.constraint.gbnf } : {}),
    ...(request.constraint?.type === "json_object" ? { json_schema: {} } : {}),
    // With adapters loaded, each request says which runs: the one it names, or none.
    ...(adapters.length > 0 ? { lora: loraScales(adapters, request.lora) } : {}),
  };
}

function refuseUnsupported(request: GenerateRequest): void {
  const refuse = (param: string, why: string) => {
    throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by llama-server workers: ${why}`, { param });
  };
  if (request.logprobs) refuse("logprobs", "armature does not read llama-server's n_probs yet");
  if (request.minTokens) refuse("min_tokens", "llama-server has no minimum length");
  if (request.stopTokenIds && request.stopTokenIds.length > 0) refuse("stop_token_ids", "llama-server stops on strings only");
  if (request.disaggregation) {
    refuse("disaggregation", "a llama-server worker serves aggregated only (start it without --prefill and --decode)");
  }
}

import { randomInt } from "node:crypto";
import type { LlamaGrammarEvaluationState, SequenceEvaluateOptions, Token } from "node-llama-cpp";
import type { SamplingOptions } from "../../protocol/index.js";

/**
 * Maps OpenAI-style sampling to llama.cpp's sampler chain. Temperature 0 is greedy. OpenAI's
 * presence/frequency penalties apply to the tokens generated so far, as in the OpenAI API.
 */
export function toEvaluateOptions(
  sampling: SamplingOptions,
  generated: readonly number[],
  grammar: LlamaGrammarEvaluationState | undefined,
): SequenceEvaluateOptions {
  // Only what the request set: llama.cpp's defaults stand otherwise, and a greedy request must
  // not pay for a top-k/top-p pass over the whole vocabulary.
  const options: SequenceEvaluateOptions = { temperature: sampling.temperature };
  if (sampling.temperature > 0) {
    options.topK = sampling.topK ?? 0;
    options.topP = sampling.topP ?? 1;
    options.minP = sampling.minP ?? 0;
  }
  // Unseeded, node-llama-cpp seeds from the clock in seconds: requests started in the same second
  // (the choices of n > 1) would draw the same tokens. A seed asked for makes a request reproducible.
  // Negative and large seeds are taken modulo 2^32 (llama.cpp's seed is 32 bits; node-llama-cpp clamps negatives to 0).
  if (sampling.temperature > 0) {
    options.seed = sampling.seed === undefined ? randomInt(0x7fffffff) : ((sampling.seed % 2 ** 32) + 2 ** 32) % 2 ** 32;
  }
  if (grammar) options.grammarEvaluationState = grammar;
  const presence = sampling.presencePenalty ?? 0;
  const frequency = sampling.frequencyPenalty ?? 0;
  const repetition = sampling.repetitionPenalty ?? 1;
  if (presence !== 0 || frequency !== 0 || repetition !== 1) {
    options.repeatPenalty = {
      punishTokens: () => generated as Token[],
      penalty: repetition,
      presencePenalty: presence,
      frequencyPenalty: frequency,
    };
  }
  return options;
}

import type { LlamaContextSequence, LlamaModel, SequenceEvaluateOptions, Token, TokenBias } from "node-llama-cpp";
import type { GenerateRequest, TokenLogprob } from "../../protocol/index.js";
import { loadedLlamaBindings } from "./llama-runtime.js";

/** A token llama.cpp sampled, with its log-probabilities when the request asked for them. */
export interface SampledToken {
  readonly token: number;
  readonly logprob?: TokenLogprob | undefined;
}

/** What a probability of 0 is written as (vLLM's stand-in for -inf, which JSON cannot carry). */
export const ZERO_PROBABILITY_LOGPROB = -9999;

/**
 * Evaluates `input` and yields the tokens sampled after it. With `request.logprobs`, llama.cpp hands
 * back each step's probabilities (the whole vocabulary's, sorted; only the chosen token's when no
 * alternatives are asked for) and they become the token's `TokenLogprob`; without, nothing is
 * computed beyond the sampled token.
 */
export async function* sampledTokens(
  sequence: LlamaContextSequence,
  input: readonly number[],
  options: SequenceEvaluateOptions,
  logprobs: GenerateRequest["logprobs"],
): AsyncGenerator<SampledToken, void, void> {
  if (!logprobs) {
    for await (const token of sequence.evaluate(input as Token[], options)) yield { token };
    return;
  }
  if (logprobs.top === 0) {
    // The chosen token's probability alone: llama.cpp computes it without sending the vocabulary's.
    for await (const step of sequence.evaluateWithMetadata(input as Token[], { confidence: true }, options)) {
      yield { token: step.token, logprob: { logprob: logOf(step.confidence), top: [] } };
    }
    return;
  }
  for await (const step of sequence.evaluateWithMetadata(input as Token[], { probabilities: true }, options)) {
    yield { token: step.token, logprob: toTokenLogprob(step.probabilities, step.token, logprobs.top) };
  }
}

/** The chosen token's log-probability and the `top` most likely of `probabilities` (sorted, highest first). */
export function toTokenLogprob(probabilities: ReadonlyMap<number, number>, token: number, top: number): TokenLogprob {
  const best: { token: number; logprob: number }[] = [];
  for (const [candidate, probability] of probabilities) {
    if (best.length >= top) break;
    best.push({ token: candidate, logprob: logOf(probability) });
  }
  return { logprob: logOf(probabilities.get(token) ?? 0), top: best };
}

function logOf(probability: number): number {
  if (!(probability > 0)) return ZERO_PROBABILITY_LOGPROB;
  return Math.min(0, Math.max(ZERO_PROBABILITY_LOGPROB, Math.log(probability)));
}

/**
 * The request's `logit_bias`, with the end-of-generation tokens and `stopTokenIds` banned while
 * fewer than `minTokens` tokens are out (`generated` grows as tokens are sampled); undefined when
 * the request asks for neither. llama.cpp adds each bias to the token's logit.
 */
export function tokenBiasFor(
  model: LlamaModel,
  request: GenerateRequest,
  eogTokenIds: readonly number[],
  generated: readonly number[],
): (() => TokenBias) | undefined {
  const entries = request.sampling.logitBias ?? [];
  const minTokens = request.minTokens ?? 0;
  if (entries.length === 0 && minTokens === 0) return undefined;
  const asked = biasOf(
    model,
    entries.map((e) => [e.token, e.bias]),
  );
  if (minTokens === 0) return () => asked;
  const banned = [...eogTokenIds, ...(request.stopTokenIds ?? [])];
  const early = biasOf(model, [
    ...entries.map((e): [number, number] => [e.token, e.bias]),
    ...banned.map((t): [number, number] => [t, -Infinity]),
  ]);
  return () => (generated.length < minTokens ? early : asked);
}

/**
 * A `TokenBias` holding exactly these logit offsets. Written to its map directly: `TokenBias.set`
 * skips end-of-generation tokens, which `logit_bias` and `min_tokens` must reach.
 */
function biasOf(model: LlamaModel, entries: readonly [number, number][]): TokenBias {
  const bias = loadedLlamaBindings().TokenBias.for(model);
  const biases = (bias as unknown as { _biases: Map<number, number> })._biases;
  for (const [token, logit] of entries) biases.set(token, logit);
  return bias;
}

import type { GenerateRequest, SamplingOptions } from "../../src/protocol/index.js";

/** A greedy five-token request for the prompt [1, 2, 3], with `overrides`: what engine body tests start from. */
export function generateRequest(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return {
    type: "generate-request",
    requestId: "r",
    model: "m",
    tokenIds: [1, 2, 3],
    sampling: { temperature: 0 },
    maxTokens: 5,
    ...overrides,
  };
}

/** Every sampler set to a value no engine defaults to: what the engine body tests map field by field (add a seed and a bias). */
export const EVERY_SAMPLER: SamplingOptions = {
  temperature: 0.7,
  topP: 0.9,
  topK: 20,
  minP: 0.1,
  presencePenalty: 0.5,
  frequencyPenalty: 0.25,
  repetitionPenalty: 1.2,
};

import type { GenerateRequest } from "../../src/protocol/index.js";

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

import { ArmatureError, type GenerateRequest } from "../protocol/index.js";

/** Checks the shape of a generate request arriving over the request plane. */
export function asGenerateRequest(payload: unknown): GenerateRequest {
  const p = payload as Partial<GenerateRequest> | null;
  if (
    p === null ||
    typeof p !== "object" ||
    p.type !== "generate-request" ||
    typeof p.requestId !== "string" ||
    !Array.isArray(p.tokenIds) ||
    typeof p.maxTokens !== "number" ||
    typeof p.sampling !== "object"
  ) {
    throw new ArmatureError("REQUEST_INVALID", "worker received a malformed generate request");
  }
  return p as GenerateRequest;
}

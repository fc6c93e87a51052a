import { type CommonParams, parseCommonParams } from "./common-params.js";
import { asObject, invalid } from "./field-checks.js";
import { completionFields, refuseUnservedFields } from "./request-fields.js";

/** A legacy completion prompt: text to tokenize, or token ids used exactly as given. */
export type CompletionPrompt = { readonly text: string } | { readonly tokenIds: readonly number[] };

export interface CompletionRequest extends CommonParams {
  readonly kind: "text";
  readonly prompt: CompletionPrompt;
  readonly echo: boolean;
}

/** Validates a `POST /v1/completions` body. */
export function parseCompletionRequest(raw: unknown): CompletionRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, completionFields);
  const common = parseCommonParams(body, ["max_tokens"]);
  return { kind: "text", ...common, prompt: parsePrompt(body.prompt), echo: false };
}

/** `inBatch`: `value` came out of a one-prompt batch (`["text"]`, `[[1, 2]]`), which does not nest further. */
function parsePrompt(value: unknown, inBatch = false): CompletionPrompt {
  if (typeof value === "string") {
    if (value === "") throw invalid("prompt", "'prompt' must not be empty");
    return { text: value };
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw invalid("prompt", "'prompt' must not be empty");
    if (value.every((t) => Number.isInteger(t) && (t as number) >= 0)) return { tokenIds: value as number[] };
    if (value.length === 1 && !inBatch) return parsePrompt(value[0], true);
    throw invalid("prompt", "'prompt' must be one string or one array of token ids; batches of prompts are not supported yet");
  }
  throw invalid("prompt", "'prompt' is required: a string or an array of token ids");
}

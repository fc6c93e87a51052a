import { ArmatureError } from "../../protocol/index.js";
import { type CommonParams, parseCommonParams } from "../requests/common-params.js";
import { asObject, invalid, optionalBoolean, optionalNumber } from "../requests/field-checks.js";
import { completionFields, refuseUnservedFields } from "../requests/request-fields.js";
import { MAX_CHOICES } from "../requests/sampling-fields.js";

/** A legacy completion prompt: text to tokenize, or token ids used exactly as given. */
export type CompletionPrompt = { readonly text: string } | { readonly tokenIds: readonly number[] };

export interface CompletionRequest extends CommonParams {
  readonly kind: "text";
  /** The first prompt of `prompts`. */
  readonly prompt: CompletionPrompt;
  /** Each prompt of a batch gets `n` choices, indexed prompt × n + i. */
  readonly prompts: readonly CompletionPrompt[];
  /** The prompt's text comes before each choice's completion. */
  readonly echo: boolean;
  /** Generations per prompt of which the `n` with the highest summed log-probability are returned (≥ n). */
  readonly bestOf: number;
}

/** Validates a `POST /v1/completions` body. */
export function parseCompletionRequest(raw: unknown): CompletionRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, completionFields);
  const common = parseCommonParams(body, ["max_tokens"]);
  const prompts = parsePrompts(body.prompt);
  const top = optionalNumber(body, "logprobs", { integer: true, min: 0, max: 5 });
  const echo = optionalBoolean(body, "echo") ?? false;
  if (echo && top !== undefined) {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      "'echo' with 'logprobs' would need the prompt tokens' log-probabilities, which this server does not compute; leave one out",
      { param: "echo" },
    );
  }
  const n = common.n ?? 1;
  const bestOf = optionalNumber(body, "best_of", { integer: true, min: 1, max: 20 }) ?? n;
  if (bestOf < n) throw invalid("best_of", `'best_of' (${bestOf}) must be at least 'n' (${n})`);
  if (bestOf > n && common.stream) throw invalid("best_of", "'best_of' greater than 'n' cannot be streamed");
  if (prompts.length * bestOf > MAX_CHOICES) {
    throw invalid(bestOf > n ? "best_of" : "n", `a request may ask for at most ${MAX_CHOICES} choices (prompts × best_of)`);
  }
  const logprobs = top === undefined ? undefined : { top };
  return { kind: "text", ...common, logprobs, prompt: prompts[0] as CompletionPrompt, prompts, echo, bestOf };
}

/** A string, token ids, or a batch (non-empty list) of either; a batch's items do not nest further. */
function parsePrompts(value: unknown): CompletionPrompt[] {
  if (Array.isArray(value) && value.length > 0 && !isTokenIds(value)) {
    if (value.length > MAX_CHOICES) throw invalid("prompt", `a batch may hold at most ${MAX_CHOICES} prompts`);
    return value.map((item, i) => parsePrompt(item, `prompt[${i}]`));
  }
  return [parsePrompt(value, "prompt")];
}

function parsePrompt(value: unknown, param: string): CompletionPrompt {
  if (typeof value === "string") {
    if (value === "") throw invalid(param, `'${param}' must not be empty`);
    return { text: value };
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw invalid(param, `'${param}' must not be empty`);
    if (isTokenIds(value)) return { tokenIds: value };
  }
  throw invalid(param, `'${param}' must be a string, an array of token ids, or (at the top) a batch of either`);
}

function isTokenIds(value: readonly unknown[]): value is number[] {
  return value.every((t) => Number.isInteger(t) && (t as number) >= 0);
}

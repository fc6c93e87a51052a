import type { TokenBiasEntry } from "../../protocol/index.js";
import { asObject, type Body, invalid, optionalNumber } from "./field-checks.js";

/** Most choices one request may ask for (`n`, times the prompts of a batch): OpenAI's bound on `n`. */
export const MAX_CHOICES = 128;

/** The fields that shape sampling beyond the sampler's settings: OpenAI's `n`, `logit_bias`; vLLM's `min_tokens`, `stop_token_ids`. */
export interface SamplingFields {
  readonly n: number;
  readonly logitBias: readonly TokenBiasEntry[] | undefined;
  readonly minTokens: number | undefined;
  readonly stopTokenIds: readonly number[] | undefined;
}

/** Validates them; throws `REQUEST_INVALID` naming the field. Token ids are checked against the vocabulary later, by the model. */
export function parseSamplingFields(body: Body): SamplingFields {
  return {
    n: optionalNumber(body, "n", { integer: true, min: 1, max: MAX_CHOICES }) ?? 1,
    logitBias: parseLogitBias(body.logit_bias),
    minTokens: optionalNumber(body, "min_tokens", { integer: true, min: 0 }),
    stopTokenIds: parseTokenIdList(body.stop_token_ids, "stop_token_ids"),
  };
}

/** OpenAI's `logit_bias`: a map from token id (a string of digits) to a bias in -100..100. */
function parseLogitBias(value: unknown): readonly TokenBiasEntry[] | undefined {
  if (value === undefined || value === null) return undefined;
  const entries = Object.entries(asObject(value, "logit_bias"));
  if (entries.length === 0) return undefined;
  if (entries.length > 1024) throw invalid("logit_bias", "'logit_bias' may hold at most 1024 tokens");
  return entries.map(([key, bias]) => {
    if (!/^\d{1,10}$/.test(key)) throw invalid("logit_bias", `'logit_bias' keys must be token ids, got ${JSON.stringify(key)}`);
    if (typeof bias !== "number" || !Number.isFinite(bias) || bias < -100 || bias > 100) {
      throw invalid("logit_bias", `'logit_bias' values must be numbers from -100 to 100 (token ${key})`);
    }
    return { token: Number(key), bias };
  });
}

function parseTokenIdList(value: unknown, param: string): readonly number[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length > 1024 || !value.every((t) => Number.isInteger(t) && (t as number) >= 0)) {
    throw invalid(param, `'${param}' must be an array of at most 1024 token ids`);
  }
  return value.length === 0 ? undefined : (value as number[]);
}

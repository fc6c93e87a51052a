import { PRIORITY_LIMIT, type ResponseConstraint, type SamplingOptions } from "../../protocol/index.js";
import { MAX_STOP_LENGTH } from "../stop-matcher.js";
import { parseConstraint } from "./constraint-fields.js";
import { asObject, type Body, invalid, optionalBoolean, optionalNumber, requiredString } from "./field-checks.js";
import { parseSamplingFields } from "./sampling-fields.js";

/** Everything both completion endpoints accept besides the prompt itself. */
export interface CommonParams {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** As asked; `undefined` means "as many as the context allows". */
  readonly maxTokens: number | undefined;
  readonly sampling: SamplingOptions;
  readonly stop: readonly string[];
  readonly constraint: ResponseConstraint | undefined;
  readonly ignoreEos: boolean;
  /** `nvext.backend_instance_id`: serve on this worker. */
  readonly pinnedWorkerId: string | undefined;
  /** `nvext.router_config_override` / `nvext.agent_hints.kv_overlap_score_weight`. */
  readonly routerOverrides: { overlapWeight?: number | undefined; temperature?: number | undefined } | undefined;
  /** Choices per prompt (`n`); absent: 1. */
  readonly n?: number | undefined;
  /** vLLM's `min_tokens`: no end-of-sequence or stop token before this many. */
  readonly minTokens?: number | undefined;
  /** vLLM's `stop_token_ids`. */
  readonly stopTokenIds?: readonly number[] | undefined;
  /** Token log-probabilities asked for (chat `logprobs`/`top_logprobs`, completions `logprobs`); each route sets it. */
  readonly logprobs?: { readonly top: number } | undefined;
  /** vLLM's `return_tokens_as_token_ids`: log-probability tokens are written `token_id:<id>`. */
  readonly returnTokensAsTokenIds?: boolean | undefined;
  /** vLLM's `priority`: lower runs earlier while requests wait for a worker; absent: the key's default, else 0. */
  readonly priority?: number | undefined;
}

/** Validates the shared fields; throws `REQUEST_INVALID`/`NOT_SUPPORTED` naming the field. */
export function parseCommonParams(body: Body, maxTokensKeys: readonly string[]): CommonParams {
  const model = requiredString(body, "model");
  const stream = optionalBoolean(body, "stream") ?? false;
  const { n, logitBias, minTokens, stopTokenIds } = parseSamplingFields(body);
  let maxTokens: number | undefined;
  for (const key of maxTokensKeys) {
    const value = optionalNumber(body, key, { integer: true, min: 1 });
    if (value !== undefined) maxTokens = value;
  }
  const streamOptions = body.stream_options;
  let includeUsage = false;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!stream) throw invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    includeUsage = optionalBoolean(asObject(streamOptions, "stream_options"), "include_usage") ?? false;
  }
  const topK = optionalNumber(body, "top_k", { integer: true, min: -1 });
  const sampling: SamplingOptions = {
    temperature: optionalNumber(body, "temperature", { min: 0, max: 2 }) ?? 1,
    topP: optionalNumber(body, "top_p", { min: 0, max: 1 }),
    topK: topK === -1 ? undefined : topK,
    minP: optionalNumber(body, "min_p", { min: 0, max: 1 }),
    seed: optionalNumber(body, "seed", { integer: true }),
    presencePenalty: optionalNumber(body, "presence_penalty", { min: -2, max: 2 }),
    frequencyPenalty: optionalNumber(body, "frequency_penalty", { min: -2, max: 2 }),
    repetitionPenalty: optionalNumber(body, "repetition_penalty", { min: 0 }),
    logitBias,
  };
  return {
    model,
    stream,
    includeUsage,
    maxTokens,
    sampling,
    stop: parseStop(body.stop),
    constraint: parseConstraint(body),
    ignoreEos: optionalBoolean(body, "ignore_eos") ?? false,
    pinnedWorkerId: parseNvext(body.nvext),
    routerOverrides: parseRouterOverrides(body.nvext),
    n,
    minTokens,
    stopTokenIds,
    logprobs: undefined,
    returnTokensAsTokenIds: optionalBoolean(body, "return_tokens_as_token_ids") ?? false,
    priority: optionalNumber(body, "priority", { integer: true, min: -PRIORITY_LIMIT, max: PRIORITY_LIMIT }),
  };
}

function parseStop(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const stops = typeof value === "string" ? [value] : value;
  if (!Array.isArray(stops) || stops.length > 4 || !stops.every((s) => typeof s === "string")) {
    throw invalid("stop", "'stop' must be a string or an array of at most 4 strings");
  }
  if (stops.some((s) => s.length > MAX_STOP_LENGTH)) {
    throw invalid("stop", `each 'stop' string must be at most ${MAX_STOP_LENGTH} characters`);
  }
  return stops;
}

function parseNvext(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const nvext = asObject(value, "nvext");
  const id = nvext.backend_instance_id;
  if (id === undefined || id === null) return undefined;
  if (typeof id !== "string" || id === "")
    throw invalid("nvext.backend_instance_id", "'nvext.backend_instance_id' must be a worker id string");
  return id;
}

function parseRouterOverrides(value: unknown): CommonParams["routerOverrides"] {
  if (value === undefined || value === null) return undefined;
  const nvext = asObject(value, "nvext");
  const override =
    nvext.router_config_override === undefined ? {} : asObject(nvext.router_config_override, "nvext.router_config_override");
  const hints = nvext.agent_hints === undefined ? {} : asObject(nvext.agent_hints, "nvext.agent_hints");
  const overlapWeight =
    optionalNumber(override, "overlap_score_weight", { min: 0 }) ?? optionalNumber(hints, "kv_overlap_score_weight", { min: 0 });
  const temperature = optionalNumber(override, "router_temperature", { min: 0 });
  return overlapWeight === undefined && temperature === undefined ? undefined : { overlapWeight, temperature };
}

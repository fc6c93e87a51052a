import { ArmatureError, type GenerateRequest, type ResponseConstraint } from "../../protocol/index.js";
import { samplingSeed, sharedSamplingFields } from "../engine-server/sampling-fields.js";

/** What a request body depends on in the vLLM it goes to. */
export interface VllmServer {
  /** The model `vllm serve` serves (`/v1/models`). */
  readonly model: string;
  /** Its version (`/version`), where it said one. */
  readonly version?: string | undefined;
  /** Whether it reads `structured_outputs` (0.10.2 and later). */
  readonly structuredOutputs: boolean;
  /**
   * Whether it was started with `--scheduling-policy priority` (the worker's own
   * `--scheduling-policy priority` says so): then each request's `priority` goes with it. A vLLM
   * scheduling first come, first served refuses any priority but 0.
   */
  readonly priorityScheduling?: boolean;
}

/** Whether a vLLM of this version (`/version`'s `0.11.0`, `0.10.2rc1`, `0.10.2.dev5+g…`) reads `structured_outputs`. */
export function readsStructuredOutputs(version: string | undefined): boolean {
  const parts = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version ?? "");
  if (!parts) return false;
  const [major, minor, patch] = [Number(parts[1]), Number(parts[2]), Number(parts[3] ?? 0)];
  return major > 0 || minor > 10 || (minor === 10 && patch >= 2);
}

type GrammarConstraint = Extract<ResponseConstraint, { type: "grammar" }>;

/**
 * The body of vLLM's OpenAI `POST /v1/completions` for a generate request: the prompt as token ids
 * (no chat template, no special tokens added), streamed with usage, the generated token ids
 * returned (`return_token_ids`, vLLM ≥ 0.10). vLLM's sampling defaults are OpenAI's (top-k -1,
 * top-p 1, min-p 0, penalties off), so each field is mapped as asked and the rest left at them;
 * vLLM's own extensions (`min_tokens`, `stop_token_ids`, `repetition_penalty`, `ignore_eos`) pass
 * through; a LoRA adapter's request names the adapter as `model`. What armature does not map yet
 * is refused by name. `transferParams`: the decode half of
 * a split request (vLLM's `kv_transfer_params`, as its prefill peer returned them).
 */
export function vllmCompletionBody(
  request: GenerateRequest,
  server: VllmServer,
  transferParams?: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  if (request.logprobs) refuse("logprobs", "armature does not read vLLM's log-probabilities yet");
  const { constraint } = request;
  const seed = samplingSeed(request);
  return {
    // An adapter's request names the adapter as its model, as vLLM's clients do.
    model: request.lora ?? server.model,
    prompt: request.tokenIds,
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    return_token_ids: true,
    ...sharedSamplingFields(request),
    ...(seed !== undefined ? { seed } : {}),
    ...(request.minTokens ? { min_tokens: request.minTokens } : {}),
    // vLLM's own structured output enforces the schema (its completions take response_format too).
    ...(constraint?.type === "json_object" ? { response_format: { type: "json_object" } } : {}),
    ...(constraint?.type === "json_schema"
      ? { response_format: { type: "json_schema", json_schema: { name: "response", schema: constraint.schema, strict: true } } }
      : {}),
    ...(constraint?.type === "grammar" ? { structured_outputs: structuredOutputs(constraint, server) } : {}),
    ...(server.priorityScheduling && request.priority !== undefined ? { priority: request.priority } : {}),
    ...(transferParams ? { kv_transfer_params: transferParams } : {}),
  };
}

/**
 * The prefill half of a split request through vLLM's NixlConnector (its toy proxy's protocol): the
 * request's body for one token, not streamed, without `min_tokens`, asking the engine to keep the
 * prompt's KV for a remote decode (`do_remote_decode`); the answer's top-level `kv_transfer_params`
 * then go to the decode server with the original body.
 */
export function vllmPrefillBody(request: GenerateRequest, server: VllmServer): Record<string, unknown> {
  const {
    stream: _stream,
    stream_options: _options,
    min_tokens: _min,
    ...body
  } = vllmCompletionBody({ ...request, disaggregation: undefined }, server);
  return {
    ...body,
    max_tokens: 1,
    stream: false,
    kv_transfer_params: {
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    },
  };
}

/**
 * A regular expression or a list of choices in vLLM's own terms (`structured_outputs`, which vLLM
 * 0.12 made the only form: it ignores the `guided_*` fields without a word). A GBNF grammar is
 * refused: vLLM's grammar backends read other dialects (XGrammar's EBNF, Guidance's Lark).
 */
function structuredOutputs(constraint: GrammarConstraint, server: VllmServer): Record<string, unknown> {
  const own =
    constraint.regex !== undefined
      ? { regex: constraint.regex }
      : constraint.choices !== undefined
        ? { choice: constraint.choices }
        : undefined;
  if (own === undefined) {
    refuse(
      constraint.param,
      "vLLM's grammar backends read their own dialects, not llama.cpp's GBNF; give a regex, choices or a schema",
    );
  }
  if (!server.structuredOutputs) {
    refuse(
      constraint.param,
      `the vLLM at this worker (version ${server.version ?? "unknown"}) predates structured_outputs (0.10.2), and would ignore it`,
    );
  }
  return own;
}

function refuse(param: string, why: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by vllm workers: ${why}`, { param });
}

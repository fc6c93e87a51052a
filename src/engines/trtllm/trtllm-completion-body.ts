import { ArmatureError, type GenerateRequest } from "../../protocol/index.js";
import { samplingSeed, sharedSamplingFields } from "../engine-server/sampling-fields.js";

/** What a request body depends on in the `trtllm-serve` it goes to. */
export interface TrtllmServer {
  /** The model it serves (`/v1/models`). */
  readonly model: string;
  /** A LoRA adapter's `lora_request` (name, id, path on the engine's host), by adapter name. */
  readonly adapter: (name: string) => { readonly name: string; readonly id: number; readonly path: string } | undefined;
}

/**
 * The body of `trtllm-serve`'s OpenAI `POST /v1/completions` for a generate request: the prompt as
 * token ids (TensorRT-LLM skips its tokenizer for them), streamed with usage, and the generated
 * token ids returned instead of text (`detokenize: false`: each chunk's `token_ids` holds the ids
 * new since the last one, its `text` is empty). TensorRT-LLM's request model forbids unknown fields
 * (a 400), so only fields it defines are sent, each where the request set it; its defaults are
 * OpenAI's (top-k 0 meaning off, top-p 1, penalties off). A stop token is kept in the output
 * (`include_stop_str_in_output`), as armature's other engines keep it. What cannot be mapped is
 * refused by name.
 */
export function trtllmCompletionBody(request: GenerateRequest, server: TrtllmServer): Record<string, unknown> {
  if (request.logprobs) refuse("logprobs", "armature does not read TensorRT-LLM's log-probabilities yet");
  const { constraint } = request;
  if (constraint) {
    refuse(
      constraint.type === "grammar" ? constraint.param : "response_format",
      "TensorRT-LLM enforces a response format only when its server runs a guided_decoding_backend, and ignores it without a word otherwise; the worker cannot tell which",
    );
  }
  const seed = samplingSeed(request);
  const adapter = request.lora === undefined ? undefined : server.adapter(request.lora);
  if (request.lora !== undefined && !adapter) {
    throw new ArmatureError("MODEL_NOT_FOUND", `no adapter named '${request.lora}' is served by this trtllm worker`, {
      param: "model",
    });
  }
  return {
    model: server.model,
    prompt: request.tokenIds,
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    detokenize: false,
    ...sharedSamplingFields(request),
    ...(request.stopTokenIds && request.stopTokenIds.length > 0 ? { include_stop_str_in_output: true } : {}),
    ...(seed !== undefined ? { seed } : {}),
    ...(request.minTokens ? { min_tokens: request.minTokens } : {}),
    ...(adapter ? { lora_request: { lora_name: adapter.name, lora_int_id: adapter.id, lora_path: adapter.path } } : {}),
  };
}

function refuse(param: string, why: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by trtllm workers: ${why}`, { param });
}

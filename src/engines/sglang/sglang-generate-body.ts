import { ArmatureError, type GenerateRequest, type ResponseConstraint } from "../../protocol/index.js";
import { samplingSeed, sharedSamplingFields } from "../engine-server/sampling-fields.js";

/**
 * The body of SGLang's native `POST /generate` for a generate request: the prompt as token ids
 * (`input_ids`: no chat template, no special tokens added), streamed, the request id as SGLang's
 * `rid`. SGLang's sampling defaults are top-k -1, top-p 1, min-p 0 and penalties off (its
 * `SamplingParams`), so each field is mapped as asked and the rest left at them; greedy is
 * temperature 0; a LoRA adapter's request names it in `lora_path`. What armature does not map yet
 * is refused by name.
 */
export function sglangGenerateBody(request: GenerateRequest): Record<string, unknown> {
  if (request.logprobs) refuse("logprobs", "armature does not read SGLang's log-probabilities yet");
  const { constraint } = request;
  const seed = samplingSeed(request);
  return {
    input_ids: request.tokenIds,
    rid: request.requestId,
    stream: true,
    // An adapter's request names it as SGLang's `lora_path` (an adapter name it loaded).
    ...(request.lora === undefined ? {} : { lora_path: request.lora }),
    sampling_params: {
      max_new_tokens: request.maxTokens,
      ...sharedSamplingFields(request),
      ...(seed !== undefined ? { sampling_seed: seed } : {}),
      ...(request.minTokens ? { min_new_tokens: request.minTokens } : {}),
      // SGLang's own structured output enforces the schema (its OpenAI adapter maps json_object so too).
      ...(constraint?.type === "json_object" ? { json_schema: '{"type": "object"}' } : {}),
      ...(constraint?.type === "json_schema" ? { json_schema: JSON.stringify(constraint.schema) } : {}),
      ...(constraint?.type === "grammar" ? { regex: answerRegex(constraint) } : {}),
    },
  };
}

/**
 * A regular expression, or a list of choices as one (each choice escaped, as alternatives), for
 * SGLang's `regex`. A GBNF grammar is refused: SGLang's `ebnf` reads its grammar backend's dialect
 * (XGrammar's EBNF, Guidance's Lark), not llama.cpp's.
 */
function answerRegex(constraint: Extract<ResponseConstraint, { type: "grammar" }>): string {
  if (constraint.regex !== undefined) return constraint.regex;
  if (constraint.choices !== undefined)
    return constraint.choices.map((choice) => choice.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  refuse(
    constraint.param,
    "SGLang's grammar backends read their own dialects, not llama.cpp's GBNF; give a regex, choices or a schema",
  );
}

function refuse(param: string, why: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `${param} is not served by sglang workers: ${why}`, { param });
}
